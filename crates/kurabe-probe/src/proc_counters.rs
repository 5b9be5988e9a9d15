//! The kernel's counters of each process of a sampled tree, as cumulative
//! values the sampler turns into deltas the way it does CPU time.
//!
//! Where each comes from, per process (every thread, live and exited):
//! user and system CPU and minor and major faults from `/proc/PID/stat`
//! (utime, stime, minflt, majflt, plus the c* fields of reaped children);
//! read/write system calls and bytes from `/proc/PID/io` (which folds
//! reaped children in too); voluntary and involuntary context switches and
//! CPU migrations from each thread's `/proc/PID/task/TID/sched`, summed
//! here and kept monotonic (a thread that exits keeps what was counted for
//! it). The kernel keeps no total of the switches and migrations of exited
//! threads and reaped children in /proc, so those of a thread or child
//! that lives and dies between two samples are not counted; everything
//! else is.
//!
//! Owns the slot layout ([`SLOTS`]) and the per-process files these come
//! from. Must not decide tree membership or deltas: that is `tree.rs`'s.

use std::collections::HashMap;
use std::fs::File;
use std::io::ErrorKind;

use kurabe_model::tree_counters::{Counter, Counts};

use crate::procfs::{self, Io, Sched, Stat};

/// Slots of a process's cumulative values: 0 is its whole CPU in ticks
/// (the figure the sampler always had), then one per [`SLOT_COUNTERS`].
pub(crate) const SLOTS: usize = 12;

/// The counter of each slot after the first.
pub(crate) const SLOT_COUNTERS: [Counter; SLOTS - 1] = [
    Counter::UserCpuMs,
    Counter::SystemCpuMs,
    Counter::VoluntarySwitches,
    Counter::InvoluntarySwitches,
    Counter::MinorFaults,
    Counter::MajorFaults,
    Counter::ReadSyscalls,
    Counter::WriteSyscalls,
    Counter::ReadBytes,
    Counter::WriteBytes,
    Counter::CpuMigrations,
];

/// Slots filled from `sched` and from `io`.
const SCHED_SLOTS: [usize; 3] = [3, 4, 11];
const IO_SLOTS: [usize; 4] = [7, 8, 9, 10];

/// A process's cumulative values per slot, and the part of each that
/// came from children it reaped (what the kernel moved into it when a
/// child exited: the sampler subtracts what it had already counted for
/// that child from it, never more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) total: [u64; SLOTS],
    pub(crate) children: [u64; SLOTS],
}

impl Totals {
    /// A process's totals from its `stat`, `io` and summed `sched`;
    /// slots whose file was not read are taken from `before` (its last
    /// values), so a process that exits mid-sample grows by nothing.
    pub(crate) fn of(s: &Stat, io: Option<Io>, sched: Option<Sched>, before: &Totals) -> Totals {
        let mut t = Totals::default();
        t.set(0, s.total_ticks(), s.children_ticks());
        t.set(1, s.utime + s.cutime, s.cutime);
        t.set(2, s.stime + s.cstime, s.cstime);
        t.set(5, s.minflt + s.cminflt, s.cminflt);
        t.set(6, s.majflt + s.cmajflt, s.cmajflt);
        match sched {
            Some(x) => {
                // Switches and migrations of reaped children are not folded in.
                t.set(3, x.voluntary, 0);
                t.set(4, x.involuntary, 0);
                t.set(11, x.migrations, 0);
            }
            None => t.keep(before, &SCHED_SLOTS),
        }
        match io {
            // /proc/PID/io folds reaped children in without saying how much:
            // the whole growth bounds what is subtracted for them.
            Some(x) => {
                for (i, v) in IO_SLOTS
                    .into_iter()
                    .zip([x.syscr, x.syscw, x.rchar, x.wchar])
                {
                    t.set(i, v, v);
                }
            }
            None => t.keep(before, &IO_SLOTS),
        }
        t
    }

    /// Slot `i`: its total and the part from reaped children.
    fn set(&mut self, i: usize, total: u64, children: u64) {
        self.total[i] = total;
        self.children[i] = children;
    }

    /// Take `slots` from `before`.
    fn keep(&mut self, before: &Totals, slots: &[usize]) {
        for &i in slots {
            self.total[i] = before.total[i];
            self.children[i] = before.children[i];
        }
    }
}

/// Which files could not be read in a sample (another user's process,
/// a kernel without `CONFIG_SCHED_DEBUG`): their counters are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unread {
    pub(crate) io: bool,
    pub(crate) sched: bool,
}

/// Counts of one sample from the tree's growth per slot (CPU in `hz`
/// ticks); the counters of files that could not be read are absent.
pub(crate) fn counts_of(delta: &[u64; SLOTS], hz: f64, unread: Unread) -> Counts {
    let mut out = Counts::default();
    for (i, c) in SLOT_COUNTERS.into_iter().enumerate() {
        let slot = i + 1;
        if (unread.sched && SCHED_SLOTS.contains(&slot)) || (unread.io && IO_SLOTS.contains(&slot))
        {
            continue;
        }
        let v = delta[slot] as f64;
        out.set(c, if slot <= 2 { v / hz * 1e3 } else { v });
    }
    out
}

/// A thread's switches and migrations summed over its process's threads
/// since the sampler first saw it.
#[derive(Debug, Default)]
struct SchedSum {
    start: u64,
    threads: HashMap<u32, Sched>,
    total: Sched,
}

/// Reads the `io` and thread `sched` files of tree members.
#[derive(Debug, Default)]
pub(crate) struct CounterFiles {
    /// Open `/proc/PID/io` of members, re-read with pread.
    io_fds: HashMap<u32, File>,
    sched: HashMap<u32, SchedSum>,
    buf: Vec<u8>,
}

impl CounterFiles {
    /// Forget processes that are no longer members.
    pub(crate) fn retain(&mut self, members: &[u32]) {
        self.io_fds.retain(|p, _| members.binary_search(p).is_ok());
        self.sched.retain(|p, _| members.binary_search(p).is_ok());
    }

    /// `pid`'s I/O counters; `Err(true)` when they may not be read
    /// (permission), `Err(false)` when the process is gone.
    pub(crate) fn io(&mut self, pid: u32) -> Result<Io, bool> {
        match procfs::read_cached(&mut self.io_fds, pid, "io", &mut self.buf) {
            Ok(()) => std::str::from_utf8(&self.buf)
                .ok()
                .and_then(procfs::parse_io)
                .ok_or(true),
            Err(e) => Err(e.kind() == ErrorKind::PermissionDenied),
        }
    }

    /// Σ over `pid`'s threads of their switches and migrations, kept
    /// monotonic; `Err(true)` when the kernel has no such counters or they
    /// may not be read, `Err(false)` when the process is gone.
    pub(crate) fn sched(&mut self, pid: u32, start: u64) -> Result<Sched, bool> {
        let dir = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map_err(|e| e.kind() == ErrorKind::PermissionDenied)?;
        let sum = self.sched.entry(pid).or_default();
        if sum.start != start {
            *sum = SchedSum {
                start,
                ..SchedSum::default()
            };
        }
        let mut seen = HashMap::with_capacity(sum.threads.len());
        for tid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
            let text = match procfs::read(format!("/proc/{pid}/task/{tid}/sched")) {
                Ok(t) => t,
                Err(e) if e.kind() == ErrorKind::PermissionDenied => return Err(true),
                Err(_) => continue, // the thread exited meanwhile
            };
            let now = procfs::parse_sched(&text).ok_or(true)?;
            let was = sum.threads.get(&tid).copied().unwrap_or_default();
            sum.total.voluntary += now.voluntary.saturating_sub(was.voluntary);
            sum.total.involuntary += now.involuntary.saturating_sub(was.involuntary);
            sum.total.migrations += now.migrations.saturating_sub(was.migrations);
            seen.insert(tid, now);
        }
        sum.threads = seen;
        Ok(sum.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_carry_unread_files_forward_and_split_children() {
        let s = Stat {
            utime: 10,
            stime: 5,
            cutime: 3,
            cstime: 2,
            minflt: 100,
            cminflt: 40,
            majflt: 1,
            ..Stat::default()
        };
        let mut before = Totals::default();
        before.total[7] = 99;
        before.total[3] = 12;
        let t = Totals::of(&s, None, None, &before);
        assert_eq!(t.total[0], 20);
        assert_eq!((t.total[1], t.children[1]), (13, 3));
        assert_eq!((t.total[5], t.children[5]), (140, 40));
        assert_eq!((t.total[7], t.total[3]), (99, 12));
        let io = Io {
            rchar: 1,
            wchar: 2,
            syscr: 3,
            syscw: 4,
        };
        let t = Totals::of(&s, Some(io), Some(Sched::default()), &before);
        assert_eq!(&t.total[7..11], &[3, 4, 1, 2]);
        assert_eq!(t.total[3], 0);
    }

    #[test]
    fn unread_counters_are_absent_and_cpu_is_in_ms() {
        let mut d = [0u64; SLOTS];
        d[1] = 5; // user ticks
        d[8] = 1000; // syscw
        let c = counts_of(
            &d,
            100.0,
            Unread {
                io: false,
                sched: true,
            },
        );
        assert_eq!(c.get(Counter::UserCpuMs), Some(50.0));
        assert_eq!(c.get(Counter::WriteSyscalls), Some(1000.0));
        assert_eq!(c.get(Counter::CpuMigrations), None);
        assert_eq!(c.get(Counter::VoluntarySwitches), None);
        let c = counts_of(
            &d,
            100.0,
            Unread {
                io: true,
                sched: false,
            },
        );
        assert_eq!(c.get(Counter::WriteSyscalls), None);
        assert_eq!(c.get(Counter::CpuMigrations), Some(0.0));
    }
}
