//! SIGINT, SIGTERM and SIGHUP as one [`Stop`].
//!
//! Owns the process's signal handling: a thread receives the three signals
//! (signal_hook's iterator: the handler itself only writes to a pipe) and
//! triggers the shared [`Stop`], which wakes blocked waiters at once and sets
//! the `AtomicBool` that libraries poll. All three mean "stop, clean up,
//! report": a hang-up must not leave targets or cgroups behind any more than
//! a Ctrl-C does. After cleanup, [`exit_code`] gives the shell convention
//! 128 + signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
//!
//! Must not: do anything in a signal handler beyond what signal_hook does.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use kurabe_model::stop::Stop;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static STOP: OnceLock<Arc<Stop>> = OnceLock::new();
/// Set by commands whose cleanup may be skipped: a second signal then exits at once.
static FORCEABLE: AtomicBool = AtomicBool::new(false);

/// Install the handlers (once) and return the stop flag they set.
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    Ok(install_stop()?.flag().clone())
}

/// Install the handlers (once) and return the shared [`Stop`].
pub fn install_stop() -> anyhow::Result<Arc<Stop>> {
    if let Some(stop) = STOP.get() {
        return Ok(stop.clone());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| anyhow::anyhow!("cannot install signal handler: {e}"))?;
    let stop = STOP.get_or_init(|| Arc::new(Stop::new())).clone();
    let target = stop.clone();
    std::thread::Builder::new()
        .name("kurabe-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if target.is_set() && FORCEABLE.load(Ordering::SeqCst) {
                    eprintln!("kurabe: second signal, exiting without waiting");
                    std::process::exit(128 + sig);
                }
                target.trigger(Some(sig));
            }
        })
        .map_err(|e| anyhow::anyhow!("cannot start the signal thread: {e}"))?;
    Ok(stop)
}

/// Let a second SIGINT/SIGTERM/SIGHUP end the process at once (128 + signal)
/// instead of waiting for a graceful stop. For commands with nothing to
/// clean up that a forced exit would leave behind (`serve`, `http`'s drain).
pub fn force_exit_on_second_signal() {
    FORCEABLE.store(true, Ordering::SeqCst);
}

/// True once a stop signal arrived (false if [`install`] was never called).
#[allow(dead_code)]
pub fn interrupted() -> bool {
    STOP.get().is_some_and(|s| s.is_set())
}

/// The exit status for a run stopped by a signal: 128 + the signal number,
/// 130 when the stop came from elsewhere.
pub fn exit_code() -> ExitCode {
    ExitCode::from(status_for(STOP.get().and_then(|s| s.signal())))
}

/// 128 + `signal` (130, as for SIGINT, when unknown).
pub fn status_for(signal: Option<i32>) -> u8 {
    signal
        .and_then(|s| u8::try_from(128 + s).ok())
        .unwrap_or(130)
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
}
