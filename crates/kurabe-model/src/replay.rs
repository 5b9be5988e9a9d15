//! Replay of recorded traffic (`kurabe replay LOG URL`): the
//! [`ReplaySpec`] a [`crate::load::LoadSpec`] carries, the `--speed`
//! grammar, and the [`ReplaySummary`] an [`crate::http::HttpReport`]
//! carries back (what was read, replayed and skipped, and how the timing
//! held).
//!
//! Owns the field names and the speed grammar. Must not read logs (that is
//! `kurabe_http::source::replay`) or do any I/O.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to replay and how: the log, its format, the pace and the edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ReplaySpec {
    /// The access log or HAR file.
    pub log: PathBuf,
    /// `combined`, `common`, `har` or a format in nginx `log_format`
    /// syntax; default: `har` for a `.har` file, else each line as
    /// `combined`, then `common`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_format: Option<String>,
    /// Pace as a multiple of the recorded one (`--speed 200%` or `2x` is 2.0).
    #[serde(default = "one")]
    pub speed: f64,
    /// Times the recording is played (`--loop N`), at least 1.
    #[serde(default = "one_u32")]
    pub loops: u32,
    /// `REGEX:REPLACEMENT` edits of the path and query, applied in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewrite: Vec<String>,
    /// `Name: value` headers that replace recorded ones of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_header: Vec<String>,
    /// Only requests whose recorded path and query match one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_url: Vec<String>,
    /// No request whose recorded path and query matches one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_url: Vec<String>,
}

fn one() -> f64 {
    1.0
}

fn one_u32() -> u32 {
    1
}

impl ReplaySpec {
    /// Replay `log` once at the recorded pace, unedited.
    pub fn of(log: impl Into<PathBuf>) -> ReplaySpec {
        ReplaySpec {
            log: log.into(),
            log_format: None,
            speed: 1.0,
            loops: 1,
            rewrite: Vec::new(),
            set_header: Vec::new(),
            allow_url: Vec::new(),
            deny_url: Vec::new(),
        }
    }
}

/// The fastest pace `--speed` accepts, as a multiple.
pub const MAX_SPEED: f64 = 10_000.0;

/// `--speed`: `200%` (GoReplay's spelling) or `2x` as 2.0. A bare number
/// is refused: `2` could mean either.
pub fn parse_speed(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(p) = t.strip_suffix('%') {
        (p, 0.01)
    } else if let Some(x) = t.strip_suffix(['x', 'X']) {
        (x, 1.0)
    } else {
        return Err(format!(
            "'{s}': write the pace as a percentage or a multiple, e.g. 200% or 2x (50% or 0.5x is half speed)"
        ));
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v * scale > 0.0 && v * scale <= MAX_SPEED => Ok(v * scale),
        _ => Err(format!(
            "'{s}': a speed above 0 and at most {MAX_SPEED}x, e.g. 200% or 2x"
        )),
    }
}

/// What a replay read, sent and skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ReplaySummary {
    /// The log as given.
    pub log: String,
    /// The format it was read in (`combined or common`, `har`, …).
    pub log_format: String,
    /// What a place in the log is: `line` or `entry` (HAR).
    pub unit: String,
    /// Lines (or HAR entries) read, blank lines not counted.
    pub lines_read: u64,
    /// Requests of the recording that are replayed, per loop.
    pub replayable: u64,
    /// Requests scheduled over all loops (`replayable × loops`).
    pub scheduled: u64,
    /// Skipped requests by reason, with the first few places.
    pub skipped: Vec<ReplaySkipped>,
    /// Times the recording was played.
    pub loops: u32,
    /// Pace as a multiple of the recorded one.
    pub speed: f64,
    /// From the first recorded request's start to the last's, seconds.
    pub recorded_duration_s: f64,
    /// What the schedule asked for: from the first send to the last over
    /// all loops at `speed`, seconds.
    pub scheduled_duration_s: f64,
}

/// Requests skipped for one reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ReplaySkipped {
    /// `other_format`, `malformed`, `no_body`, `connect`, `not_http`,
    /// `not_allowed` or `denied`.
    pub reason: String,
    /// The reason, for people.
    pub text: String,
    /// How many.
    pub count: u64,
    /// The first few.
    pub first: Vec<ReplayPlace>,
}

/// One skipped request: where it is and what it said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ReplayPlace {
    /// Its line (or HAR entry), 1-based.
    pub place: u64,
    /// The start of the line (or the entry's method and URL).
    pub excerpt: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_is_a_percentage_or_a_multiple() {
        assert_eq!(parse_speed("200%"), Ok(2.0));
        assert_eq!(parse_speed("2x"), Ok(2.0));
        assert_eq!(parse_speed("0.5X"), Ok(0.5));
        assert_eq!(parse_speed("50%"), Ok(0.5));
        for bad in ["2", "0%", "-1x", "x", "nan%", "20000x"] {
            assert!(parse_speed(bad).is_err(), "{bad}");
        }
        assert!(parse_speed("2").unwrap_err().contains("200% or 2x"));
    }

    #[test]
    fn a_spec_reads_with_defaults() {
        let s: ReplaySpec = toml::from_str("log = \"a.log\"").unwrap();
        assert_eq!(s, ReplaySpec::of("a.log"));
    }
}
