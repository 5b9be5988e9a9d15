//! Sample a process tree's on-CPU stacks: one `cpu-clock` event per CPU
//! on each thread of each process of the tree as it is now, with
//! `inherit` (every thread and child they start later is sampled into the
//! same rings), read by a thread of ours that folds the records as they
//! come ([`Folded`]). A server that was running before the load began
//! (nginx's master and its workers, each with its threads) is sampled
//! whole; a command kurabe starts needs only its launcher.
//!
//! Owns which events are opened and the reading loop: the rings are
//! drained when a quarter full or on stop; records are taken in time
//! order across the rings (a process's MMAP2 on one CPU must come before
//! its samples on another), only those older than the drain's start less
//! [`SLACK_NS`], so none can still be in flight. Must not symbolise.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use kurabe_model::profile::ProfileOff;

use crate::fold::Folded;
use crate::record::{decode, time, Record};
use crate::sys::{self, flag, Attr, Ring};

/// The default rate: 999 Hz, as `perf record -F 999` (not 1000, so the
/// samples do not beat with 1 kHz timers).
pub const DEFAULT_HZ: u64 = 999;

/// Data pages of each CPU's ring (512 KiB: a second of the deepest
/// stacks at the default rate, and the unprivileged mlock default).
const RING_PAGES: usize = 128;

/// Records newer than the drain's start less this wait for the next drain.
const SLACK_NS: u64 = 2_000_000;

/// `CLOCK_MONOTONIC`, the clock the events stamp records with.
const CLOCK_MONOTONIC: i32 = 1;

/// What kernel frames a profile has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Sampled with their kernel stacks.
    Sampled,
    /// User space only: `perf_event_paranoid` ≥ 2 and no CAP_PERFMON.
    NotAllowed,
}

/// A running sampler of one process tree.
pub struct Sampler {
    stop: OwnedFd,
    /// Samples stamped before this (`CLOCK_MONOTONIC` ns) are not counted.
    since: Arc<AtomicU64>,
    reader: Option<JoinHandle<Folded>>,
    /// Nanoseconds of CPU each sample stands for.
    pub period_ns: u64,
    /// Whether kernel frames are sampled.
    pub kernel: Kernel,
}

/// What a sampler collected.
#[derive(Debug)]
pub struct Samples {
    /// The folded samples.
    pub folded: Folded,
    /// Nanoseconds of CPU each sample stands for.
    pub period_ns: u64,
    /// Whether kernel frames were sampled.
    pub kernel: Kernel,
}

impl Sampler {
    /// Sample `pid`'s threads and every process and thread started under
    /// it from now on, at `hz` samples per CPU-second.
    pub fn attach(pid: u32, hz: u64) -> Result<Sampler, ProfileOff> {
        Sampler::attach_tree(&[pid], hz)
    }

    /// Sample every thread of the processes `pids` (a running tree, its
    /// root first: the root's children are its executions) and every
    /// process and thread they start from now on, at `hz` samples per
    /// CPU-second. A process of the tree that exits meanwhile is skipped;
    /// [`ProfileOff::Gone`] when none is left.
    pub fn attach_tree(pids: &[u32], hz: u64) -> Result<Sampler, ProfileOff> {
        let root = *pids.first().ok_or(ProfileOff::Gone)?;
        let period_ns = 1_000_000_000 / hz.clamp(1, 10_000);
        let (rings, kernel) = open_all(pids, period_ns)?;
        let mut folded = Folded::new(root);
        for pid in pids {
            seed(&mut folded, *pid);
        }
        let (stop_r, stop_w) = pipe().map_err(|e| ProfileOff::Failed { why: e.to_string() })?;
        let since = Arc::new(AtomicU64::new(0));
        let from = since.clone();
        let reader = std::thread::Builder::new()
            .name("kurabe-profile".into())
            .spawn(move || read_loop(rings, folded, stop_r, &from))
            .map_err(|e| ProfileOff::Failed { why: e.to_string() })?;
        Ok(Sampler {
            stop: stop_w,
            since,
            reader: Some(reader),
            period_ns,
            kernel,
        })
    }

    /// Count only the samples taken from now on (a load's warm-up ends:
    /// the tree is sampled from before it, so nothing it starts is
    /// missed, but its samples are not the measured phase's).
    pub fn count_from_now(&self) {
        self.since.store(sys::monotonic_ns(), Ordering::Relaxed);
    }

    /// Stop sampling and return what was read, the last records included
    /// (a tree that exited before keeps every sample it had).
    pub fn finish(mut self) -> Samples {
        let folded = self.end().unwrap_or_default();
        Samples {
            folded,
            period_ns: self.period_ns,
            kernel: self.kernel,
        }
    }

    fn end(&mut self) -> Option<Folded> {
        // SAFETY: a one-byte write to the pipe we own.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        self.reader.take()?.join().ok()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.reader.is_some() {
            self.end();
        }
    }
}

/// Whether an event like the sampler's opens on process `pid` (0: this
/// one; then closed at once): with kernel frames, without, or why not.
pub(crate) fn probe(pid: u32) -> Result<Kernel, ProfileOff> {
    let try_open = |kernel| sys::open(&attr(DEFAULT_PERIOD_NS, kernel), pid as i32, -1);
    let opened = match try_open(true) {
        Ok(_) => return Ok(Kernel::Sampled),
        Err(e) if denied(&e) => try_open(false).map(|_| Kernel::NotAllowed),
        Err(e) => Err(e),
    };
    match opened {
        // Refused on `pid` but not on this process: it is another user's.
        Err(e) if pid != 0 && denied(&e) && probe(0).is_ok() => Err(ProfileOff::OtherUser { pid }),
        other => other.map_err(off),
    }
}

/// The sample period at [`DEFAULT_HZ`], ns.
const DEFAULT_PERIOD_NS: u64 = 1_000_000_000 / DEFAULT_HZ;

/// The event's attributes: `cpu-clock` every `period_ns`, IP, TID, time
/// and callchain, MMAP2/COMM/FORK/EXIT records, inherited.
fn attr(period_ns: u64, kernel: bool) -> Attr {
    let mut flags = flag::INHERIT
        | flag::EXCLUDE_HV
        | flag::MMAP
        | flag::MMAP2
        | flag::COMM
        | flag::COMM_EXEC
        | flag::TASK
        | flag::WATERMARK
        | flag::SAMPLE_ID_ALL
        | flag::USE_CLOCKID;
    if !kernel {
        flags |= flag::EXCLUDE_KERNEL;
    }
    Attr {
        kind: sys::TYPE_SOFTWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: sys::SW_CPU_CLOCK,
        sample_period: period_ns,
        sample_type: sys::SAMPLE_IP | sys::SAMPLE_TID | sys::SAMPLE_TIME | sys::SAMPLE_CALLCHAIN,
        flags,
        wakeup_watermark: (RING_PAGES * sys::page_size() / 4) as u32,
        clockid: CLOCK_MONOTONIC,
        ..Attr::default()
    }
}

/// One ring per CPU for every thread of `pids`, kernel frames where
/// allowed; why not when no event can be opened.
fn open_all(pids: &[u32], period_ns: u64) -> Result<(Vec<Ring>, Kernel), ProfileOff> {
    let threads: Vec<u32> = pids.iter().flat_map(|p| threads_of(*p)).collect();
    match open_rings(&threads, &attr(period_ns, true)) {
        Ok(r) => Ok((r, Kernel::Sampled)),
        Err(e) if denied(&e) => match open_rings(&threads, &attr(period_ns, false)) {
            Ok(r) => Ok((r, Kernel::NotAllowed)),
            Err(e) => Err(off(e)),
        },
        Err(e) => Err(off(e)),
    }
}

fn denied(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

/// Why sampling is off, from the error of the last open.
fn off(e: std::io::Error) -> ProfileOff {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => ProfileOff::NotAllowed {
            paranoid: sys::paranoid(),
        },
        Some(libc::ENOSYS | libc::ENOENT | libc::EOPNOTSUPP) => ProfileOff::NoPerfEvents,
        Some(libc::ESRCH) => ProfileOff::Gone,
        _ => ProfileOff::Failed { why: e.to_string() },
    }
}

/// Open and map `attr` on every CPU for each of `threads`; the threads
/// after the first write into the first one's ring of that CPU. A thread
/// that exited since it was listed is skipped (its process's other
/// threads and children still carry events); ESRCH when all have.
fn open_rings(threads: &[u32], attr: &Attr) -> std::io::Result<Vec<Ring>> {
    let mut rings = Vec::new();
    for cpu in sys::online_cpus() {
        let mut ring: Option<Ring> = None;
        for tid in threads {
            let fd = match sys::open(attr, *tid as i32, cpu) {
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                fd => fd?,
            };
            match &mut ring {
                None => ring = Some(Ring::map(fd, RING_PAGES)?),
                Some(r) => {
                    sys::set_output(&fd, &r.fd)?;
                    r.extra.push(fd);
                }
            }
        }
        rings.extend(ring);
    }
    if rings.is_empty() {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(rings)
}

/// The threads of `pid` (itself when /proc lists none).
fn threads_of(pid: u32) -> Vec<u32> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task"));
    let mut tids: Vec<u32> = dir
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    if tids.is_empty() {
        tids.push(pid);
    }
    tids.sort_unstable();
    tids
}

/// What `/proc` says of `pid` now: its name and executable mappings.
fn seed(folded: &mut Folded, pid: u32) {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let maps: Vec<_> = maps.lines().filter_map(map_line).collect();
    folded.seed(pid, comm.trim(), &maps);
}

/// One executable line of `/proc/PID/maps`: start, end, offset, path.
fn map_line(line: &str) -> Option<(u64, u64, u64, String)> {
    let mut f = line.split_whitespace();
    let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
    if !perms.contains('x') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let path = f.nth(2).unwrap_or("//anon").to_owned();
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    Some((hex(start)?, hex(end)?, hex(offset)?, path))
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Records read but not yet folded: their bytes, and (time, start, end) each.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    index: Vec<(u64, usize, usize)>,
}

impl Pending {
    /// Fold, in time order, the records stamped before `cutoff`; keep the
    /// rest. Samples stamped before `since` are not counted (the other
    /// records still tell what each process maps and is named).
    fn fold_until(&mut self, cutoff: u64, since: u64, folded: &mut Folded) {
        self.index.sort_by_key(|r| r.0);
        let n = self.index.partition_point(|r| r.0 < cutoff);
        for (t, s, e) in &self.index[..n] {
            match decode(&self.bytes[*s..*e]) {
                Some(Record::Sample { .. }) if *t < since => {}
                Some(r) => folded.record(r),
                None => {}
            }
        }
        let rest: Vec<_> = self.index.drain(n..).collect();
        let mut bytes = Vec::with_capacity(rest.iter().map(|r| r.2 - r.1).sum());
        self.index.clear();
        for (t, s, e) in rest {
            self.index.push((t, bytes.len(), bytes.len() + e - s));
            bytes.extend_from_slice(&self.bytes[s..e]);
        }
        self.bytes = bytes;
        folded.drained();
    }
}

/// Drain the rings until a byte arrives on `stop`, then once more to the end.
fn read_loop(mut rings: Vec<Ring>, mut folded: Folded, stop: OwnedFd, since: &AtomicU64) -> Folded {
    let mut pending = Pending::default();
    let mut scratch = Vec::new();
    let mut hung = vec![false; rings.len()];
    loop {
        let stopping = wait(&rings, &mut hung, &stop);
        if stopping {
            for r in &rings {
                for fd in std::iter::once(&r.fd).chain(&r.extra) {
                    sys::enable(fd, false).unwrap_or(());
                }
            }
        }
        let cutoff = if stopping {
            u64::MAX
        } else {
            sys::monotonic_ns().saturating_sub(SLACK_NS)
        };
        for ring in &mut rings {
            ring.drain(&mut scratch, &mut |raw| {
                let t = time(raw).unwrap_or(0);
                let s = pending.bytes.len();
                pending.bytes.extend_from_slice(raw);
                pending.index.push((t, s, pending.bytes.len()));
            });
        }
        pending.fold_until(cutoff, since.load(Ordering::Relaxed), &mut folded);
        if stopping {
            return folded;
        }
    }
}

/// Sleep until a ring passes its watermark, 250 ms pass, or `stop` is
/// written; whether it was `stop`. A ring whose task has exited polls
/// as hung up for ever: it is marked in `hung` and left out after that
/// (its last records are read on stop).
fn wait(rings: &[Ring], hung: &mut [bool], stop: &OwnedFd) -> bool {
    let mut fds: Vec<libc::pollfd> = rings
        .iter()
        .zip(hung.iter())
        .map(|(r, h)| if *h { -1 } else { r.fd.as_raw_fd() })
        .chain([stop.as_raw_fd()])
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is a live array of pollfd of the length passed.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 250) };
    for (h, p) in hung.iter_mut().zip(&fds) {
        *h |= p.revents & (libc::POLLHUP | libc::POLLERR) != 0;
    }
    fds.last().is_some_and(|p| p.revents != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_executable_mappings_are_seeded() {
        let l = "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234  /usr/bin/true";
        let m = map_line(l).unwrap();
        assert_eq!(
            m,
            (
                0x55d0c0a00000,
                0x55d0c0a21000,
                0x2000,
                "/usr/bin/true".into()
            )
        );
        assert!(map_line("7ffd-7ffe rw-p 00000000 00:00 0  [stack]").is_none());
    }
}
