//! Process-tree sampler: CPU, RSS, PSS and USS of a root process and all its
//! descendants, one [`Sample`] per call.
//!
//! Descendants are found by a ppid scan of `/proc/*/stat` (this kernel may
//! lack `/proc/PID/task/*/children`), united with the members of the run's
//! cgroup when there is one (that catches processes that double-forked out of
//! the tree). The scan ("discovery") runs at most every 0.5 s and skips PIDs
//! already known to be outside the tree; in between, the known members'
//! `stat` files are re-read through open descriptors (`pread`), which is
//! what keeps a 10 Hz watch cheap.
//!
//! CPU does not lose children that exit between samples: each process counts
//! utime+stime+cutime+cstime, so a child's whole life moves into its parent's
//! cutime when the parent reaps it. The sampler subtracts what it had already
//! counted for a vanished process from the growth of its nearest surviving
//! ancestor's cutime (bounded by that growth, so children that were never
//! waited for are not subtracted twice). A process found by a later discovery
//! counts its whole CPU if it started after the previous discovery. With a
//! cgroup, its CPU counter is reported too and is the better figure.
//!
//! PSS costs time proportional to a process's mapped pages (`smaps_rollup`
//! walks its page tables: milliseconds for a few hundred MB), so reads are
//! budgeted by a token bucket: on average at most `pss_budget` of one core,
//! stalest process first; a process not re-read keeps its last value, a new
//! process is read at once. Because a process's PSS changes when a sibling
//! forks or exits, every member is re-read after the membership changed (at
//! most every 0.5 s), and no value is kept longer than 5 s: the budget is a
//! target, staleness the hard bound. The sampler measures its own CPU with the thread
//! CPU clock.
//!
//! This module never prints and never kills anything.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use kurabe_model::probe::TreeSize;
use kurabe_model::tree_counters::Counts;

use crate::cgroup::CgroupReader;
use crate::error::{ProbeError, Result};
use crate::proc_counters::{counts_of, CounterFiles, Totals, Unread, SLOTS};
use crate::procfs::{self, Rollup, Stat};

/// Most time between two discovery scans of /proc for new tree members.
const DISCOVERY_EVERY: Duration = Duration::from_millis(500);

/// Most time between two forced re-reads of every PSS after the tree changed.
const FULL_REFRESH_EVERY: Duration = Duration::from_millis(500);

/// Oldest a process's PSS value may get before it is re-read regardless of budget.
const MAX_STALE: Duration = Duration::from_secs(5);

/// How a [`TreeSampler`] behaves.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Interval the caller samples at (sets the PSS read budget per sample).
    pub interval: Duration,
    /// Share of one core the sampler may spend reading `smaps_rollup` on
    /// average (0.004 = 0.4 %; new processes are read at once regardless).
    pub pss_budget: f64,
    /// Count the CPU of every tree process that started after the root did, from
    /// the first sample on (for a command kurabe just started); otherwise the
    /// first sample is the baseline and counts nothing.
    pub count_from_root_start: bool,
    /// Read the kernel's counters too (`io` and each thread's `sched`, a
    /// few more files per process per sample); off where only memory is
    /// wanted.
    pub counters: bool,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(500),
            pss_budget: 0.004,
            count_from_root_start: false,
            counters: true,
        }
    }
}

/// One snapshot of the tree.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// When the sample was taken (after reading).
    pub at: Option<Instant>,
    /// True for the first sample of a sampler.
    pub first: bool,
    /// CPU seconds of the tree since the previous sample, from `/proc`.
    pub cpu_seconds_proc: f64,
    /// CPU seconds since the previous sample from the cgroup counter, if any.
    pub cpu_seconds_cgroup: Option<f64>,
    /// The kernel's counters of the tree since the previous sample (none
    /// at the first, unless it counts from the root's start); a counter
    /// whose file could not be read for some member is absent.
    pub counters: Counts,
    /// The tree's memory and its processes (zombies included) and threads:
    /// what a watch's series keeps of the sample, as it is.
    pub size: TreeSize,
    /// Processes whose PSS is the value of an earlier sample (budget).
    pub pss_stale: u32,
    /// Processes whose `smaps_rollup` could not be read (RSS stands in).
    pub pss_unreadable: u32,
    /// True while the root exists and is not a zombie.
    pub root_alive: bool,
    /// Root's VmHWM (peak RSS), bytes.
    pub root_hwm_bytes: Option<u64>,
    /// PIDs in the tree.
    pub pids: Vec<u32>,
}

/// What the sampler remembers of a process between samples.
#[derive(Debug, Clone, Copy)]
struct Prev {
    start: u64,
    ppid: u32,
    /// Its cumulative CPU and counters ([`crate::proc_counters`]).
    t: Totals,
}

#[derive(Debug, Clone, Copy)]
struct Smaps {
    start: u64,
    rollup: Rollup,
    read_at: u64,
    read_when: Instant,
    unreadable: bool,
}

/// Accumulated cost of a sampler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    /// Thread CPU spent in [`TreeSampler::sample`], nanoseconds.
    pub cpu_ns: u64,
    /// Σ over samples of the processes sampled.
    pub process_samples: u64,
    /// `smaps_rollup` reads deferred by the budget.
    pub pss_deferred: u64,
    /// Samples taken.
    pub samples: u64,
}

/// Samples a process tree. See the module docs.
#[derive(Debug)]
pub struct TreeSampler {
    root: u32,
    root_start: u64,
    config: SamplerConfig,
    cgroup: Option<CgroupReader>,
    prev: HashMap<u32, Prev>,
    /// Boot ticks at the last discovery scan: a process found later that
    /// started after this counts its whole CPU.
    prev_boot_ticks: u64,
    /// When the last discovery scan (readdir of /proc) ran.
    last_discovery: Option<Instant>,
    /// PSS read budget left, nanoseconds of CPU (a token bucket refilled each sample).
    pss_tokens_ns: i64,
    /// Members at the last full PSS refresh.
    refreshed_members: Vec<u32>,
    /// When every member's PSS was last re-read.
    last_full_refresh: Option<Instant>,
    prev_cgroup_ns: Option<u64>,
    smaps: HashMap<u32, Smaps>,
    hz: f64,
    page: u64,
    buf: Vec<u8>,
    cost: Cost,
    /// Open `/proc/PID/stat` of tree members, re-read with pread.
    stat_fds: HashMap<u32, File>,
    /// Open `/proc/PID/smaps_rollup` of tree members.
    smaps_fds: HashMap<u32, File>,
    /// The `io` and thread `sched` files of members.
    counter_files: CounterFiles,
    /// PIDs seen at the last scan that are not in the tree. A process never
    /// joins a tree it is not in (ppid only changes to a reaper outside it),
    /// and a PID listed in two consecutive scans is the same process, so
    /// these are not read again: the scan costs a readdir plus the tree.
    outsiders: HashSet<u32>,
}

impl TreeSampler {
    /// A sampler for `root` and its descendants with default settings.
    pub fn new(root: u32) -> Result<Self> {
        Self::with_config(root, SamplerConfig::default(), None)
    }

    /// A sampler with explicit settings and, for a command started in its own
    /// cgroup, that cgroup's counters.
    pub fn with_config(
        root: u32,
        config: SamplerConfig,
        cgroup: Option<CgroupReader>,
    ) -> Result<Self> {
        let path = format!("/proc/{root}/stat");
        let stat = match procfs::read(&path) {
            Err(e) if procfs::out_of_descriptors(&e) => return Err(ProbeError::read(path, e)),
            text => text.ok().and_then(|t| procfs::parse_stat(&t)),
        }
        .ok_or(ProbeError::NoSuchProcess(root))?;
        let prev_cgroup_ns = if config.count_from_root_start {
            Some(0)
        } else {
            cgroup.as_ref().and_then(CgroupReader::cpu_ns)
        };
        Ok(Self::fresh(
            root,
            stat.starttime,
            config,
            cgroup,
            prev_cgroup_ns,
        ))
    }

    /// A sampler that has taken no sample yet.
    fn fresh(
        root: u32,
        root_start: u64,
        config: SamplerConfig,
        cgroup: Option<CgroupReader>,
        prev_cgroup_ns: Option<u64>,
    ) -> Self {
        Self {
            root,
            root_start,
            config,
            cgroup,
            prev: HashMap::new(),
            prev_boot_ticks: 0,
            last_discovery: None,
            pss_tokens_ns: 0,
            refreshed_members: Vec::new(),
            last_full_refresh: None,
            prev_cgroup_ns,
            smaps: HashMap::new(),
            hz: procfs::clock_ticks() as f64,
            page: procfs::page_size(),
            buf: Vec::with_capacity(8192),
            stat_fds: HashMap::new(),
            smaps_fds: HashMap::new(),
            cost: Cost::default(),
            counter_files: CounterFiles::default(),
            outsiders: HashSet::new(),
        }
    }

    /// PID of the root.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// The cgroup counters this sampler reads, if any.
    pub fn cgroup(&self) -> Option<&CgroupReader> {
        self.cgroup.as_ref()
    }

    /// What sampling has cost so far.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// Take one sample.
    ///
    /// [`ProbeError::NoSuchProcess`] when the first sample finds no root;
    /// [`ProbeError::OutOfDescriptors`] when a /proc file could not be
    /// opened for want of descriptors: no sample now, the sampler's state
    /// is unchanged, and the next sample covers the whole interval.
    pub fn sample(&mut self) -> Result<Sample> {
        let t0 = procfs::thread_cpu_ns();
        let first = self.cost.samples == 0;
        let boot_now = procfs::boot_ticks();
        let in_cgroup = self
            .cgroup
            .as_ref()
            .map(CgroupReader::pids)
            .unwrap_or_default();
        let discover = self.discovery_due();
        let stats = self.scan(&in_cgroup, discover)?;
        let root_stat = stats
            .get(&self.root)
            .filter(|s| s.starttime == self.root_start);
        if first && root_stat.is_none() {
            return Err(ProbeError::NoSuchProcess(self.root));
        }
        let root_alive = root_stat.is_some_and(|s| s.state != b'Z' && s.state != b'X');
        let mut sample = self.measure(&stats, &in_cgroup, first, root_alive);
        if discover {
            self.prev_boot_ticks = boot_now;
            self.last_discovery = Some(Instant::now());
        }
        sample.at = Some(Instant::now());
        self.cost.samples += 1;
        self.cost.process_samples += u64::from(sample.size.processes);
        self.cost.cpu_ns += procfs::thread_cpu_ns().saturating_sub(t0);
        Ok(sample)
    }

    /// Discovery (readdir of /proc, a fifth of the cost at 10 Hz) runs at
    /// most every DISCOVERY_EVERY; in between the known members are re-read.
    fn discovery_due(&self) -> bool {
        self.last_discovery
            .is_none_or(|t| t.elapsed() + self.config.interval / 2 >= DISCOVERY_EVERY)
    }

    /// The sample's figures from this scan's `stats`; the counters are kept
    /// for the next sample's deltas.
    fn measure(
        &mut self,
        stats: &HashMap<u32, Stat>,
        in_cgroup: &[u32],
        first: bool,
        root_alive: bool,
    ) -> Sample {
        let members = self.members(stats, in_cgroup);
        self.forget_outside(stats, &members);
        let mut sample = Sample {
            first,
            root_alive,
            ..Sample::default()
        };
        let (cur, unread) = self.current(stats, &members);
        let grown = self.growth(&cur, first);
        sample.cpu_seconds_proc = grown[0] as f64 / self.hz;
        sample.counters = counts_of(&grown, self.hz, unread);
        sample.cpu_seconds_cgroup = self.cgroup_cpu_delta();
        self.memory(stats, &members, &mut sample);
        if root_alive {
            sample.root_hwm_bytes = self.root_hwm();
        }
        self.prev = cur;
        sample.pids = members;
        sample
    }

    /// Close the files of processes that left the tree and note the listed
    /// processes that are not in it, so the next scan skips them.
    fn forget_outside(&mut self, stats: &HashMap<u32, Stat>, members: &[u32]) {
        self.stat_fds
            .retain(|p, _| members.binary_search(p).is_ok());
        self.smaps_fds
            .retain(|p, _| members.binary_search(p).is_ok());
        self.counter_files.retain(members);
        self.outsiders = stats
            .keys()
            .copied()
            .filter(|p| members.binary_search(p).is_err())
            .chain(
                self.outsiders
                    .iter()
                    .copied()
                    .filter(|p| !stats.contains_key(p)),
            )
            .collect();
    }

    /// CPU seconds the cgroup used since the last sample (0 at the first).
    fn cgroup_cpu_delta(&mut self) -> Option<f64> {
        let now = self.cgroup.as_ref()?.cpu_ns()?;
        let before = self.prev_cgroup_ns.unwrap_or(now);
        self.prev_cgroup_ns = Some(now);
        Some(now.saturating_sub(before) as f64 / 1e9)
    }

    /// The root's VmHWM, read about once a second: it only grows, and
    /// `status` is a costly file.
    fn root_hwm(&self) -> Option<u64> {
        let hwm_every = (1.0 / self.config.interval.as_secs_f64().max(1e-3))
            .round()
            .max(1.0) as u64;
        if self.cost.samples % hwm_every != 0 {
            return None;
        }
        procfs::read(format!("/proc/{}/status", self.root))
            .ok()
            .and_then(|t| procfs::field_kb_bytes(&t, "VmHWM"))
    }

    /// stat of every process that may be in the tree (the ppid scan); known
    /// outsiders that are still listed are skipped (see `outsiders`).
    /// Out of descriptors is an error: a process whose stat could not be
    /// opened would look like one that exited, and the root like the end.
    fn scan(&mut self, in_cgroup: &[u32], discover: bool) -> Result<HashMap<u32, Stat>> {
        let mut out = HashMap::with_capacity(64);
        let pids = if discover {
            let pids = procfs::pids().map_err(|e| ProbeError::read("/proc", e))?;
            let listed: HashSet<u32> = pids.iter().copied().collect();
            self.outsiders.retain(|p| listed.contains(p));
            pids
        } else {
            self.known_pids(in_cgroup)
        };
        for pid in pids {
            if self.outsiders.contains(&pid) && in_cgroup.binary_search(&pid).is_err() {
                continue;
            }
            match procfs::read_cached(&mut self.stat_fds, pid, "stat", &mut self.buf) {
                Err(e) if procfs::out_of_descriptors(&e) => {
                    return Err(ProbeError::read(format!("/proc/{pid}/stat"), e));
                }
                Err(_) => continue, // exited meanwhile
                Ok(()) => {}
            }
            if let Some(s) = std::str::from_utf8(&self.buf)
                .ok()
                .and_then(procfs::parse_stat)
            {
                out.insert(pid, s);
            }
        }
        Ok(out)
    }

    /// The PIDs to re-read between discoveries: last sample's members, the
    /// root and the cgroup's processes.
    fn known_pids(&self, in_cgroup: &[u32]) -> Vec<u32> {
        let mut known: Vec<u32> = self.prev.keys().copied().collect();
        known.push(self.root);
        known.extend_from_slice(in_cgroup);
        known.sort_unstable();
        known.dedup();
        known
    }

    /// The tree: root plus descendants by ppid, plus the cgroup's processes.
    fn members(&self, stats: &HashMap<u32, Stat>, in_cgroup: &[u32]) -> Vec<u32> {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for s in stats.values() {
            children.entry(s.ppid).or_default().push(s.pid);
        }
        let mut seen = HashSet::new();
        let mut stack = Vec::new();
        if stats
            .get(&self.root)
            .is_some_and(|s| s.starttime == self.root_start)
        {
            stack.push(self.root);
        }
        stack.extend(in_cgroup.iter().copied().filter(|p| stats.contains_key(p)));
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            if let Some(kids) = children.get(&pid) {
                stack.extend(kids.iter().copied());
            }
        }
        let mut v: Vec<u32> = seen.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// The members' cumulative CPU and counters now, and which files
    /// could not be read. A file of a process that exited meanwhile keeps
    /// its last values.
    fn current(
        &mut self,
        stats: &HashMap<u32, Stat>,
        members: &[u32],
    ) -> (HashMap<u32, Prev>, Unread) {
        let mut cur = HashMap::with_capacity(members.len());
        let mut unread = Unread::default();
        for pid in members {
            let Some(s) = stats.get(pid) else { continue };
            let (io, sched) = if self.config.counters {
                let io = self
                    .counter_files
                    .io(*pid)
                    .map_err(|denied| unread.io |= denied);
                let sched = self.counter_files.sched(*pid, s.starttime);
                (io.ok(), sched.map_err(|denied| unread.sched |= denied).ok())
            } else {
                unread = Unread {
                    io: true,
                    sched: true,
                };
                (None, None)
            };
            let before = self
                .prev
                .get(pid)
                .filter(|p| p.start == s.starttime)
                .map(|p| p.t)
                .unwrap_or_default();
            let t = Totals::of(s, io, sched, &before);
            cur.insert(
                *pid,
                Prev {
                    start: s.starttime,
                    ppid: s.ppid,
                    t,
                },
            );
        }
        (cur, unread)
    }

    /// What the tree used since the previous sample, per slot (see module docs).
    fn growth(&self, cur: &HashMap<u32, Prev>, first: bool) -> [u64; SLOTS] {
        let threshold = if first {
            self.config.count_from_root_start.then_some(self.root_start)
        } else {
            Some(self.prev_boot_ticks.saturating_sub(1))
        };
        std::array::from_fn(|slot| slot_delta(&self.prev, cur, threshold, slot))
    }

    /// Fill the memory fields of `sample`, reading `smaps_rollup` within the budget.
    fn memory(&mut self, stats: &HashMap<u32, Stat>, members: &[u32], sample: &mut Sample) {
        self.smaps
            .retain(|pid, m| stats.get(pid).is_some_and(|s| s.starttime == m.start));
        let budget_ns = (self.config.interval.as_nanos() as f64 * self.config.pss_budget) as i64;
        // Token bucket: an expensive read (a big process) is paid back by
        // skipping later samples, so the average stays within the budget.
        self.pss_tokens_ns = (self.pss_tokens_ns + budget_ns).min(budget_ns.saturating_mul(4));
        let now = Instant::now();
        let force_all = self.full_refresh_due(members, now);
        for (key, pid) in self.read_order(stats, members) {
            let known = key > 0;
            let too_old = self
                .smaps
                .get(&pid)
                .is_some_and(|m| now.duration_since(m.read_when) >= MAX_STALE);
            if known && !force_all && !too_old && self.pss_tokens_ns <= 0 {
                sample.pss_stale += 1;
                self.cost.pss_deferred += 1;
                continue;
            }
            let t0 = procfs::thread_cpu_ns();
            self.read_smaps(pid, stats[&pid].starttime, now);
            self.pss_tokens_ns -= procfs::thread_cpu_ns().saturating_sub(t0) as i64;
        }
        self.add_memory(stats, members, sample);
    }

    /// A PSS value goes stale without its process doing anything: when a
    /// sibling forks or exits, the share of every shared page changes. So
    /// after the tree's membership changed (at most every FULL_REFRESH_EVERY)
    /// every process is re-read, and none keeps a value older than MAX_STALE,
    /// whatever the budget says. True when this sample re-reads them all.
    fn full_refresh_due(&mut self, members: &[u32], now: Instant) -> bool {
        let due = members != self.refreshed_members.as_slice()
            && self
                .last_full_refresh
                .is_none_or(|t| now.duration_since(t) >= FULL_REFRESH_EVERY);
        if due {
            self.refreshed_members = members.to_vec();
            self.last_full_refresh = Some(now);
        }
        due
    }

    /// Live members as (sample of the last read + 1, PID): never-read first,
    /// then stalest first.
    fn read_order(&self, stats: &HashMap<u32, Stat>, members: &[u32]) -> Vec<(u64, u32)> {
        let mut order: Vec<(u64, u32)> = members
            .iter()
            .filter(|pid| stats.get(pid).is_some_and(|s| s.state != b'Z'))
            .map(|pid| (self.smaps.get(pid).map_or(0, |m| m.read_at + 1), *pid))
            .collect();
        order.sort_unstable();
        order
    }

    /// Read the `smaps_rollup` of `pid` (started at `start`) into the cache;
    /// another user's process is cached as unreadable.
    fn read_smaps(&mut self, pid: u32, start: u64, now: Instant) {
        let (rollup, unreadable) =
            match procfs::read_cached(&mut self.smaps_fds, pid, "smaps_rollup", &mut self.buf) {
                Ok(()) => (
                    procfs::parse_rollup(&String::from_utf8_lossy(&self.buf)),
                    false,
                ),
                Err(e) if e.kind() == ErrorKind::PermissionDenied => (Rollup::default(), true),
                Err(_) => return, // exited meanwhile
            };
        let read_at = self.cost.samples;
        self.smaps.insert(
            pid,
            Smaps {
                start,
                rollup,
                read_at,
                read_when: now,
                unreadable,
            },
        );
    }

    /// Sum the members' memory into `sample`: the cached rollups, RSS from
    /// `stat` where there is none.
    fn add_memory(&self, stats: &HashMap<u32, Stat>, members: &[u32], sample: &mut Sample) {
        for pid in members {
            let Some(s) = stats.get(pid) else { continue };
            sample.size.processes += 1;
            sample.size.threads += s.num_threads;
            let rss_stat = s.rss_pages * self.page;
            match self.smaps.get(pid) {
                Some(m) if !m.unreadable => add_rollup(sample, &m.rollup),
                Some(_) => {
                    // Another user's process: RSS is all we may know.
                    sample.pss_unreadable += 1;
                    sample.size.rss_bytes += rss_stat;
                    sample.size.pss_bytes += rss_stat;
                    sample.size.uss_bytes += rss_stat;
                }
                None => sample.size.rss_bytes += rss_stat,
            }
        }
    }
}

/// Add one process's `smaps_rollup` totals to `sample`.
fn add_rollup(sample: &mut Sample, r: &Rollup) {
    sample.size.rss_bytes += r.rss;
    sample.size.pss_bytes += r.pss;
    sample.size.pss_anon_bytes += r.pss_anon;
    sample.size.pss_file_bytes += r.pss_file;
    sample.size.pss_shmem_bytes += r.pss_shmem;
    sample.size.uss_bytes += r.uss;
    sample.size.swap_bytes += r.swap;
}

/// Growth of one slot (CPU ticks, a counter) between two scans of a tree.
///
/// `prev`/`cur` map PID → (start, ppid, totals: cumulative values and the
/// part of each from reaped children). A process present in both counts
/// its growth. A process only in `cur` counts fully when it started at or
/// after `new_since` (boot ticks; `None` = baseline, counts 0). A process
/// only in `prev` was, if its nearest surviving ancestor reaped it,
/// absorbed into that ancestor's children part: what was already counted
/// for it is subtracted from that growth (never more than the growth).
fn slot_delta(
    prev: &HashMap<u32, Prev>,
    cur: &HashMap<u32, Prev>,
    new_since: Option<u64>,
    slot: usize,
) -> u64 {
    let mut delta: u64 = 0;
    let mut absorbed: HashMap<u32, u64> = HashMap::new();
    for (pid, c) in cur {
        match prev.get(pid).filter(|p| p.start == c.start) {
            Some(p) => {
                delta += c.t.total[slot].saturating_sub(p.t.total[slot]);
                let grew = c.t.children[slot].saturating_sub(p.t.children[slot]);
                absorbed.insert(*pid, grew);
            }
            None => {
                if new_since.is_some_and(|t| c.start >= t) {
                    delta += c.t.total[slot];
                }
            }
        }
    }
    delta.saturating_sub(counted_twice(prev, cur, &absorbed, slot))
}

/// What was already counted (in `slot`) for processes that left between
/// the scans and that a surviving ancestor reaped (per ancestor, never
/// more than the ancestor's growth in reaped children's part, `absorbed`).
fn counted_twice(
    prev: &HashMap<u32, Prev>,
    cur: &HashMap<u32, Prev>,
    absorbed: &HashMap<u32, u64>,
    slot: usize,
) -> u64 {
    let mut bucket: HashMap<u32, u64> = HashMap::new();
    for (pid, p) in prev {
        if cur.get(pid).is_some_and(|c| c.start == p.start) {
            continue;
        }
        let mut anc = p.ppid;
        let mut hops = 0;
        while !absorbed.contains_key(&anc) && hops < 64 {
            match prev.get(&anc) {
                Some(a) => anc = a.ppid,
                None => break,
            }
            hops += 1;
        }
        if absorbed.contains_key(&anc) {
            *bucket.entry(anc).or_default() += p.t.total[slot];
        }
    }
    bucket
        .into_iter()
        .map(|(anc, counted)| counted.min(absorbed[&anc]))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(start: u64, ppid: u32, own: u64, children: u64) -> Prev {
        let mut t = Totals::default();
        t.total[0] = own + children;
        t.children[0] = children;
        Prev { start, ppid, t }
    }

    fn cpu_delta(
        prev: &HashMap<u32, Prev>,
        cur: &HashMap<u32, Prev>,
        new_since: Option<u64>,
    ) -> u64 {
        slot_delta(prev, cur, new_since, 0)
    }

    #[test]
    fn growth_of_surviving_processes() {
        let prev = HashMap::from([(1, p(10, 0, 100, 0)), (2, p(11, 1, 50, 0))]);
        let cur = HashMap::from([(1, p(10, 0, 130, 0)), (2, p(11, 1, 60, 0))]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 40);
    }

    #[test]
    fn reaped_child_is_not_counted_twice() {
        // Child 2 had 50 ticks at the last sample, used 20 more, exited and was
        // reaped by 1: 1's cutime grows by 70. Only the 20 are new.
        let prev = HashMap::from([(1, p(10, 0, 100, 0)), (2, p(11, 1, 50, 0))]);
        let cur = HashMap::from([(1, p(10, 0, 100, 70))]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 20);
    }

    #[test]
    fn short_lived_child_between_samples_is_counted() {
        // A child born and reaped between samples only shows in cutime.
        let prev = HashMap::from([(1, p(10, 0, 100, 0))]);
        let cur = HashMap::from([(1, p(10, 0, 100, 35))]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 35);
    }

    #[test]
    fn grandchild_reaped_through_dead_parent() {
        // 3 (child of 2) and 2 (child of 1) both exited; 1 reaped 2 which had reaped 3.
        let prev = HashMap::from([
            (1, p(10, 0, 100, 0)),
            (2, p(11, 1, 10, 0)),
            (3, p(12, 2, 30, 0)),
        ]);
        let cur = HashMap::from([(1, p(10, 0, 100, 10 + 5 + 30 + 7))]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 12);
    }

    #[test]
    fn unreaped_orphan_is_not_subtracted_from_nothing() {
        // 2 exited but 1 never waited (autoreap): 1's cutime does not grow.
        let prev = HashMap::from([(1, p(10, 0, 100, 0)), (2, p(11, 1, 50, 0))]);
        let cur = HashMap::from([(1, p(10, 0, 104, 0))]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 4);
    }

    #[test]
    fn new_process_counts_fully_only_when_born_after_threshold() {
        let prev = HashMap::from([(1, p(10, 0, 100, 0))]);
        let cur = HashMap::from([
            (1, p(10, 0, 100, 0)),
            (5, p(25, 1, 8, 0)),
            (6, p(5, 1, 900, 0)),
        ]);
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 8);
        assert_eq!(cpu_delta(&HashMap::new(), &cur, None), 0);
    }

    #[test]
    fn pid_reuse_is_a_new_process() {
        let prev = HashMap::from([(1, p(10, 0, 100, 0)), (2, p(11, 1, 500, 0))]);
        let cur = HashMap::from([(1, p(10, 0, 100, 0)), (2, p(30, 1, 3, 0))]);
        // Old 2 vanished unreaped by 1 (no cutime growth); new 2 born after 20.
        assert_eq!(cpu_delta(&prev, &cur, Some(20)), 3);
    }
}
