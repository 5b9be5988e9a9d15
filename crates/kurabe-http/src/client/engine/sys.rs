//! Thin, safe wrappers over the few Linux calls the workers make: epoll, the
//! monotonic clock, and send/recv on raw descriptors.
//!
//! Everything `unsafe` in the load generator lives here or, for io_uring, in
//! `uring.rs`, each call with the invariant that makes it sound. No policy: callers decide what to do with
//! `EAGAIN` and friends.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Nanoseconds on `CLOCK_MONOTONIC` (a vDSO call, no syscall).
pub(crate) fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, ns (a system call, unlike [`now_ns`]).
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock`'s reading in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks used here exist
    // on every Linux kernel, and the call has no other effect.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An epoll instance.
pub(crate) struct Epoll {
    fd: OwnedFd,
    /// epoll_pwait2 (ns timeouts) is available (Linux ≥ 5.11).
    pwait2: bool,
}

/// Readiness flags we register every socket with, once: edge-triggered read
/// and write interest, so a socket never needs `epoll_ctl` again while it lives.
pub(crate) const INTEREST: u32 =
    (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own exclusively.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll { fd, pwait2: true })
    }

    /// Register `fd` with [`INTEREST`] and `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: INTEREST,
            u64: token,
        };
        // SAFETY: `ev` is valid for the call; epoll copies it.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Wait for events, at most `timeout_ns` nanoseconds (`None`: until one
    /// arrives). Returns the number filled.
    pub fn wait(&mut self, events: &mut [libc::epoll_event], timeout_ns: Option<u64>) -> usize {
        let max = events.len().min(i32::MAX as usize) as libc::c_int;
        loop {
            let rc = if self.pwait2 {
                let t = timeout_ns.unwrap_or(0);
                let ts = libc::timespec {
                    tv_sec: (t / 1_000_000_000) as libc::time_t,
                    tv_nsec: (t % 1_000_000_000) as libc::c_long,
                };
                let ts_ptr = match timeout_ns {
                    Some(_) => &ts as *const libc::timespec,
                    None => std::ptr::null(),
                };
                // SAFETY: `events` is a valid writable buffer of `max` entries,
                // `ts` lives across the call, no signal mask is passed.
                unsafe {
                    libc::syscall(
                        libc::SYS_epoll_pwait2,
                        self.fd.as_raw_fd(),
                        events.as_mut_ptr(),
                        max,
                        ts_ptr,
                        std::ptr::null::<libc::sigset_t>(),
                        0usize,
                    ) as libc::c_int
                }
            } else {
                // Round up so we never wake before a deadline.
                let ms = timeout_ns.map_or(-1, |t| {
                    t.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int
                });
                // SAFETY: as above.
                unsafe { libc::epoll_wait(self.fd.as_raw_fd(), events.as_mut_ptr(), max, ms) }
            };
            if rc >= 0 {
                return rc as usize;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOSYS) if self.pwait2 => self.pwait2 = false,
                // EINTR and anything else: report no events; the loop re-checks its clocks.
                _ => return 0,
            }
        }
    }
}

/// A periodic timer as a descriptor, registered in a worker's epoll, so the
/// worker can sleep in `epoll_wait` without a timeout: a timeout arms and
/// cancels a kernel hrtimer on every sleep, which in a VM means reprogramming
/// the timer device twice per wake-up, a measurable share of a client's CPU.
pub(crate) struct Ticker {
    fd: OwnedFd,
}

impl Ticker {
    /// Fire every `period_ns`.
    pub fn new(period_ns: u64) -> io::Result<Ticker> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own exclusively.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ts = libc::timespec {
            tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: `spec` is valid for the call; no old value is requested.
        let rc = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Ticker { fd })
    }

    /// The descriptor to register.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Consume expirations (so the next one is a new edge).
    pub fn ack(&self) {
        let mut n = [0u8; 8];
        let _ = recv_or_read(self.fd.as_raw_fd(), &mut n);
    }
}

fn recv_or_read(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is valid and writable for `buf.len()` bytes.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

/// `send` without blocking and without SIGPIPE.
///
/// Raw `syscall` rather than libc's `send`: the libc wrapper is a pthread
/// cancellation point and toggles async-cancel state around every call, a
/// measurable share of a client whose whole job is this call.
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the duration of the call;
    // a null address with length 0 makes sendto behave as send.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// `recv` without blocking (raw syscall, see [`send`]).
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid and writable for `buf.len()` bytes during the call;
    // null address pointers make recvfrom behave as recv.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            buf.as_mut_ptr(),
            buf.len(),
            libc::MSG_DONTWAIT,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Make timer wake-ups precise for this thread (default slack is 50 µs), for `--rate`.
pub(crate) fn precise_timers() {
    timer_slack(1);
}

/// Let this thread's timers fire up to `ns` late (the kernel's default is 50 µs).
pub(crate) fn timer_slack(ns: u64) {
    // SAFETY: prctl with an integer argument; failure is harmless (we keep the default slack).
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) };
}

/// Sleep `ns` nanoseconds (an interrupted sleep just ends early).
pub(crate) fn nap(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is valid for the call; no remainder is asked for.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a && a > 0);
    }

    #[test]
    fn a_nap_lasts_at_least_its_length() {
        let t0 = now_ns();
        nap(300_000);
        assert!(now_ns() - t0 >= 300_000);
    }

    #[test]
    fn wait_honours_a_short_timeout() {
        let mut ep = Epoll::new().unwrap();
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
        let t0 = now_ns();
        assert_eq!(ep.wait(&mut evs, Some(2_000_000)), 0);
        assert!(now_ns() - t0 >= 2_000_000);
    }

    #[test]
    fn ticker_wakes_an_untimed_wait() {
        let mut ep = Epoll::new().unwrap();
        let t = Ticker::new(3_000_000).unwrap();
        ep.add(t.fd(), 7).unwrap();
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
        let t0 = now_ns();
        assert_eq!(ep.wait(&mut evs, None), 1);
        assert_eq!({ evs[0].u64 }, 7);
        assert!(now_ns() - t0 >= 2_000_000);
        t.ack();
    }
}
