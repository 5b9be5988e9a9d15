//! SIGINT, SIGTERM and SIGHUP as one `Stop` (handled in
//! `kurabe_probe::signals`), and what they mean for the process: the exit
//! status 128 + signal, an immediate exit on a signal before a command has
//! work to stop (reading its inputs), and on a second signal where a
//! command allows it. Must not do any cleanup itself.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use kurabe_probe::signals::{force_exit_on_second_signal, second_signal, status_for};
use kurabe_stop::Stop;

/// Install the handlers as the process starts: a signal exits at once
/// (128 + the signal) until a command takes the stop ([`install_stop`]).
pub fn install_early() -> anyhow::Result<()> {
    Ok(kurabe_probe::signals::install_early(exit_at_once)?)
}

/// Install the handlers (once) and return the stop flag they set.
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    Ok(install_stop()?.flag().clone())
}

/// Install the handlers (once) and return the shared [`Stop`].
pub fn install_stop() -> anyhow::Result<Arc<Stop>> {
    Ok(kurabe_probe::signals::install(exit_at_once)?)
}

/// What a forced exit does last ([`on_forced_exit`]).
type LastWords = Box<dyn Fn() + Send>;
static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// How long a forced exit waits for its last words.
const LAST_WORDS_WAIT: Duration = Duration::from_secs(1);

/// Have a forced exit (a second signal, or a first past the grace) run
/// `f` before it exits, on a thread of its own and for at most
/// [`LAST_WORDS_WAIT`]: what must not be left undone even then (a fleet
/// run marked cancelled, so that its workers stop).
pub fn on_forced_exit(f: impl Fn() + Send + Sync + 'static) {
    *LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
}

/// Run the last words, if any, waiting at most [`LAST_WORDS_WAIT`].
fn last_words() {
    let Some(f) = LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().spawn(move || {
        f();
        let _ = tx.send(());
    });
    if spawned.is_ok() {
        let _ = rx.recv_timeout(LAST_WORDS_WAIT);
    }
}

fn exit_at_once(sig: i32) {
    // The live terminal view, if up, gives the terminal back first.
    kurabe_live::tui::restore();
    last_words();
    // A first signal with nothing to stop yet ends the process silently,
    // as the default action would (but with the exit status 128 + signal).
    let overdue = kurabe_probe::signals::overdue();
    if overdue || kurabe_probe::signals::received().is_some() {
        let grace_s = overdue.then(|| kurabe_probe::signals::GRACE.as_secs());
        crate::tell(kurabe_model::notice::Notice::ExitingAtOnce { grace_s });
    }
    std::process::exit(128 + sig);
}

/// The line a process ended by a second signal leaves on standard error.
pub fn say_forced() {
    crate::tell(kurabe_model::notice::Notice::ExitingAtOnce { grace_s: None });
}

/// The exit status for a run stopped by a signal: 128 + the signal number,
/// 130 when the stop came from elsewhere.
pub fn exit_code() -> ExitCode {
    ExitCode::from(status_for(kurabe_probe::signals::received()))
}
