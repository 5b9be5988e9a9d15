//! The words of every [`Notice`]: the lines kurabe writes on stderr beside
//! its report ("kurabe: note: …", "saved as …", "wrote …").
//!
//! Owns these sentences, so a message reads the same from every command.
//! Must not print: the binary writes the line where it belongs.

use std::path::Path;

use kurabe_model::http::ErrorBucket;
use kurabe_model::notice::{Added, LoadFailure, Notice};

/// The line (or lines, without the final newline) that tells `notice`.
pub fn line(notice: &Notice) -> String {
    match notice {
        Notice::NoListener { port } => note(&format!("no process of this machine found listening on port {port}; server metrics off (use --server-pid to name it)")),
        Notice::ListenerHidden { port } => note(&format!("port {port} is listening but its process is not visible (another user's process?); server metrics off (run as that user or as root, or name it with --server-pid)")),
        Notice::ServerMetricsOff { why } => note(&format!("server metrics off: {why}")),
        Notice::ServerExited { pid } => note(&format!("the server process {pid} exited during the run; its figures cover the time it was alive")),
        Notice::HardwareOff { why } => note(&crate::words::hardware_off(*why)),
        Notice::ProfileOff { why } => note(&crate::words::profile_off(why, "--profile")),
        Notice::ProfileUserOnly { paranoid } => note(&crate::words::profile_user_only(*paranoid)),
        Notice::ServerSkipped { note: text } => note(&format!("server metrics: {text}")),
        Notice::Note { text } => note(text),
        Notice::NamesFolded { kept, row } => note(&format!("more than {kept} request names: the breakdown has a row for each of the first {kept} and counts the rest together as '{row}'; the totals count every request")),
        Notice::NotWritten { flag } => note(&format!("{flag} file not written: no request got a response")),
        Notice::ServingMetrics { addr } => format!("kurabe: serving Prometheus metrics at http://{addr}/metrics"),
        Notice::SavedResult { id, label } => format!("kurabe: saved as {id} ('{label}'); see `kurabe results show {id}`"),
        Notice::SavedExperiment { id } => format!("kurabe: saved as {id}; see `kurabe report {id}`"),
        Notice::Wrote { path } => format!("wrote {}", path.display()),
        Notice::Exported { entries, path } => format!("exported {entries} entries to {}", path.display()),
        Notice::ManPages { pages, dir } => format!("kurabe: {pages} man page(s) in {}", dir.display()),
        Notice::Site { plans, dir, written, unchanged } => site(*plans, dir, (*written, *unchanged)),
        Notice::ServeCertificate { path } => format!("kurabe serve: HTTP/3 with a self-signed certificate for localhost, 127.0.0.1 and ::1; trust it with --cacert {}", path.display()),
        Notice::ServeStopped { requests } => format!("kurabe serve: stopped after {requests} requests"),
        Notice::ThresholdsFailed { failed, of } => thresholds_failed(failed, *of),
        Notice::VariantThresholdsFailed { failed, of } => variant_thresholds_failed(failed, *of),
        Notice::NoRoundSucceeded { urls } => format!("kurabe: no round succeeded for {}", urls.join(", ")),
        Notice::Interrupted => "kurabe: interrupted".to_owned(),
        Notice::SystemInterrupted => "kurabe: interrupted; the report holds the tests that finished".to_owned(),
        Notice::NoiseWorkloadFailed { why } => format!("kurabe: the workload failed, so its noise cannot be measured: {why}"),
        Notice::ExitingAtOnce { grace_s: Some(grace) } => format!("kurabe: not stopped within {grace} s of the signal, exiting without waiting"),
        Notice::ExitingAtOnce { grace_s: None } => "kurabe: second signal, exiting without waiting".to_owned(),
        Notice::CommandFailed { why, suggest_ignore } => command_failed(why, *suggest_ignore),
        Notice::LoadFailed(failure) => format!("kurabe: {}", load_failed(failure)),
    }
}

/// Why a load failed as a whole, naming each failure kind with its first
/// error and count.
fn load_failed(failure: &LoadFailure) -> String {
    match failure {
        LoadFailure::NothingEnded => {
            "no request got a complete response (none ended before the run stopped)".to_owned()
        }
        LoadFailure::NoneSucceeded { errors, ended } => {
            format!("no request succeeded: {}", error_list(errors, *ended))
        }
        LoadFailure::AboveMaxErrorRate {
            rate,
            max,
            errors,
            ended,
        } => format!(
            "{:.2} % of the requests failed, more than --max-error-rate {max}: {}",
            rate * 100.0,
            error_list(errors, *ended)
        ),
    }
}

/// "connect: Connection refused (os error 111) — 20 of 20; …"
fn error_list(errors: &[ErrorBucket], ended: u64) -> String {
    errors
        .iter()
        .map(|e| format!("{}: {} — {} of {ended}", e.kind, e.first_error, e.count))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What `kurabe results save` saved: "saved r7".
pub fn saved(id: &kurabe_model::record::ResultId) -> String {
    format!("saved {id}")
}

/// What `kurabe results rm` removed, a line each: "removed e3".
pub fn removed(ids: &[kurabe_model::record::EntryId]) -> String {
    let lines: Vec<String> = ids.iter().map(|id| format!("removed {id}")).collect();
    lines.join("\n")
}

/// What an import or copy added: "imported e3, r4 into PATH" or "copied
/// 2 entries from A to B: e1→e3, …".
pub fn added(added: &Added) -> String {
    let Some(from) = &added.from else {
        let names: Vec<String> = added.ids.iter().map(|(_, b)| b.to_string()).collect();
        let what = if names.is_empty() {
            "nothing".to_owned()
        } else {
            names.join(", ")
        };
        return format!("imported {what} into {}", added.to.display());
    };
    let pairs: Vec<String> = (added.ids.iter())
        .map(|(a, b)| format!("{}→{b}", a.map(|a| a.to_string()).unwrap_or_default()))
        .collect();
    format!(
        "copied {} entries from {} to {}: {}",
        added.ids.len(),
        from.display(),
        added.to.display(),
        pairs.join(", ")
    )
}

/// "kurabe: note: …".
/// Why `--profile=required` refuses to run: the error's words.
pub fn profile_required(why: &kurabe_model::profile::ProfileOff) -> String {
    crate::words::profile_off(why, "--profile=required")
}

fn note(text: &str) -> String {
    format!("kurabe: note: {text}")
}

/// `kurabe site`'s summary line.
fn site(plans: usize, dir: &Path, (written, unchanged): (usize, usize)) -> String {
    format!(
        "kurabe: site of {plans} plan(s) in {}: {written} page(s) written, {unchanged} unchanged; open {}",
        dir.display(),
        dir.join("index.html").display()
    )
}

/// Each failed threshold with what was measured (or why nothing was).
fn thresholds_failed(failed: &[(String, String)], of: usize) -> String {
    let each: Vec<String> = (failed.iter())
        .map(|(text, shown)| match shown.starts_with("not measured") {
            true => format!("'{text}' ({shown})"),
            false => format!("'{text}' (measured {shown})"),
        })
        .collect();
    let n = failed.len();
    format!("kurabe: {n} of {of} thresholds failed: {}", each.join(", "))
}

/// Each failed threshold with its workload, variant and worst figure;
/// escaped, as a plan's text reaches the terminal.
fn variant_thresholds_failed(failed: &[(String, String, String)], of: usize) -> String {
    let each: Vec<String> = (failed.iter())
        .map(|(cell, text, worst)| format!("{cell} '{text}' (worst {worst})"))
        .collect();
    let line = format!(
        "{} of {of} thresholds failed: {}",
        failed.len(),
        each.join(", ")
    );
    format!("kurabe: {}", crate::escape::terminal(&line))
}

/// A benchmarked command's failure, and how to go on past it.
fn command_failed(why: &str, suggest_ignore: bool) -> String {
    let mut line = format!("kurabe: error: {why}");
    if suggest_ignore {
        line.push_str(
            "\nkurabe: use -i/--ignore-failure to record non-zero exit codes instead of stopping",
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_savings_read_as_before() {
        let saved = Notice::SavedExperiment {
            id: kurabe_model::record::ExperimentId(7),
        };
        assert_eq!(line(&saved), "kurabe: saved as e7; see `kurabe report e7`");
        let off = Notice::NotWritten { flag: "-e".into() };
        assert_eq!(
            line(&off),
            "kurabe: note: -e file not written: no request got a response"
        );
        let failed = Notice::ThresholdsFailed {
            failed: vec![
                ("p(95)<1ms".into(), "2.1ms".into()),
                ("rate>9".into(), "not measured: no requests".into()),
            ],
            of: 3,
        };
        assert_eq!(
            line(&failed),
            "kurabe: 2 of 3 thresholds failed: 'p(95)<1ms' (measured 2.1ms), 'rate>9' (not measured: no requests)"
        );
    }

    #[test]
    fn a_hidden_listener_names_the_flag_kurabe_http_takes() {
        let l = line(&Notice::ListenerHidden { port: 8080 });
        assert!(l.contains("port 8080") && l.contains("--server-pid"), "{l}");
        assert!(
            !l.contains(" -p"),
            "-p is ab's POST file in kurabe http: {l}"
        );
    }

    #[test]
    fn a_failed_load_names_each_kind_with_its_first_error() {
        let errors = vec![ErrorBucket {
            kind: "connect".into(),
            first_error: "Connection refused (os error 111)".into(),
            count: 3,
        }];
        let none = LoadFailure::NoneSucceeded {
            errors: errors.clone(),
            ended: 3,
        };
        assert_eq!(
            line(&Notice::LoadFailed(none)),
            "kurabe: no request succeeded: connect: Connection refused (os error 111) — 3 of 3"
        );
        let above = LoadFailure::AboveMaxErrorRate {
            rate: 0.03,
            max: 0.01,
            errors,
            ended: 100,
        };
        assert_eq!(
            line(&Notice::LoadFailed(above)),
            "kurabe: 3.00 % of the requests failed, more than --max-error-rate 0.01: connect: Connection refused (os error 111) — 3 of 100"
        );
        assert!(line(&Notice::LoadFailed(LoadFailure::NothingEnded)).contains("none ended"));
    }
}
