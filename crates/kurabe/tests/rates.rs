//! Rates no machine reaches (issue 38), against `kurabe serve`: a rate or
//! stage target beyond what a client process could ever send is refused
//! before any request; below that, a run that falls far behind its
//! schedule still ends on time, reports what it could not send as
//! dropped, and stops at the first SIGTERM.
//!
//! Bounds are wall-clock and generous (the machine is shared): what they
//! catch is a run whose end takes time in proportion to the sends it
//! meant (seconds to minutes), or one that never ends.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use kurabe_model::http::HttpReport;

use crate::serve::ServeChild;
use crate::util::kurabe;

/// Request timeout of the runs below, s: the drain after the end waits
/// at most this long.
const TIMEOUT_S: u64 = 2;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2, one `kurabe: error:` line containing each of `needles`.
fn assert_refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("kurabe: error:"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} in {err}");
    }
}

#[test]
fn rates_beyond_any_client_are_refused_before_any_request() {
    let server = ServeChild::start(&[]);
    for (args, needles) in [
        (
            vec!["--rate", "1e300", "-t", "1"],
            vec!["--rate 1e300", "1e8"],
        ),
        (
            vec!["--rate", "100000001", "-t", "1"],
            vec!["--rate", "1e8"],
        ),
        (
            vec!["--stage", "1s:1e300"],
            vec!["--stage target 1e300", "1e8"],
        ),
        (
            vec!["--stage", "1s:10", "--stage", "1s:2e8"],
            vec!["--stage target 2e8"],
        ),
    ] {
        let out = kurabe()
            .args(["http", "-q", "-k", "-c", "4"])
            .args(&args)
            .arg(&server.url)
            .output()
            .unwrap();
        assert_refused(&out, &needles);
    }
    assert_eq!(server.served(), 0, "nothing was sent");
    // A fleet's workers send together: two may be asked for 2e8 (and the
    // run goes on to need its store), not for 3e8.
    let fleet = |rate: &str| {
        kurabe()
            .args(["http", "-q", "-c", "4", "-t", "1", "--workers", "2"])
            .args(["--rate", rate, "--store", "/nonexistent/kurabe.db"])
            .arg(&server.url)
            .output()
            .unwrap()
    };
    assert_refused(&fleet("3e8"), &["--rate 3e8", "2 workers"]);
    let err = stderr(&fleet("2e8"));
    assert!(!err.contains("--rate"), "{err}");
}

/// `kurabe http URL ARGS --format json`, timed: the record and the wall
/// time the child took.
fn timed_run(url: &str, args: &[&str]) -> (HttpReport, Duration) {
    let t0 = Instant::now();
    let out = kurabe()
        .args(["http", "-q", "-k", "-c", "4", "--format", "json"])
        .args(["-s", &TIMEOUT_S.to_string()])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), took)
}

/// The run ended within its length, the drain and 3 s of slack, and what
/// it meant is what it sent and what it dropped.
fn assert_on_time_and_counted(r: &HttpReport, took: Duration, length_s: f64) {
    let bound = Duration::from_secs_f64(length_s + TIMEOUT_S as f64 + 3.0);
    assert!(took < bound, "took {took:?}, more than {bound:?}");
    let rate = r.rate.expect("an open-model run");
    let intended = rate.requested_per_s * r.duration_s;
    let sent = (r.complete_requests + r.failed_requests + r.in_flight_at_end) as f64;
    let dropped = rate.dropped_sends as f64;
    assert!(
        sent < 0.5 * intended,
        "the machine kept up? {sent} of {intended}"
    );
    assert!(
        (intended - sent - dropped).abs() <= 0.01 * intended + 10.0,
        "{intended} intended, {sent} sent, {dropped} dropped"
    );
}

#[test]
fn a_rate_out_of_reach_ends_on_time_and_drops_what_it_could_not_send() {
    let server = ServeChild::start(&[]);
    let (r, took) = timed_run(&server.url, &["--rate", "1e7", "-t", "1"]);
    assert_on_time_and_counted(&r, took, 1.0);
    let (r, took) = timed_run(&server.url, &["--stage", "1s:1e7"]);
    assert_on_time_and_counted(&r, took, 1.0);
}

#[test]
fn the_first_sigterm_stops_a_run_far_behind_its_schedule() {
    let server = ServeChild::start(&[]);
    let child = kurabe()
        .args(["http", "-q", "-k", "-c", "4", "--rate", "1e8", "-t", "600"])
        .args(["-s", &TIMEOUT_S.to_string(), &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.served() < 100 {
        assert!(Instant::now() < deadline, "no load arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let bound = Duration::from_secs(1 + TIMEOUT_S + 3);
    assert!(took < bound, "took {took:?} after SIGTERM");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("*** interrupted"), "{text}");
}
