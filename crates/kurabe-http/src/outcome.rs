//! Whether a load test as a whole failed: no request succeeded, or more
//! failed than the caller allows (`--max-error-rate`).
//!
//! Owns that rule and the check of its flag; the reason is data
//! ([`LoadFailure`], with each failure kind's first error and count),
//! told in kurabe-report's words, and how a finished load ends
//! ([`ending`]). Must not print or pick exit codes: the binary does both.

use kurabe_model::ending::Ending;
use kurabe_model::http::HttpReport;
use kurabe_model::notice::{LoadFailure, Notice};

use crate::client::LoadError;

/// Whether `err` or one of its causes is a load worker's panic: a bug in
/// kurabe (the binary exits 70, EX_SOFTWARE), not the input.
pub fn is_worker_panic(err: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| e.source())
        .any(|e| matches!(e.downcast_ref(), Some(LoadError::WorkerPanic { .. })))
}

/// Whether `err` or one of its causes is a load stopped before it began
/// ([`LoadError::Interrupted`]): the binary exits 128 + the signal.
pub fn is_interrupted(err: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| e.source())
        .any(|e| matches!(e.downcast_ref(), Some(LoadError::Interrupted)))
}

/// A load worker's panic comes back from the run as an error (one line,
/// exit 70); the default hook's report would say it twice. With
/// RUST_BACKTRACE set, the hook's report (location, backtrace) is kept.
pub fn quiet_worker_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let worker = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with(crate::client::THREAD_PREFIX));
        if !worker || std::env::var_os("RUST_BACKTRACE").is_some() {
            default(info);
        }
    }));
}

/// `--max-error-rate` outside 0 to 1.
#[derive(Debug, thiserror::Error)]
#[error("--max-error-rate {0}: give a fraction from 0 to 1, e.g. 0.01 for 1 %")]
pub struct BadErrorRate(pub f64);

/// Check `--max-error-rate` before anything runs: a fraction from 0 to 1.
pub fn check_max_error_rate(max: Option<f64>) -> Result<(), BadErrorRate> {
    match max {
        Some(f) if !(0.0..=1.0).contains(&f) => Err(BadErrorRate(f)),
        _ => Ok(()),
    }
}

/// Why the run as a whole failed, if it did: nothing succeeded, or the
/// failed fraction is above `max_error_rate`.
pub fn failure(report: &HttpReport, max_error_rate: Option<f64>) -> Option<LoadFailure> {
    let (errors, ended) = (report.errors.clone(), report.ended_requests());
    if report.complete_requests == 0 {
        return Some(match report.failed_requests {
            0 => LoadFailure::NothingEnded,
            _ => LoadFailure::NoneSucceeded { errors, ended },
        });
    }
    let rate = report.error_rate();
    match max_error_rate {
        Some(max) if rate > max => Some(LoadFailure::AboveMaxErrorRate {
            rate,
            max,
            errors,
            ended,
        }),
        _ => None,
    }
}

/// How a finished load ends: `signalled` (the caller knows whether a
/// signal stopped it) first, then a failed threshold (each named), then
/// a failed load ([`failure`]), then a run `--abort-on-error` stopped
/// (its report says where). The (partial) report is written in every case.
pub fn ending(report: &HttpReport, max_error_rate: Option<f64>, signalled: bool) -> Ending {
    if signalled {
        return Ending::Signalled(None);
    }
    let failed: Vec<(String, String)> = (report.thresholds.iter())
        .filter(|t| !t.pass)
        .map(|t| (t.text.clone(), t.shown.clone()))
        .collect();
    if !failed.is_empty() {
        let of = report.thresholds.len();
        return Ending::ThresholdsFailed(Notice::ThresholdsFailed { failed, of });
    }
    match failure(report, max_error_rate) {
        Some(why) => Ending::Failed(Some(Notice::LoadFailed(why))),
        None if report.interrupted => Ending::Failed(None),
        None => Ending::Done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_rate_is_a_fraction() {
        assert!(check_max_error_rate(None).is_ok());
        assert!(check_max_error_rate(Some(0.01)).is_ok());
        let e = check_max_error_rate(Some(2.0)).unwrap_err().to_string();
        assert!(e.starts_with("--max-error-rate 2:"), "{e}");
    }
    use kurabe_model::load::LoadSpec;
    use kurabe_stop::Stop;

    /// A real run against a closed loopback port: every request fails to connect.
    fn refused() -> HttpReport {
        // Bind then drop: the port is free and nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut spec = LoadSpec::for_url(&format!("http://127.0.0.1:{port}/"));
        spec.requests = Some(3);
        crate::load::run(&spec, &Stop::new(), &crate::load::Quiet)
            .unwrap()
            .report
    }

    #[test]
    fn nothing_complete_fails_and_a_rate_fails_only_above_the_limit() {
        let mut r = refused();
        let Some(LoadFailure::NoneSucceeded { errors, ended }) = failure(&r, None) else {
            panic!("every request was refused: {:?}", failure(&r, None));
        };
        assert_eq!(
            (errors[0].kind.as_str(), errors[0].count, ended),
            ("connect", 3, 3)
        );
        r.complete_requests = 97;
        assert_eq!(failure(&r, None), None);
        assert_eq!(failure(&r, Some(0.05)), None);
        let Some(LoadFailure::AboveMaxErrorRate { rate, max, .. }) = failure(&r, Some(0.01)) else {
            panic!("3 % failed: {:?}", failure(&r, Some(0.01)));
        };
        assert_eq!((rate, max), (0.03, 0.01));
        r.failed_requests = 0;
        r.complete_requests = 0;
        assert_eq!(failure(&r, None), Some(LoadFailure::NothingEnded));
        let told = Notice::LoadFailed(LoadFailure::NothingEnded);
        assert_eq!(ending(&r, None, false), Ending::Failed(Some(told)));
        r.complete_requests = 3;
        assert_eq!(ending(&r, None, false), Ending::Done);
        assert_eq!(ending(&r, None, true), Ending::Signalled(None));
        r.interrupted = true;
        assert_eq!(
            ending(&r, None, false),
            Ending::Failed(None),
            "--abort-on-error"
        );
    }
}
