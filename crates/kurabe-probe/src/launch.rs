//! Start a command to watch, and make sure it dies with kurabe.
//!
//! The command gets its own process group (so the terminal's Ctrl-C reaches
//! kurabe only, and one `killpg` reaches the whole group) and, when given,
//! joins the run's cgroup before exec. [`Started`] is a guard: dropping it
//! kills the group and every descendant still found by ppid and reaps the
//! root. Exit is detected without reaping (`waitid(WNOWAIT)`) so the sampler
//! can read the zombie's final CPU counters before [`Started::reap`] collects
//! the kernel's rusage, the same accounting `/usr/bin/time` prints.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use kurabe_model::probe::ExitStatus;
use kurabe_stop::Stop;

use crate::cgroup::RunCgroup;
use crate::procfs;

/// The commands started and not yet reaped (so none of their PIDs can have
/// been reused): what a forced exit kills ([`kill_started`]).
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Directories of kurabe's own (a run's scratch space) that a forced exit
/// removes, as their guards' drops would.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// SIGKILL the tree of every command started and not yet reaped, then
/// remove the scratch directories: for an exit that will not wait for the
/// guards' drops (a second signal), so that it leaves no process and no
/// scratch file behind either.
pub fn kill_started() {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner()).clone();
    live.into_iter().for_each(kill_tree);
    let scratch = SCRATCH.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for dir in scratch {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Count `dir` among what [`kill_started`] removes, until [`forget_scratch`].
pub fn track_scratch(dir: &Path) {
    let mut s = SCRATCH.lock().unwrap_or_else(|p| p.into_inner());
    s.push(dir.to_owned());
}

/// Stop counting `dir` ([`track_scratch`]): its guard removes it.
pub fn forget_scratch(dir: &Path) {
    let mut s = SCRATCH.lock().unwrap_or_else(|p| p.into_inner());
    s.retain(|d| d != dir);
}

/// Count `pid`, the leader of a process group kurabe started some other
/// way than [`spawn`], among what [`kill_started`] kills, until [`forget`].
pub fn track(pid: u32) {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
}

/// Stop counting `pid` ([`track`]); before it is reaped, after which its
/// number can be another process's.
pub fn forget(pid: u32) {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|&p| p != pid);
}

/// A command kurabe started. Dropping it kills its tree.
#[derive(Debug)]
pub struct Started {
    pid: u32,
    reaped: Option<(ExitStatus, f64)>,
}

/// Spawn `cmd` in its own process group, inside `cgroup` when given.
///
/// The command is also told to die with the thread that spawns it
/// (`PR_SET_PDEATHSIG`): if kurabe is killed outright (SIGKILL, a crash) no
/// guard runs, and the kernel then kills the root for us; the cgroup (or the
/// next kurabe's sweep) takes care of what it forked.
pub fn spawn(cmd: &mut Command, cgroup: Option<&RunCgroup>) -> std::io::Result<Started> {
    match cgroup {
        Some(cg) => cg.prepare(cmd),
        None => {
            cmd.process_group(0);
        }
    }
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    track(child.id());
    // The std handle is dropped: waiting happens through wait4 below so the
    // rusage is ours; dropping a Child neither waits nor kills.
    Ok(Started {
        pid: child.id(),
        reaped: None,
    })
}

impl Started {
    /// PID (and process group ID) of the command.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True once the command has exited (it stays a zombie until [`Started::reap`]).
    pub fn has_exited(&self) -> bool {
        if self.reaped.is_some() {
            return true;
        }
        // SAFETY: zeroed siginfo_t is valid; waitid only writes it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer; WNOWAIT leaves the child waitable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is valid to read for SIGCHLD-style siginfo.
        rc == 0 && unsafe { info.si_pid() } != 0
    }

    /// Something to block on until the command exits, usable from another
    /// thread (`None` where the kernel has no pidfds, before Linux 5.3).
    pub fn exit_waiter(&self) -> Option<ExitWaiter> {
        // SAFETY: pidfd_open takes a pid and flags; the result is a new fd or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid as libc::pid_t, 0) };
        // SAFETY: a non-negative result is a descriptor this process now owns.
        (raw >= 0).then(|| ExitWaiter(unsafe { OwnedFd::from_raw_fd(raw as RawFd) }))
    }

    /// Block until the command has exited or `timeout` passes; true once it
    /// has. Blocks on its pidfd; without pidfds, checks every 5 ms.
    pub fn wait_exit(&self, timeout: Duration) -> bool {
        if self.has_exited() {
            return true;
        }
        if let Some(w) = self.exit_waiter() {
            return w.wait(timeout) || self.has_exited();
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            if self.has_exited() {
                return true;
            }
        }
        false
    }

    /// Block until the command exits (true) or `stop` is set (false).
    /// The exit is seen on its pidfd by a thread that ends when the command
    /// does (a caller that stops waiting kills it, e.g. by dropping `self`).
    pub fn wait_exit_or_stop(&self, stop: &Arc<Stop>) -> bool {
        let wake = stop.child();
        match self.exit_waiter() {
            Some(waiter) => {
                let exited = wake.clone();
                let watch = std::thread::Builder::new()
                    .name("kurabe-exit-watch".into())
                    .spawn(move || {
                        while !waiter.wait(Duration::from_secs(3600)) {}
                        exited.trigger(None);
                    });
                if watch.is_ok() {
                    wake.wait();
                }
            }
            // Without pidfds: check every 5 ms, still cut short by the stop.
            None => while !self.has_exited() && !wake.wait_timeout(Duration::from_millis(5)) {},
        }
        self.has_exited() && !stop.is_set()
    }

    /// Wait for the command and return its exit status and the CPU seconds
    /// (user + system) of it and every descendant it waited for (`wait4` rusage).
    pub fn reap(&mut self) -> (ExitStatus, f64) {
        if let Some(r) = self.reaped {
            return r;
        }
        let mut status = 0;
        // SAFETY: zeroed rusage is valid; wait4 only writes it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = loop {
            // SAFETY: valid pointers to locals.
            let rc = unsafe { libc::wait4(self.pid as libc::pid_t, &mut status, 0, &mut ru) };
            if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break rc;
        };
        let exit = if rc < 0 {
            ExitStatus {
                code: None,
                signal: None,
            }
        } else {
            exit_status(status)
        };
        let cpu = procfs::timeval_s(ru.ru_utime) + procfs::timeval_s(ru.ru_stime);
        self.reaped = Some((exit, cpu));
        forget(self.pid);
        (exit, cpu)
    }

    /// Stop the command: SIGTERM to its group, up to `grace` for it to exit,
    /// then SIGKILL to the group and every descendant; then reap it.
    pub fn terminate(&mut self, grace: Duration) -> (ExitStatus, f64) {
        if self.reaped.is_none() && !self.has_exited() {
            signal_group(self.pid, libc::SIGTERM);
            crate::exitwait::wait_exited(&[self.pid], Instant::now() + grace);
        }
        kill_tree(self.pid);
        self.reap()
    }
}

/// A pidfd of a started command: readable once the command has exited.
#[derive(Debug)]
pub struct ExitWaiter(OwnedFd);

impl ExitWaiter {
    /// Block until the command has exited or `timeout` passes; true once it has.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
            let mut p = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            let rc = unsafe { libc::poll(&mut p, 1, ms) };
            let interrupted =
                rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
            if !interrupted {
                return rc > 0;
            }
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            kill_tree(self.pid);
            self.reap();
        }
    }
}

/// A `wait` status as exit code or signal.
fn exit_status(status: libc::c_int) -> ExitStatus {
    if libc::WIFEXITED(status) {
        ExitStatus {
            code: Some(libc::WEXITSTATUS(status)),
            signal: None,
        }
    } else {
        ExitStatus {
            code: None,
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        }
    }
}

fn signal_group(pgid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(-(pgid as libc::pid_t), sig) };
}

/// SIGKILL the process group `root` leads and every descendant of `root`
/// found by a ppid scan (including ones that left the group).
pub fn kill_tree(root: u32) {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for pid in procfs::pids().unwrap_or_default() {
        if let Some(s) = procfs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| procfs::parse_stat(&t))
        {
            children.entry(s.ppid).or_default().push(pid);
        }
    }
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        if seen.insert(p) {
            stack.extend(children.get(&p).into_iter().flatten().copied());
        }
    }
    signal_group(root, libc::SIGKILL);
    for p in seen {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(pid: u32) -> bool {
        LIVE.lock().unwrap().contains(&pid)
    }

    /// A forced exit kills the started commands not yet reaped: each is
    /// counted from its spawn until its reaping, and no longer (a reaped
    /// PID may be another process's). `kill_started` itself is not called
    /// here: it would kill the other tests' commands too.
    #[test]
    fn a_started_command_is_counted_until_it_is_reaped() {
        let mut running = spawn(Command::new("sleep").arg("600"), None).unwrap();
        let mut done = spawn(&mut Command::new("true"), None).unwrap();
        assert!(live(running.pid()) && live(done.pid()));
        done.reap();
        assert!(!live(done.pid()));
        running.terminate(Duration::ZERO);
        assert!(!live(running.pid()));
    }
}
