//! Running a command in a fresh cgroup of its own (`kurabe worker --cpus`
//! re-runs itself this way, so a load host of a given size can be
//! emulated), with a stop request relayed to it as SIGTERM and a second
//! one as SIGKILL.
//!
//! Owns the child's life: started in the cgroup, signalled on stop (and
//! killed on a second stop: the parent ends at once, as every command
//! does on a second signal, but only after its child, so that the cgroup
//! is still removed), waited for, and the cgroup (with anything left in
//! it) removed after, and the status the parent passes on: the child's
//! own, or 128 + the signal that killed it. Must not print.

use std::ffi::OsString;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kurabe_stop::Stop;

use crate::cgroup::{CgroupError, Limits, RunCgroup};

/// Why the command could not run in its cgroup.
#[derive(Debug, thiserror::Error)]
pub enum CgroupRunError {
    /// No cgroup with these limits could be made.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    /// The command did not start.
    #[error("cannot start the command in its cgroup")]
    Spawn(#[source] std::io::Error),
    /// Waiting for it failed.
    #[error("cannot wait for the command")]
    Wait(#[source] std::io::Error),
    /// This program's own executable could not be found to re-run it.
    #[error("cannot find the kurabe executable")]
    Exe(#[source] std::io::Error),
}

/// What ends the child: `stop` reaches it as SIGTERM, then `kill` (a
/// second signal) as SIGKILL.
#[derive(Debug, Clone)]
pub struct Stops {
    /// The graceful stop (the first signal).
    pub stop: Arc<Stop>,
    /// The forced one (a second signal).
    pub kill: Arc<Stop>,
}

/// Re-run this program with `args` and the variables `env` inside a new
/// cgroup with `limits` (see [`run_in_cgroup`]): `kurabe worker --cpus`.
pub fn rerun_self(
    limits: &Limits,
    args: Vec<OsString>,
    env: &[(&str, &str)],
    stops: &Stops,
) -> Result<ExitStatus, CgroupRunError> {
    let exe = std::env::current_exe().map_err(CgroupRunError::Exe)?;
    let mut cmd = Command::new(exe);
    cmd.args(args).envs(env.iter().copied());
    run_in_cgroup(limits, cmd, stops)
}

/// Set in the child a `kurabe worker --cpus` starts inside its cgroup.
const IN_CGROUP_ENV: &str = "KURABE_WORKER_IN_CGROUP";

/// Whether this process is the child [`rerun_with_cpus`] started.
pub fn is_rerun() -> bool {
    std::env::var_os(IN_CGROUP_ENV).is_some()
}

/// Re-run this program inside a new cgroup with a CPU quota of `cpus`
/// (`kurabe worker --cpus`), `stops` relayed to it; the status to exit
/// with (`passed_on`). The store URL travels in the environment
/// (readable by this user only), not on the child's command line: our own
/// argv has its password hidden (`kurabe_store::proctitle`), and the
/// child's must not show it either.
pub fn rerun_with_cpus(cpus: f64, store_url: &str, stops: &Stops) -> Result<u8, CgroupRunError> {
    let limits = Limits {
        cpus: Some(cpus),
        ..Default::default()
    };
    let args = without_flag(std::env::args_os().skip(1), "--store");
    let env = [("KURABE_STORE", store_url), (IN_CGROUP_ENV, "1")];
    let status = rerun_self(&limits, args, &env, stops)?;
    Ok(passed_on(status, stops))
}

/// The child's exit status, or when a signal killed it (the second
/// signal) 128 + the signal that stopped this process, as the other
/// commands exit on one.
fn passed_on(status: ExitStatus, stops: &Stops) -> u8 {
    let signal = stops.kill.signal().or(stops.stop.signal());
    status
        .code()
        .map_or_else(|| crate::signals::status_for(signal), |c| c as u8)
}

/// `args` without `flag VALUE` and `flag=VALUE` (a secret that must not
/// reach a child's command line, e.g. `--store`).
pub fn without_flag(args: impl Iterator<Item = OsString>, flag: &str) -> Vec<OsString> {
    let with_value = format!("{flag}=");
    let mut out = Vec::new();
    let mut skip_next = false;
    for arg in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if arg == flag {
            skip_next = true;
        } else if !arg.to_string_lossy().starts_with(&with_value) {
            out.push(arg);
        }
    }
    out
}

/// Run `cmd` inside a new cgroup with `limits` until it exits; `stops`
/// reach it as SIGTERM, then SIGKILL, at once. The cgroup guard kills
/// whatever is left and removes the cgroup when the child is gone.
pub fn run_in_cgroup(
    limits: &Limits,
    mut cmd: Command,
    stops: &Stops,
) -> Result<ExitStatus, CgroupRunError> {
    let cgroup = RunCgroup::create(limits)?;
    cgroup.prepare(&mut cmd);
    let mut child = cmd.spawn().map_err(CgroupRunError::Spawn)?;
    let status = wait_relaying_stops(&mut child, stops).map_err(CgroupRunError::Wait);
    drop(cgroup);
    status
}

/// Wait for `child`; a stop request reaches it as SIGTERM at once, a
/// second as SIGKILL (a thread blocks on each [`Stop`] in turn, no
/// polling).
fn wait_relaying_stops(child: &mut Child, stops: &Stops) -> std::io::Result<ExitStatus> {
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let (stops, reaped) = (stops.clone(), done.clone());
    std::thread::spawn(move || {
        for (stop, sig) in [(&stops.stop, libc::SIGTERM), (&stops.kill, libc::SIGKILL)] {
            if !relay(stop, &reaped, pid, sig) {
                return;
            }
        }
    });
    let status = child.wait();
    done.store(true, Ordering::SeqCst);
    status
}

/// Once `stop` is set, send `sig` to `pid` unless it was `reaped`; false
/// when it was.
fn relay(stop: &Stop, reaped: &AtomicBool, pid: i32, sig: i32) -> bool {
    while !reaped.load(Ordering::SeqCst) {
        if stop.wait_timeout(Duration::from_secs(3600)) {
            if reaped.load(Ordering::SeqCst) {
                return false;
            }
            // SAFETY: kill(2) on our own child's PID, not yet reaped.
            unsafe { libc::kill(pid, sig) };
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_and_its_value_are_dropped_in_both_spellings() {
        let args = [
            "worker",
            "--store",
            "pg://a",
            "--once",
            "--store=pg://b",
            "--storex",
        ];
        let kept = without_flag(args.iter().map(OsString::from), "--store");
        assert_eq!(kept, ["worker", "--once", "--storex"]);
    }

    #[test]
    fn the_childs_status_is_passed_on_and_a_kill_as_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        let stops = Stops {
            stop: Arc::new(Stop::new()),
            kill: Arc::new(Stop::new()),
        };
        assert_eq!(passed_on(ExitStatus::from_raw(3 << 8), &stops), 3);
        // Killed, no signal seen here: 130, as for SIGINT.
        assert_eq!(passed_on(ExitStatus::from_raw(libc::SIGKILL), &stops), 130);
        stops.stop.trigger(Some(libc::SIGTERM));
        assert_eq!(passed_on(ExitStatus::from_raw(libc::SIGKILL), &stops), 143);
    }
}
