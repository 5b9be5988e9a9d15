//! Waiting for processes to exit without polling.
//!
//! Owns blocking waits on processes that may not be our children: a pidfd
//! per process (`pidfd_open(2)`, Linux ≥ 5.3) and one `poll(2)` over them,
//! which wakes the moment each one exits (the pidfd turns readable when the
//! process becomes a zombie, after it left its cgroup and can make no more
//! system calls). Must not reap: a parent that wants the exit status still
//! gets it from `wait4`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::procfs;

/// A pidfd for `pid`; `Ok(None)` when the process is already gone.
fn pidfd_open(pid: u32) -> std::io::Result<Option<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd >= 0 {
        // SAFETY: the kernel just gave us this descriptor; we own it.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ESRCH) => Ok(None),
        _ => Err(err),
    }
}

/// Block until every process in `pids` has exited, or until `deadline`.
/// True when all exited in time.
pub fn wait_exited(pids: &[u32], deadline: Instant) -> bool {
    let mut fds = Vec::with_capacity(pids.len());
    for &pid in pids {
        match pidfd_open(pid) {
            Ok(Some(fd)) => fds.push(fd),
            Ok(None) => {}
            Err(_) => return wait_exited_without_pidfd(pids, deadline),
        }
    }
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !polls.is_empty() {
        if !poll_until(&mut polls, deadline) {
            return false;
        }
        polls.retain(|p| p.revents == 0);
    }
    true
}

/// One `poll(2)` of `fds` that returns by `deadline`; false when the
/// deadline has passed or poll failed (EINTR counts as woken: look again).
pub(crate) fn poll_until(fds: &mut [libc::pollfd], deadline: Instant) -> bool {
    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
        return false;
    };
    let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of `fds.len()` pollfds.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    n >= 0 || std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

/// Kernels before 5.3 have no pidfd: the only way left to learn that a
/// process that is not our child exited is to look again. This is the one
/// polling wait kept, and only for those kernels.
fn wait_exited_without_pidfd(pids: &[u32], deadline: Instant) -> bool {
    loop {
        if pids.iter().all(|&p| !procfs::is_alive(p)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILL the processes `members()` lists and wait until they are gone,
/// listing again (a member may have forked before it died) until the list
/// is empty or `deadline` passes. True when the list came back empty.
pub fn kill_until_empty(mut members: impl FnMut() -> Vec<u32>, deadline: Instant) -> bool {
    loop {
        let pids = members();
        if pids.is_empty() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        for &pid in &pids {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        wait_exited(&pids, deadline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_returns_when_the_process_exits_not_at_the_deadline() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let t = Instant::now();
        assert!(wait_exited(&[child.id()], t + Duration::from_secs(60)));
        assert!(t.elapsed() < Duration::from_secs(30));
        child.wait().unwrap();
    }

    #[test]
    fn wait_gives_up_at_the_deadline_and_kill_empties_the_list() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(!wait_exited(
            &[pid],
            Instant::now() + Duration::from_millis(50)
        ));
        let alive = || [pid].into_iter().filter(|&p| procfs::is_alive(p)).collect();
        assert!(kill_until_empty(
            alive,
            Instant::now() + Duration::from_secs(30)
        ));
        assert!(child.wait().unwrap().code().is_none());
    }
}
