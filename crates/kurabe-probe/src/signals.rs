//! SIGINT, SIGTERM and SIGHUP as one [`Stop`].
//!
//! Owns the process's signal handling: a thread receives the three signals
//! (signal_hook's iterator: the handler itself only writes to a pipe) and
//! triggers the shared [`Stop`], which wakes blocked waiters at once and sets
//! the `AtomicBool` that libraries poll. All three mean "stop, clean up,
//! report": a hang-up must not leave targets or cgroups behind any more than
//! a Ctrl-C does. After cleanup, [`status_for`] gives the shell convention
//! 128 + signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
//!
//! Two phases: the handlers go in as a process starts ([`install_early`]),
//! when a signal has nothing to stop gracefully (inputs being read, which
//! may block on a pipe that never ends): it exits at once, with the same
//! status. A command that has work to stop and report takes the [`Stop`]
//! ([`install`]) and from then on the first signal only triggers it.
//!
//! A signal that repeats the first one within [`ECHO`] is its echo, not a
//! second request: GNU `timeout` (and `kill` of a process group after its
//! leader) sends SIGTERM to kurabe and then to its whole process group, so
//! kurabe receives it twice at once; taken as a second signal it would end
//! the run without its report, which is what `timeout N kurabe http …`
//! asked for.
//!
//! A first signal whose graceful stop has not ended the process within
//! [`GRACE`] (an output no one reads, a phase that does not poll the stop)
//! ends it as a second signal would, where a command allows that
//! ([`force_exit_on_second_signal`]): the promise that a signal always
//! ends kurabe does not rest on every phase polling.
//!
//! Must not: do anything in a signal handler beyond what signal_hook does,
//! or print (a second signal is handed to the caller's `on_forced`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use kurabe_stop::Stop;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static STOP: OnceLock<Arc<Stop>> = OnceLock::new();
/// Triggered by a second signal (one that is not the first's echo),
/// whether or not the command allows a forced exit ([`second_signal`]).
static SECOND: OnceLock<Arc<Stop>> = OnceLock::new();
/// Set by commands whose cleanup may be skipped: a second signal then exits at once.
static FORCEABLE: AtomicBool = AtomicBool::new(false);
/// Set once a command took the [`Stop`] ([`install`]): until then a signal
/// exits at once (nothing has run that a report or a cleanup would keep).
static GRACEFUL: AtomicBool = AtomicBool::new(false);

/// How soon after the first signal the same signal again is its echo (the
/// same request delivered twice: to the process, then to its group), not
/// a second request. A person's second Ctrl-C comes later than this; the
/// two deliveries of `timeout` are two system calls in a row.
pub const ECHO: Duration = Duration::from_millis(50);

/// How long a graceful stop may take before the first signal ends the
/// process as a second one would: the stop, the drain, the report and
/// the store's last write take a fraction of this on a loaded machine.
pub const GRACE: Duration = Duration::from_secs(5);

/// Set when the process is ended because its graceful stop overran [`GRACE`].
static OVERDUE: AtomicBool = AtomicBool::new(false);

/// True when [`GRACE`] ran out (for the exit's message).
pub fn overdue() -> bool {
    OVERDUE.load(Ordering::SeqCst)
}

/// Whether `sig`, received at `now`, repeats the `first` signal within
/// [`ECHO`].
fn is_echo(first: Option<(i32, Instant)>, sig: i32, now: Instant) -> bool {
    first.is_some_and(|(s, at)| s == sig && now.saturating_duration_since(at) < ECHO)
}

/// Install the handlers (once) as the process starts: until a command
/// takes the [`Stop`] ([`install`]), a signal calls `on_forced(signal)`
/// on the signal thread (which should exit with [`status_for`]).
pub fn install_early(on_forced: fn(i32)) -> std::io::Result<()> {
    start(on_forced).map(drop)
}

/// Install the handlers (once) and return the shared [`Stop`], which the
/// first signal triggers from now on. With [`force_exit_on_second_signal`]
/// in effect, a second signal calls `on_forced(signal)` on the signal
/// thread instead (which should exit).
pub fn install(on_forced: fn(i32)) -> std::io::Result<Arc<Stop>> {
    let stop = start(on_forced)?;
    GRACEFUL.store(true, Ordering::SeqCst);
    Ok(stop)
}

/// Start the signal thread, once; the shared [`Stop`].
fn start(on_forced: fn(i32)) -> std::io::Result<Arc<Stop>> {
    if let Some(stop) = STOP.get() {
        return Ok(stop.clone());
    }
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot install signal handler: {e}"))
        })?;
    let stop = STOP.get_or_init(|| Arc::new(Stop::new())).clone();
    let target = stop.clone();
    std::thread::Builder::new()
        .name("kurabe-signals".into())
        .spawn(move || {
            let mut first = None;
            for sig in signals.forever() {
                let now = Instant::now();
                if is_echo(first, sig, now) {
                    continue;
                }
                if first.is_none() && GRACEFUL.load(Ordering::SeqCst) {
                    watchdog(sig, on_forced);
                }
                if first.is_some() {
                    second_signal().trigger(Some(sig));
                }
                first.get_or_insert((sig, now));
                let forced = target.is_set() && FORCEABLE.load(Ordering::SeqCst);
                if forced || !GRACEFUL.load(Ordering::SeqCst) {
                    // No guard will run: what kurabe started goes first.
                    crate::launch::kill_started();
                    on_forced(sig);
                }
                target.trigger(Some(sig));
            }
        })
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot start the signal thread: {e}"))
        })?;
    Ok(stop)
}

/// After the first signal: end the process as a second signal would once
/// [`GRACE`] has passed (if it still runs, and the command allows it).
fn watchdog(sig: i32, on_forced: fn(i32)) {
    let spawned = std::thread::Builder::new()
        .name("kurabe-grace".into())
        .spawn(move || {
            std::thread::sleep(GRACE);
            if FORCEABLE.load(Ordering::SeqCst) {
                OVERDUE.store(true, Ordering::SeqCst);
                crate::launch::kill_started();
                on_forced(sig);
            }
        });
    // Without the thread the stop is as graceful as the command makes it.
    drop(spawned);
}

/// Let a second SIGINT/SIGTERM/SIGHUP go to `on_forced` at once instead of
/// waiting for a graceful stop. For commands with nothing to clean up that
/// a forced exit would leave behind (`serve`, `http`'s drain), or whose
/// children are all started by [`crate::launch::spawn`], whose trees the
/// forced exit kills first (`run`'s targets, `watch`'s command).
pub fn force_exit_on_second_signal() {
    FORCEABLE.store(true, Ordering::SeqCst);
}

/// Triggered by a second signal (not the first's echo), for a command
/// that does not exit on it ([`force_exit_on_second_signal`]) but must
/// end at once all the same: `kurabe worker --cpus`, whose child it
/// kills so that its cgroup is still removed.
pub fn second_signal() -> Arc<Stop> {
    SECOND.get_or_init(|| Arc::new(Stop::new())).clone()
}

/// The signal that stopped the process, if one did (and [`install`] ran).
pub fn received() -> Option<i32> {
    STOP.get().and_then(|s| s.signal())
}

/// 128 + `signal` (130, as for SIGINT, when unknown).
pub fn status_for(signal: Option<i32>) -> u8 {
    signal
        .and_then(|s| u8::try_from(128 + s).ok())
        .unwrap_or(130)
}

/// The exit status of a watch: 128 + the signal when a signal stopped it,
/// the started command's own status when it exited by itself (as
/// `/usr/bin/time` passes it on), else 0.
pub fn watch_status(report: &kurabe_model::probe::WatchReport) -> u8 {
    use kurabe_model::probe::WatchEnd;
    match report.ended {
        WatchEnd::Interrupted => status_for(report.stop_signal),
        WatchEnd::Exited => {
            let status = report.exit.and_then(|e| e.shell_status()).unwrap_or(0);
            u8::try_from(status).unwrap_or(1)
        }
        WatchEnd::Duration => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_statuses() {
        assert_eq!(status_for(Some(SIGINT)), 130);
        assert_eq!(status_for(Some(SIGTERM)), 143);
        assert_eq!(status_for(Some(SIGHUP)), 129);
        assert_eq!(status_for(None), 130);
    }

    #[test]
    fn the_same_signal_at_once_is_an_echo_of_the_first() {
        let t = Instant::now();
        assert!(!is_echo(None, SIGTERM, t));
        let first = Some((SIGTERM, t));
        assert!(is_echo(first, SIGTERM, t + Duration::from_millis(1)));
        assert!(!is_echo(first, SIGTERM, t + ECHO));
        assert!(!is_echo(first, SIGINT, t + Duration::from_millis(1)));
    }
}
