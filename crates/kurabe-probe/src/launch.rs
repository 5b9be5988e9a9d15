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
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use kurabe_model::probe::ExitStatus;

use crate::cgroup::RunCgroup;
use crate::procfs;

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
