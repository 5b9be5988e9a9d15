//! Whether a load test as a whole failed: no request succeeded, or more
//! failed than the caller allows (`--max-error-rate`).
//!
//! Owns that rule, the check of its flag, and its one-line reason, which names each failure kind
//! with its first error and count. Must not print or pick exit codes: the
//! binary does both.

use kurabe_model::http::HttpReport;

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
pub fn failure(report: &HttpReport, max_error_rate: Option<f64>) -> Option<String> {
    if report.complete_requests == 0 {
        return Some(if report.failed_requests == 0 {
            "no request got a complete response (none ended before the run stopped)".to_owned()
        } else {
            format!("no request succeeded: {}", errors(report))
        });
    }
    let rate = report.error_rate();
    match max_error_rate {
        Some(max) if rate > max => Some(format!(
            "{:.2} % of the requests failed, more than --max-error-rate {max}: {}",
            rate * 100.0,
            errors(report)
        )),
        _ => None,
    }
}

/// "connect: Connection refused (os error 111) — 20 of 20; …"
fn errors(report: &HttpReport) -> String {
    let ended = report.ended_requests();
    report
        .errors
        .iter()
        .map(|e| format!("{}: {} — {} of {ended}", e.kind, e.first_error, e.count))
        .collect::<Vec<_>>()
        .join("; ")
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
        let why = failure(&r, None).unwrap();
        assert!(why.starts_with("no request succeeded: connect: "), "{why}");
        assert!(why.ends_with(" — 3 of 3"), "{why}");
        r.complete_requests = 97;
        assert_eq!(failure(&r, None), None);
        assert_eq!(failure(&r, Some(0.05)), None);
        let why = failure(&r, Some(0.01)).unwrap();
        assert!(
            why.starts_with(
                "3.00 % of the requests failed, more than --max-error-rate 0.01: connect: "
            ),
            "{why}"
        );
        r.failed_requests = 0;
        r.complete_requests = 0;
        assert!(failure(&r, None).unwrap().contains("none ended"));
    }
}
