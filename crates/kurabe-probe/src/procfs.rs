//! Parsers and readers for the /proc files the probes use.
//!
//! Parsing is pure (`parse_*` take the file text) so it is unit-tested with
//! fixed strings; readers reuse one buffer to keep the sampler's cost low.
//! Nothing here keeps state between calls.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Fields of `/proc/PID/stat` the sampler needs. CPU times are clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Process ID.
    pub pid: u32,
    /// State letter (`R`, `S`, `Z`, …).
    pub state: u8,
    /// Parent PID.
    pub ppid: u32,
    /// Process group ID.
    pub pgrp: u32,
    /// User CPU of the process (all its threads, live and exited), ticks.
    pub utime: u64,
    /// System CPU of the process, ticks.
    pub stime: u64,
    /// User CPU of waited-for (reaped) children, ticks.
    pub cutime: u64,
    /// System CPU of waited-for children, ticks.
    pub cstime: u64,
    /// Threads.
    pub num_threads: u32,
    /// Start time after boot, ticks (with the PID, identifies a process across PID reuse).
    pub starttime: u64,
    /// Resident pages.
    pub rss_pages: u64,
    /// Minor faults of the process (all its threads).
    pub minflt: u64,
    /// Minor faults of waited-for children.
    pub cminflt: u64,
    /// Major faults of the process.
    pub majflt: u64,
    /// Major faults of waited-for children.
    pub cmajflt: u64,
}

impl Stat {
    /// utime + stime + cutime + cstime: the process's CPU plus that of every child it reaped.
    pub fn total_ticks(&self) -> u64 {
        self.utime + self.stime + self.cutime + self.cstime
    }

    /// cutime + cstime.
    pub fn children_ticks(&self) -> u64 {
        self.cutime + self.cstime
    }
}

/// Parse `/proc/PID/stat`. The command name may contain spaces and parentheses,
/// so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); field n is rest[n - 3].
    let f = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    Some(Stat {
        pid,
        state: *rest.first()?.as_bytes().first()?,
        ppid: f(4)? as u32,
        pgrp: f(5)? as u32,
        utime: f(14)?,
        stime: f(15)?,
        cutime: f(16)?,
        cstime: f(17)?,
        num_threads: f(20)? as u32,
        starttime: f(22)?,
        rss_pages: f(24)?,
        minflt: f(10)?,
        cminflt: f(11)?,
        majflt: f(12)?,
        cmajflt: f(13)?,
    })
}

/// The I/O counters of `/proc/PID/io`: the process's threads, live and
/// exited, and every child it reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Io {
    /// Bytes passed to read-family calls.
    pub rchar: u64,
    /// Bytes passed to write-family calls.
    pub wchar: u64,
    /// Read-family calls.
    pub syscr: u64,
    /// Write-family calls.
    pub syscw: u64,
}

/// Parse `/proc/PID/io`; `None` when a field is missing.
pub fn parse_io(text: &str) -> Option<Io> {
    let field = |key: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == key).then(|| v.trim().parse().ok())?
        })
    };
    Some(Io {
        rchar: field("rchar")?,
        wchar: field("wchar")?,
        syscr: field("syscr")?,
        syscw: field("syscw")?,
    })
}

/// The scheduler counters of one thread (`/proc/PID/task/TID/sched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sched {
    /// `nr_voluntary_switches`.
    pub voluntary: u64,
    /// `nr_involuntary_switches`.
    pub involuntary: u64,
    /// `se.nr_migrations`.
    pub migrations: u64,
}

/// Parse a thread's `sched` file; `None` when a counter is missing
/// (a kernel without `CONFIG_SCHED_DEBUG`).
pub fn parse_sched(text: &str) -> Option<Sched> {
    let (mut vol, mut invol, mut mig) = (None, None, None);
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let slot = match k.trim() {
            "nr_voluntary_switches" => &mut vol,
            "nr_involuntary_switches" => &mut invol,
            "se.nr_migrations" => &mut mig,
            _ => continue,
        };
        *slot = v.trim().parse().ok();
    }
    Some(Sched {
        voluntary: vol?,
        involuntary: invol?,
        migrations: mig?,
    })
}

/// Totals of `/proc/PID/smaps_rollup`, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rollup {
    /// Rss.
    pub rss: u64,
    /// Pss.
    pub pss: u64,
    /// Pss_Anon (kernel ≥ 5.9; 0 before).
    pub pss_anon: u64,
    /// Pss_File.
    pub pss_file: u64,
    /// Pss_Shmem.
    pub pss_shmem: u64,
    /// Private_Clean + Private_Dirty.
    pub uss: u64,
    /// Swap.
    pub swap: u64,
}

/// Parse `/proc/PID/smaps_rollup` (or a summed `smaps`): `Key:  N kB` lines.
pub fn parse_rollup(text: &str) -> Rollup {
    let mut r = Rollup::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Some(kb) = parse_kb(value) else { continue };
        let bytes = kb * 1024;
        match key {
            "Rss" => r.rss += bytes,
            "Pss" => r.pss += bytes,
            "Pss_Anon" => r.pss_anon += bytes,
            "Pss_File" => r.pss_file += bytes,
            "Pss_Shmem" => r.pss_shmem += bytes,
            "Private_Clean" | "Private_Dirty" => r.uss += bytes,
            "Swap" => r.swap += bytes,
            _ => {}
        }
    }
    r
}

/// Parse `"   1234 kB"` into 1234.
fn parse_kb(value: &str) -> Option<u64> {
    value.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// Value of a `Key: N kB` line of `/proc/PID/status` or `/proc/meminfo`, bytes.
pub fn field_kb_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == key).then(|| parse_kb(v).map(|kb| kb * 1024))?
    })
}

/// Read a whole file into `buf` (cleared first). Returns the I/O error as is.
pub fn read_into(path: &Path, buf: &mut String) -> std::io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_string(buf)?;
    Ok(())
}

/// Re-read a /proc file through an open descriptor: `pread` at offset 0 makes
/// the kernel generate fresh content, and skips the path lookup of an open.
/// A read shorter than the buffer is the whole file (seq_file fills the
/// buffer), so one syscall usually suffices. Fails with ESRCH once the process
/// has exited, even if its PID was reused.
pub fn pread_all(f: &File, out: &mut Vec<u8>) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    out.clear();
    let mut off = 0;
    loop {
        if out.capacity() - out.len() < 2048 {
            out.reserve(8192);
        }
        let len = out.len();
        out.resize(out.capacity(), 0);
        let n = f.read_at(&mut out[len..], off)?;
        let room = out.len() - len;
        out.truncate(len + n);
        if n < room {
            return Ok(());
        }
        off += n as u64;
    }
}

/// Read `/proc/PID/<name>` into `buf` through the descriptor cached in
/// `cache`, opening (and caching) it on first use or after the cached one
/// failed (process gone; a reused PID then opens the new process's file).
pub fn read_cached(
    cache: &mut std::collections::HashMap<u32, File>,
    pid: u32,
    name: &str,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    if let Some(f) = cache.get(&pid) {
        if pread_all(f, buf).is_ok() {
            return Ok(());
        }
        cache.remove(&pid);
    }
    let f = File::open(format!("/proc/{pid}/{name}"))?;
    pread_all(&f, buf)?;
    cache.insert(pid, f);
    Ok(())
}

/// True for "too many open files" (EMFILE, this process; ENFILE, the
/// system): the file exists, kurabe could not open it now.
pub fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Read a whole small file into a new string.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

/// Every numeric entry of `/proc`: the PIDs (thread-group leaders) alive now.
pub fn pids() -> std::io::Result<Vec<u32>> {
    let mut out = Vec::with_capacity(256);
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        if let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
            out.push(pid);
        }
    }
    Ok(out)
}

/// Clock ticks per second (`USER_HZ`, the unit of the stat CPU fields).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Online CPUs.
pub fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Time since boot (CLOCK_BOOTTIME) in clock ticks, comparable with [`Stat::starttime`].
pub fn boot_ticks() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    let hz = clock_ticks();
    ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000
}

/// CPU time consumed by the calling thread, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user + system) of this whole process so far, seconds.
pub fn self_cpu_seconds() -> f64 {
    // SAFETY: zeroed rusage is a valid value and getrusage only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    timeval_s(ru.ru_utime) + timeval_s(ru.ru_stime)
}

/// A timeval in seconds.
pub fn timeval_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// True when `/proc/PID` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    match read(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat(&text).is_some_and(|s| s.state != b'Z' && s.state != b'X'),
        Err(_) => false,
    }
}

/// Processes of the process group `pgid` that have not exited (zombies left out).
pub fn group_members(pgid: u32) -> Vec<u32> {
    pids()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|pid| parse_stat(&read(format!("/proc/{pid}/stat")).ok()?))
        .filter(|s| s.pgrp == pgid && s.state != b'Z' && s.state != b'X')
        .map(|s| s.pid)
        .collect()
}

/// Command line of a process, arguments joined by spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Short name of a process (`/proc/PID/comm`).
pub fn comm(pid: u32) -> String {
    read(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_name() {
        let text = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 7 3 20 0 3 0 123456 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(text).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.state, b'S');
        assert_eq!(s.ppid, 1);
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (150, 25, 7, 3));
        assert_eq!(s.num_threads, 3);
        assert_eq!(s.starttime, 123456);
        assert_eq!(s.rss_pages, 250);
        assert_eq!(s.total_ticks(), 185);
        assert_eq!((s.minflt, s.cminflt, s.majflt, s.cmajflt), (100, 0, 0, 0));
    }

    #[test]
    fn io_and_sched_files() {
        let io = "rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 1\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        let v = parse_io(io).unwrap();
        assert_eq!((v.rchar, v.wchar, v.syscr, v.syscw), (6976, 12, 10, 1));
        assert!(parse_io("rchar: 1\n").is_none());
        let sched = "cat (12378, #threads: 1)\n---------\nse.exec_start    :   277475.615736\nse.nr_migrations      :      3\nnr_switches      :     9\nnr_voluntary_switches     :    7\nnr_involuntary_switches   :   2\n";
        let s = parse_sched(sched).unwrap();
        assert_eq!((s.voluntary, s.involuntary, s.migrations), (7, 2, 3));
        assert!(parse_sched("nr_switches : 9\n").is_none());
    }

    #[test]
    fn stat_garbage_is_none() {
        assert!(parse_stat("").is_none());
        assert!(parse_stat("12 (x) S 1").is_none());
    }

    #[test]
    fn rollup_sums_private_and_reads_pss_split() {
        let text = "55d7-7ffe ---p 00000000 00:00 0  [rollup]\nRss:  1700 kB\nPss:  397 kB\nPss_Dirty: 108 kB\nPss_Anon: 108 kB\nPss_File: 289 kB\nPss_Shmem: 0 kB\nShared_Clean: 1516 kB\nPrivate_Clean: 76 kB\nPrivate_Dirty: 108 kB\nSwap: 4 kB\nSwapPss: 4 kB\n";
        let r = parse_rollup(text);
        assert_eq!(r.rss, 1700 * 1024);
        assert_eq!(r.pss, 397 * 1024);
        assert_eq!(r.pss_anon, 108 * 1024);
        assert_eq!(r.pss_file, 289 * 1024);
        assert_eq!(r.uss, 184 * 1024);
        assert_eq!(r.swap, 4 * 1024);
    }

    #[test]
    fn status_field() {
        let text = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(field_kb_bytes(text, "VmHWM"), Some(2048 * 1024));
        assert_eq!(field_kb_bytes(text, "VmSwap"), None);
    }
}
