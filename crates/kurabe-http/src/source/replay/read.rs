//! A [`LoadSpec`]'s `replay` read and checked: the log opened and read in
//! its format ([`crate::source::replay`]), the edits applied, and the timeline
//! the open-model schedule follows (request `i` of the run is recorded
//! request `i mod n` of loop `i / n`, intended at `(loop · period +
//! offset) / speed`), before any request; every setting that needs
//! nothing of the log (`early`) before the log is opened.
//!
//! Owns the choice of reader (`.har` or `log_format = "har"`: HAR; a
//! named or nginx-syntax format: that one; else each line as `combined`,
//! then `common`), the rule that a replay with nothing to send is an
//! error (exit 2: "no line is in the format" when none parsed), and the
//! loop period: the recording's span plus one mean gap between its
//! requests (1 s for a single request), so a loop's first request does
//! not land on the previous loop's last. Must not send anything.

use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use kurabe_model::load::LoadSpec;
use kurabe_model::replay::{ReplayPlace, ReplaySkipped, ReplaySpec, ReplaySummary, MAX_SPEED};

use crate::load::SpecError;
use crate::request::Names;
use crate::source::replay::edit::Edits;
use crate::source::replay::format::LogFormat;
use crate::source::replay::log::Formats;
use crate::source::replay::{har, log, Recording, Replay, Skip};
use crate::tags::Labels;

/// `replay`'s requests tagged by the run's names and checks (`group`
/// folds their paths).
pub(crate) fn tagged(
    mut replay: Replay,
    labels: &mut Labels,
    n: &Names,
) -> Result<Replay, SpecError> {
    let none: &[&str] = &[];
    replay.tags = replay
        .requests
        .iter()
        .map(|q| labels.tag(&q.method, &q.target, None, none))
        .collect::<Result<_, _>>()
        .map_err(|e| SpecError::Invalid(format!("{} {e}", n.checks)))?;
    Ok(replay)
}

/// Every check of a replay's own settings that needs nothing of the log
/// (which can be large, or a pipe whose writer has not written yet),
/// made before it is opened: the settings a replay replaces, the speed,
/// the loops, the edits, the log format (the load's other settings are
/// `resolve`'s). The edits and the reader, for the log's read.
pub(crate) fn early(
    spec: &LoadSpec,
    r: &ReplaySpec,
    n: &Names,
) -> Result<(Edits, Option<Formats>), SpecError> {
    let clash = [
        (spec.rate.is_some(), n.rate),
        (spec.requests.is_some(), n.requests),
        (spec.warmup.is_some(), n.warmup),
        (spec.method.is_some(), n.method),
        (spec.body_file.is_some(), n.body_file),
        (spec.body_base64.is_some(), n.body_base64),
        (spec.pipeline > 1, n.pipeline),
        (
            spec.targets.is_some() || spec.targets_text.is_some(),
            n.targets,
        ),
        (!spec.stages.is_empty(), n.stages),
    ];
    if let Some((_, what)) = clash.iter().find(|(given, _)| *given) {
        return Err(SpecError::Invalid(format!(
            "{what} with a replay: the recording gives the requests, their methods, bodies and times (one request per connection at a time over HTTP/1.1); drop {what}"
        )));
    }
    let edits = settings(r)?;
    let reader = reader(&r.log, r.log_format.as_deref())?;
    Ok((edits, reader))
}

/// Read and check `spec` (a load's replay is read by `super::resolve`,
/// after the whole spec's check).
#[cfg(test)]
fn read(spec: &ReplaySpec) -> Result<Replay, SpecError> {
    let edits = settings(spec)?;
    let reader = reader(&spec.log, spec.log_format.as_deref())?;
    read_with(spec, &edits, reader, &Default::default())
}

/// `spec`'s speed, loops and edits checked; the edits.
fn settings(spec: &ReplaySpec) -> Result<Edits, SpecError> {
    if !(spec.speed > 0.0 && spec.speed <= MAX_SPEED) {
        return Err(SpecError::Invalid(format!(
            "--speed {}: a speed above 0 and at most {MAX_SPEED}x, e.g. 200% or 2x",
            spec.speed
        )));
    }
    if spec.loops == 0 {
        return Err(SpecError::Invalid(
            "--loop 0: play the recording at least once (--loop 1, the default)".to_owned(),
        ));
    }
    Edits::parse(
        &spec.allow_url,
        &spec.deny_url,
        &spec.rewrite,
        &spec.set_header,
    )
    .map_err(|e| SpecError::Invalid(e.to_string()))
}

/// The log of `spec` read with `reader` ([`reader`]'s) and `edits`; the
/// read given up once `stop` is set (within a block of the file).
pub(crate) fn read_with(
    spec: &ReplaySpec,
    edits: &Edits,
    reader: Option<Formats>,
    stop: &Arc<AtomicBool>,
) -> Result<Replay, SpecError> {
    let name = spec.log.display().to_string();
    let (format_name, mut rec) = read_recording(&spec.log, reader, &name, stop)?;
    let mut kept = Vec::with_capacity(rec.requests.len());
    for mut r in std::mem::take(&mut rec.requests) {
        let excerpt = format!("{} {}", r.method, r.target);
        match edits.apply(&mut r) {
            Ok(()) => kept.push(r),
            Err(why) => rec.tally.skip(why, r.place, &excerpt),
        }
    }
    rec.requests = kept;
    if rec.requests.is_empty() {
        return Err(SpecError::Invalid(nothing_to_replay(
            &name,
            &format_name,
            &rec,
        )));
    }
    Ok(timeline(rec, spec, name, format_name))
}

/// The reader of the log at `path` in `format`: `None` for HAR (`har`,
/// or a `.har` file without a format), else the log formats to try.
fn reader(path: &Path, format: Option<&str>) -> Result<Option<Formats>, SpecError> {
    let is_har = match format {
        Some(f) => f == "har",
        None => path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("har")),
    };
    Ok(match format {
        _ if is_har => None,
        None => Some(Formats::auto()),
        Some(f) => Some(
            LogFormat::parse(f)
                .map_err(|e| SpecError::Invalid(e.to_string()))
                .and_then(|f| Formats::one(f).map_err(|e| SpecError::Invalid(e.to_string())))?,
        ),
    })
}

/// The log read with `formats` ([`reader`]'s), each block read given up
/// once `stop` is set; the format's name for the report.
fn read_recording(
    path: &Path,
    formats: Option<Formats>,
    name: &str,
    stop: &Arc<AtomicBool>,
) -> Result<(String, Recording), SpecError> {
    let file = kurabe_input::open(path, crate::load::files::log())?
        .shared()
        .stopping_on(Arc::clone(stop))
        .part();
    match formats {
        None => har::read(file, name)
            .map(|r| ("har".to_owned(), r))
            .map_err(|e| SpecError::Invalid(e.to_string())),
        Some(f) => log::read(BufReader::with_capacity(64 * 1024, file), name, &f)
            .map(|r| (f.name(), r))
            .map_err(|e| SpecError::Invalid(e.to_string())),
    }
}

/// The one-line error of a replay with nothing to send.
fn nothing_to_replay(name: &str, format: &str, rec: &Recording) -> String {
    let t = &rec.tally;
    if t.read == 0 {
        return format!("{name}: the log is empty: nothing to replay");
    }
    if t.count(Skip::OtherFormat) == t.read {
        let (place, excerpt) = &t.skipped[0].first[0];
        return format!(
            "{name}:{place}: no {} is in the {format} log format (this one starts '{}'): give --log-format (combined, common, har, or the server's log_format text)",
            rec.unit,
            crate::source::replay::format::clip(excerpt, 60)
        );
    }
    let reasons: Vec<String> = t
        .skipped
        .iter()
        .map(|s| {
            format!(
                "{} {} (first at {} {})",
                s.count,
                s.reason.text(),
                rec.unit,
                s.first[0].0
            )
        })
        .collect();
    format!(
        "{name}: nothing to replay: {} {}s read, all skipped: {}",
        t.read,
        rec.unit,
        reasons.join(", ")
    )
}

fn timeline(rec: Recording, spec: &ReplaySpec, log: String, log_format: String) -> Replay {
    let first = rec.requests[0].at_us;
    let offsets_us: Vec<u64> = rec
        .requests
        .iter()
        .map(|r| (r.at_us - first) as u64)
        .collect();
    let n = offsets_us.len() as u64;
    let span_us = *offsets_us.last().unwrap_or(&0);
    let period_us = if n > 1 {
        span_us + span_us / (n - 1)
    } else {
        1_000_000
    };
    let scale = |us: u64| (us as f64 * 1000.0 / spec.speed) as u64;
    let offsets_ns: Vec<u64> = offsets_us.iter().map(|&o| scale(o)).collect();
    let period_ns = scale(period_us).max(1);
    let last = offsets_ns[offsets_ns.len() - 1];
    let scheduled_ns = u64::from(spec.loops - 1)
        .saturating_mul(period_ns)
        .saturating_add(last);
    let summary = ReplaySummary {
        log,
        log_format,
        unit: rec.unit.to_owned(),
        lines_read: rec.tally.read,
        replayable: n,
        scheduled: n * u64::from(spec.loops),
        skipped: rec
            .tally
            .skipped
            .iter()
            .map(|s| ReplaySkipped {
                reason: s.reason.key().to_owned(),
                text: s.reason.text().to_owned(),
                count: s.count,
                first: s
                    .first
                    .iter()
                    .map(|(place, excerpt)| ReplayPlace {
                        place: *place,
                        excerpt: excerpt.clone(),
                    })
                    .collect(),
            })
            .collect(),
        loops: spec.loops,
        speed: spec.speed,
        recorded_duration_s: span_us as f64 / 1e6,
        scheduled_duration_s: scheduled_ns as f64 / 1e9,
    };
    Replay {
        requests: rec.requests,
        offsets_ns,
        period_ns,
        loops: spec.loops,
        summary,
        tags: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_file(text: &str, ext: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("access.{ext}"));
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    const LOG: &str = "\
127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"-\"
127.0.0.1 - - [02/Dec/2026:04:30:01 +0000] \"GET /admin HTTP/1.1\" 200 1 \"-\" \"-\"
127.0.0.1 - - [02/Dec/2026:04:30:02 +0000] \"POST /b HTTP/1.1\" 200 1 \"-\" \"-\"
127.0.0.1 - - [02/Dec/2026:04:30:04 +0000] \"GET /c?x HTTP/1.1\" 200 1 \"-\" \"-\"
";

    #[test]
    fn the_timeline_loops_with_one_mean_gap_and_scales_by_speed() {
        let (_d, p) = log_file(LOG, "log");
        let spec = ReplaySpec {
            speed: 2.0,
            loops: 2,
            deny_url: vec!["^/admin".into()],
            ..ReplaySpec::of(&p)
        };
        let r = read(&spec).unwrap();
        let targets: Vec<&str> = r.requests.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(targets, ["/a", "/c?x"]);
        // Recorded 0 s and 4 s; period 4 + 4 s; at 2x: 0, 2, then 4, 6 s.
        let s = 1_000_000_000;
        assert_eq!(
            (0..5).map(|i| r.at(i)).collect::<Vec<_>>(),
            [Some(0), Some(2 * s), Some(4 * s), Some(6 * s), None]
        );
        assert_eq!(r.total(), 4);
        let sum = &r.summary;
        assert_eq!((sum.lines_read, sum.replayable, sum.scheduled), (4, 2, 4));
        assert_eq!(
            (sum.recorded_duration_s, sum.scheduled_duration_s),
            (4.0, 6.0)
        );
        let reasons: Vec<(&str, u64)> = sum
            .skipped
            .iter()
            .map(|s| (s.reason.as_str(), s.count))
            .collect();
        assert_eq!(reasons, [("no_body", 1), ("denied", 1)]);
        assert_eq!(sum.skipped[1].first[0].place, 2);
        assert_eq!(sum.log_format, "combined or common");
    }

    #[test]
    fn nothing_to_replay_is_one_line_saying_why() {
        let (_d, p) = log_file("junk\nmore junk\n", "log");
        let e = read(&ReplaySpec::of(&p)).unwrap_err().to_string();
        assert!(e.ends_with(
            "access.log:1: no line is in the combined or common log format (this one starts 'junk'): give --log-format (combined, common, har, or the server's log_format text)"
        ), "{e}");
        let (_d, p) = log_file(LOG, "log");
        let e = read(&ReplaySpec {
            allow_url: vec!["^/none".into()],
            ..ReplaySpec::of(&p)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("nothing to replay: 4 lines read, all skipped: 1 body not in the log (first at line 3), 3 not matched by --allow-url (first at line 1)"), "{e}");
        let (_d, p) = log_file("not json", "har");
        let e = read(&ReplaySpec::of(&p)).unwrap_err().to_string();
        assert!(
            e.contains("access.har: not a HAR 1.2 file (expected"),
            "{e}"
        );
        let e = read(&ReplaySpec::of("/nonexistent/x.log"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read the log '/nonexistent/x.log': check the path ("),
            "{e}"
        );
        let e = read(&ReplaySpec {
            loops: 0,
            ..ReplaySpec::of(&p)
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--loop 0"), "{e}");
    }

    /// `--loop` takes any u32: the schedule of a day's log played
    /// 4 294 967 295 times is past u64 nanoseconds, saturated (it
    /// overflowed: a panic in a debug build, in a release build a loop
    /// that wrapped to early times and sent at once).
    #[test]
    fn the_most_loops_of_a_long_log_saturate_the_schedule() {
        let (_d, p) = log_file(LOG, "log");
        let r = read(&ReplaySpec {
            loops: u32::MAX,
            ..ReplaySpec::of(&p)
        })
        .unwrap();
        let late = (r.total() - 1, r.at(r.total() - 1));
        // 3 requests (the POST has no body), at 0, 1 and 4 s: a 6 s loop.
        assert_eq!(late, (3 * u64::from(u32::MAX) - 1, Some(u64::MAX)));
        assert_eq!(
            r.at(3),
            Some(6_000_000_000),
            "the second loop: 4 s + 2 s on"
        );
        assert_eq!(r.summary.scheduled_duration_s, u64::MAX as f64 / 1e9);
    }

    #[test]
    fn one_request_loops_every_second() {
        let (_d, p) = log_file(&LOG[..LOG.find('\n').unwrap() + 1], "log");
        let r = read(&ReplaySpec {
            loops: 3,
            ..ReplaySpec::of(&p)
        })
        .unwrap();
        assert_eq!(r.at(2), Some(2_000_000_000));
    }
}
