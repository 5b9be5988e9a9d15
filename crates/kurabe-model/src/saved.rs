//! What a saved single result holds: [`SavedRecord`], one variant per
//! [`ResultKind`], each the typed record that command prints with
//! `--format json` (`kurabe http` an [`HttpReport`], `kurabe watch` a
//! [`WatchReport`], …).
//!
//! Owns the kinds of saved results ([`ResultKind`]) and the shape of
//! `SavedResult::record` as the commands save it, the
//! store keeps it and the reports read it, and the one reading of a stored
//! record ([`SavedRecord::read`]). Must not do I/O: the store reads the
//! rows, the reports render them.
//!
//! The store keeps the kind in its own column and the record as the
//! command's JSON, untagged, so the JSON users see (`results show`,
//! `results export`) is the record as the command printed it. A record
//! that does not read back into its kind's type *exactly* (a shape from
//! another version, a `results save --kind` file with fields of its own)
//! is kept as it was read in [`SavedRecord::Unrecognised`] and written
//! back unchanged: the store never loses what it holds.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::HttpReport;
use crate::noise::NoiseReport;
use crate::probe::{MemReport, WatchReport};
use crate::system::SystemReport;

/// Kind of a saved single result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// `kurabe http`.
    Http,
    /// `kurabe watch`.
    Watch,
    /// `kurabe mem`.
    Mem,
    /// `kurabe system`.
    System,
    /// An imported UnixBench text report.
    Unixbench,
    /// `kurabe noise`.
    Noise,
}

impl ResultKind {
    /// Every kind, in the order `kurabe results save --kind` lists them.
    pub const ALL: [ResultKind; 6] = [
        ResultKind::Http,
        ResultKind::Watch,
        ResultKind::Mem,
        ResultKind::System,
        ResultKind::Unixbench,
        ResultKind::Noise,
    ];

    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultKind::Http => "http",
            ResultKind::Watch => "watch",
            ResultKind::Mem => "mem",
            ResultKind::System => "system",
            ResultKind::Unixbench => "unixbench",
            ResultKind::Noise => "noise",
        }
    }

    /// The stored word back; `None` for a word this version does not know.
    pub fn parse(s: &str) -> Option<ResultKind> {
        Some(match s {
            "http" => ResultKind::Http,
            "watch" => ResultKind::Watch,
            "mem" => ResultKind::Mem,
            "system" => ResultKind::System,
            "unixbench" => ResultKind::Unixbench,
            "noise" => ResultKind::Noise,
            _ => return None,
        })
    }
}

/// A saved result's record, by the command that made it.
#[derive(Debug, Clone, PartialEq)]
pub enum SavedRecord {
    /// `kurabe http --save`.
    Http(Box<HttpReport>),
    /// `kurabe watch --save`.
    Watch(Box<WatchReport>),
    /// `kurabe mem --save`.
    Mem(Box<MemReport>),
    /// `kurabe system --save`.
    System(Box<SystemReport>),
    /// `kurabe system import --save`: a UnixBench text report, read.
    Unixbench(Box<SystemReport>),
    /// `kurabe noise`: a workload's noise, measured A/A.
    Noise(Box<NoiseReport>),
    /// A record its kind's type does not take whole (written by another
    /// version, or saved from a file by `results save`), kept as read.
    Unrecognised(ResultKind, Value),
}

impl SavedRecord {
    /// The command that made it.
    pub fn kind(&self) -> ResultKind {
        match self {
            SavedRecord::Http(_) => ResultKind::Http,
            SavedRecord::Watch(_) => ResultKind::Watch,
            SavedRecord::Mem(_) => ResultKind::Mem,
            SavedRecord::System(_) => ResultKind::System,
            SavedRecord::Unixbench(_) => ResultKind::Unixbench,
            SavedRecord::Noise(_) => ResultKind::Noise,
            SavedRecord::Unrecognised(kind, _) => *kind,
        }
    }

    /// A stored record of `kind`: its kind's type when the JSON reads into
    /// it and writes back as the same JSON, else kept as it is.
    pub fn read(kind: ResultKind, value: Value) -> SavedRecord {
        let typed = match kind {
            ResultKind::Http => exact(&value).map(SavedRecord::Http),
            ResultKind::Watch => exact(&value).map(SavedRecord::Watch),
            ResultKind::Mem => exact(&value).map(SavedRecord::Mem),
            ResultKind::System => exact(&value).map(SavedRecord::System),
            ResultKind::Unixbench => exact(&value).map(SavedRecord::Unixbench),
            ResultKind::Noise => exact(&value).map(SavedRecord::Noise),
        };
        typed.unwrap_or(SavedRecord::Unrecognised(kind, value))
    }

    /// The record as JSON, as the command printed it (keys sorted, as the
    /// store has always shown them).
    pub fn to_value(&self) -> Value {
        let value = match self {
            SavedRecord::Http(r) => serde_json::to_value(r),
            SavedRecord::Watch(r) => serde_json::to_value(r),
            SavedRecord::Mem(r) => serde_json::to_value(r),
            SavedRecord::System(r) | SavedRecord::Unixbench(r) => serde_json::to_value(r),
            SavedRecord::Noise(r) => serde_json::to_value(r),
            SavedRecord::Unrecognised(_, v) => return v.clone(),
        };
        value.expect("saved records always serialise")
    }

    /// The HTTP report, for an `http` result this version reads.
    pub fn http(&self) -> Option<&HttpReport> {
        match self {
            SavedRecord::Http(r) => Some(r),
            _ => None,
        }
    }

    /// True when the command was stopped (Ctrl-C) before it finished and
    /// saved what it had: an interrupted `http` load or `system` run.
    pub fn interrupted(&self) -> bool {
        match self {
            SavedRecord::Http(r) => r.interrupted,
            SavedRecord::System(r) | SavedRecord::Unixbench(r) => r.interrupted,
            SavedRecord::Watch(_)
            | SavedRecord::Mem(_)
            | SavedRecord::Noise(_)
            | SavedRecord::Unrecognised(..) => false,
        }
    }
}

/// `value` as a `T`, when it writes back as exactly `value`.
fn exact<T: DeserializeOwned + Serialize>(value: &Value) -> Option<Box<T>> {
    let typed: T = serde_json::from_value(value.clone()).ok()?;
    let back = serde_json::to_value(&typed).ok()?;
    (back == *value).then(|| Box::new(typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of its kind's shape reads typed and writes back the same.
    #[test]
    fn a_record_of_its_kinds_shape_reads_typed() {
        let report = HttpReport {
            complete_requests: 7,
            interrupted: true,
            ..Default::default()
        };
        let value = serde_json::to_value(&report).unwrap();
        let read = SavedRecord::read(ResultKind::Http, value.clone());
        assert_eq!(read.http().map(|h| h.complete_requests), Some(7));
        assert!(read.interrupted());
        assert_eq!((read.kind(), read.to_value()), (ResultKind::Http, value));
    }

    /// A field the type does not know (another version's, a hand-made
    /// file's) keeps the whole record as it was: nothing is dropped.
    #[test]
    fn a_record_with_a_field_of_its_own_is_kept_whole() {
        let mut value = serde_json::to_value(HttpReport::default()).unwrap();
        value["added_later"] = serde_json::json!([1, 2]);
        let read = SavedRecord::read(ResultKind::Http, value.clone());
        assert_eq!(
            read,
            SavedRecord::Unrecognised(ResultKind::Http, value.clone())
        );
        assert_eq!((read.kind(), read.to_value()), (ResultKind::Http, value));
        assert!(read.http().is_none() && !read.interrupted());
        let mem = SavedRecord::read(ResultKind::Mem, serde_json::json!({ "used_bytes": 1 }));
        assert!(matches!(mem, SavedRecord::Unrecognised(ResultKind::Mem, _)));
    }
}
