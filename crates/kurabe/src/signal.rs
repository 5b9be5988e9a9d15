//! SIGINT, SIGTERM and SIGHUP as one `Stop` (handled in
//! `kurabe_probe::signals`), and what they mean for the process: the exit
//! status 128 + signal, an immediate exit on a signal before a command has
//! work to stop (reading its inputs), and on a second signal where a
//! command allows it. Must not do any cleanup itself.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use kurabe_probe::last_words::on_forced_exit;
use kurabe_probe::signals::status_for;
pub use kurabe_probe::signals::{force_exit_on_second_signal, second_signal};
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

/// [`install_stop`] for a command whose cleanup a second signal may skip
/// ([`force_exit_on_second_signal`]): every process it starts is on
/// kurabe-probe's launch list (killed with its tree by a forced exit) and
/// the store's writes are transactions.
pub fn install_forceable() -> anyhow::Result<Arc<Stop>> {
    let stop = install_stop()?;
    force_exit_on_second_signal();
    Ok(stop)
}

fn exit_at_once(sig: i32) {
    // The live terminal view, if up, gives the terminal back first.
    kurabe_live::tui::restore();
    kurabe_probe::last_words::run();
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
    ExitCode::from(status())
}

/// [`exit_code`]'s number.
pub fn status() -> u8 {
    status_for(kurabe_probe::signals::received())
}
