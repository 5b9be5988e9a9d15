//! `--pin same-core|spread`: measure one placement on purpose.
//!
//! Owns which CPU each process of a test runs on when asked ([`Pin`],
//! [`cpu_for`]) and the `sched_setaffinity` calls that put it there. A copy
//! pins itself right after it is forked, before the test's loop starts; the
//! context-switching partner pins itself right after its own fork (the CPU
//! it takes is left in [`PARTNER_CPU`] by the copy, in the copy's own memory).
//! Children of the test (spawn's, the shells') inherit the copy's CPU.
//! A copy also joins the run's cgroup here when the caller made one (a
//! plan variant's `limits`), so the limits hold for the test's processes.
//!
//! Must not: change what the loops do, or pin anything when no `--pin` was
//! given (the index keeps UnixBench's unpinned behaviour).

use std::ffi::CString;
use std::sync::atomic::{AtomicI32, Ordering};

/// A placement to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// Every process of the test on one CPU.
    SameCore,
    /// Each process on its own CPU, as far as there are CPUs.
    Spread,
}

impl Pin {
    /// The flag's and the report's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Pin::SameCore => "same-core",
            Pin::Spread => "spread",
        }
    }

    /// Parse `same-core` or `spread`.
    pub fn parse(s: &str) -> Option<Pin> {
        match s {
            "same-core" => Some(Pin::SameCore),
            "spread" => Some(Pin::Spread),
            _ => None,
        }
    }
}

/// The CPU of process `proc` (0 = the copy, 1 = its partner) of copy `copy`,
/// each test having `procs` processes per copy, among `allowed` CPUs.
pub fn cpu_for(pin: Pin, allowed: &[usize], copy: u32, procs: u32, proc: u32) -> usize {
    match pin {
        Pin::SameCore => allowed[0],
        Pin::Spread => {
            let slot = (copy * procs + proc) as usize;
            allowed[slot % allowed.len()]
        }
    }
}

/// CPUs this process may run on (its affinity mask, which a cpuset narrows).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pin the calling process to one CPU (async-signal-safe: one system call).
pub fn pin_self(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on our own pid.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// CPU the context-switching partner pins itself to; −1 = leave it alone.
/// Set by a forked copy before its loop starts, read by the partner after
/// its fork: each process has its own copy of the value.
pub static PARTNER_CPU: AtomicI32 = AtomicI32::new(-1);

/// Called by the partner right after its fork.
pub fn pin_partner() {
    let cpu = PARTNER_CPU.load(Ordering::Relaxed);
    if cpu >= 0 {
        pin_self(cpu as usize);
    }
}

/// Where a test's processes go: the pin, the CPUs to use, and how many
/// processes one copy of the test has (2 for context switching).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// `None`: leave placement to the scheduler.
    pub pin: Option<Pin>,
    /// CPUs kurabe may use, in order.
    pub allowed: Vec<usize>,
    /// Processes per copy.
    pub procs: u32,
    /// `cgroup.procs` files each copy joins before its loop (none: stay put).
    pub cgroup_procs: Vec<CString>,
}

impl Placement {
    /// In a forked copy, before its loop: join the cgroup, pin the copy,
    /// and leave its partner's CPU for the partner to take. False when the
    /// cgroup could not be joined (the pass must not run outside its limits).
    pub fn apply(&self, copy: u32) -> bool {
        if !self.cgroup_procs.iter().all(join_cgroup) {
            return false;
        }
        let Some(pin) = self.pin else { return true };
        if self.allowed.is_empty() {
            return true;
        }
        pin_self(cpu_for(pin, &self.allowed, copy, self.procs, 0));
        if self.procs > 1 {
            let cpu = cpu_for(pin, &self.allowed, copy, self.procs, 1);
            PARTNER_CPU.store(cpu as i32, Ordering::Relaxed);
        }
        true
    }
}

/// Move the calling process into the cgroup whose `cgroup.procs` is `file`
/// (writing "0" means "me"); async-signal-safe: open, write, close.
fn join_cgroup(file: &CString) -> bool {
    // SAFETY: a live C string; plain system calls on our own descriptor.
    unsafe {
        let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, b"0".as_ptr().cast(), 1);
        libc::close(fd);
        n == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_core_puts_everything_on_the_first_allowed_cpu() {
        let allowed = [2, 3];
        for copy in 0..3 {
            for proc in 0..2 {
                assert_eq!(cpu_for(Pin::SameCore, &allowed, copy, 2, proc), 2);
            }
        }
    }

    #[test]
    fn spread_gives_each_process_its_own_cpu_then_wraps() {
        let allowed = [0, 1, 4, 5];
        let got: Vec<usize> = (0..3)
            .flat_map(|c| (0..2).map(move |p| (c, p)))
            .map(|(c, p)| cpu_for(Pin::Spread, &allowed, c, 2, p))
            .collect();
        assert_eq!(got, [0, 1, 4, 5, 0, 1]);
        // One process per copy: copies on successive CPUs.
        assert_eq!(cpu_for(Pin::Spread, &allowed, 2, 1, 0), 4);
    }

    #[test]
    fn spelling_round_trips() {
        for p in [Pin::SameCore, Pin::Spread] {
            assert_eq!(Pin::parse(p.as_str()), Some(p));
        }
        assert_eq!(Pin::parse("same"), None);
    }

    #[test]
    fn this_process_has_an_allowed_cpu() {
        assert!(!allowed_cpus().is_empty());
    }
}
