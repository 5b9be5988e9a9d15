//! System memory from `/proc/meminfo`, with `free`'s "used" of every procps
//! generation, and the processes using the most memory by PSS.
//!
//! What `free` calls "used" changed twice (checked in the procps-ng sources):
//!
//! - procps ≤ 3.3.9 (`proc/sysinfo.c`): used = MemTotal − MemFree, and the
//!   "-/+ buffers/cache" line printed used − Buffers − Cached (Cached alone,
//!   no slab) with free + Buffers + Cached beside it.
//! - procps 3.3.10 dropped that line and printed used = MemTotal − MemFree −
//!   Buffers − cache, with cache = Cached + Slab in 3.3.10–3.3.11 and
//!   cache = Cached + SReclaimable from 3.3.12 through 4.0.0 (falling back to
//!   MemTotal − MemFree when negative).
//! - procps 4.0.1 (commit 2184e90d, "library: modify calculation of
//!   'MEMINFO_MEM_USED' item", June 2022): used = MemTotal − MemAvailable
//!   (MemAvailable replaced by MemFree when absent or larger than MemTotal).
//!
//! [`MemInfo::used`] is the 4.0.1+ figure, [`MemInfo::used_legacy`] the
//! 3.3.12–4.0.0 one, [`MemInfo::used_minus_buffers_cache`] the ≤ 3.3.9
//! "-/+ buffers/cache" one. "buff/cache" is Buffers + Cached + SReclaimable.
//! This module reads files and returns numbers; it never prints.

use kurabe_model::probe::ProcessMemory;

use crate::error::{ProbeError, Result};
use crate::procfs;

/// The `/proc/meminfo` fields `free` uses, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    /// MemTotal.
    pub total: u64,
    /// MemFree.
    pub free: u64,
    /// MemAvailable as procps reads it (MemFree when missing or > MemTotal).
    pub available: u64,
    /// Buffers.
    pub buffers: u64,
    /// Cached.
    pub cached: u64,
    /// SReclaimable.
    pub sreclaimable: u64,
    /// Shmem.
    pub shared: u64,
    /// SwapTotal.
    pub swap_total: u64,
    /// SwapFree.
    pub swap_free: u64,
}

impl MemInfo {
    /// Parse `/proc/meminfo` text.
    pub fn parse(text: &str) -> Option<Self> {
        let f = |k: &str| procfs::field_kb_bytes(text, k);
        let total = f("MemTotal")?;
        let free = f("MemFree")?;
        let available = match f("MemAvailable") {
            Some(a) if a > 0 && a <= total => a,
            _ => free,
        };
        Some(Self {
            total,
            free,
            available,
            buffers: f("Buffers").unwrap_or(0),
            cached: f("Cached").unwrap_or(0),
            sreclaimable: f("SReclaimable").unwrap_or(0),
            shared: f("Shmem").unwrap_or(0),
            swap_total: f("SwapTotal").unwrap_or(0),
            swap_free: f("SwapFree").unwrap_or(0),
        })
    }

    /// Read `/proc/meminfo` now.
    pub fn read() -> Result<Self> {
        let path = "/proc/meminfo";
        let text = procfs::read(path).map_err(|source| ProbeError::Read {
            path: path.into(),
            source,
        })?;
        Self::parse(&text).ok_or_else(|| ProbeError::Parse {
            path: path.into(),
            what: "MemTotal or MemFree missing".into(),
        })
    }

    /// free's "buff/cache": Buffers + Cached + SReclaimable.
    pub fn buff_cache(&self) -> u64 {
        self.buffers + self.cached + self.sreclaimable
    }

    /// "used" of procps ≥ 4.0.1: MemTotal − MemAvailable.
    pub fn used(&self) -> u64 {
        self.total
            .checked_sub(self.available)
            .unwrap_or(self.total - self.free.min(self.total))
    }

    /// "used" of procps 3.3.12–4.0.0: MemTotal − MemFree − Buffers − (Cached + SReclaimable).
    pub fn used_legacy(&self) -> u64 {
        self.total
            .checked_sub(self.free + self.buff_cache())
            .unwrap_or(self.total.saturating_sub(self.free))
    }

    /// procps ≤ 3.3.9 "-/+ buffers/cache" used: MemTotal − MemFree − Buffers − Cached.
    pub fn used_minus_buffers_cache(&self) -> u64 {
        self.total
            .saturating_sub(self.free)
            .saturating_sub(self.buffers + self.cached)
    }

    /// procps ≤ 3.3.9 "-/+ buffers/cache" free: MemFree + Buffers + Cached.
    pub fn free_plus_buffers_cache(&self) -> u64 {
        self.free + self.buffers + self.cached
    }

    /// SwapTotal − SwapFree.
    pub fn swap_used(&self) -> u64 {
        self.swap_total.saturating_sub(self.swap_free)
    }
}

/// Processes by PSS, largest first, at most `n`; plus the number of processes
/// whose `smaps_rollup` could not be read (another user's, kernel threads excluded).
pub fn top_by_pss(n: usize) -> (Vec<ProcessMemory>, u32) {
    let mut out = Vec::new();
    let mut unreadable = 0;
    let mut buf = String::new();
    for pid in procfs::pids().unwrap_or_default() {
        let path = std::path::PathBuf::from(format!("/proc/{pid}/smaps_rollup"));
        match procfs::read_into(&path, &mut buf) {
            Ok(()) if buf.is_empty() => continue, // kernel thread or zombie: no memory
            Ok(()) => {
                let r = procfs::parse_rollup(&buf);
                out.push(ProcessMemory {
                    pid,
                    name: procfs::comm(pid),
                    command: procfs::cmdline(pid),
                    pss_bytes: r.pss,
                    rss_bytes: r.rss,
                    uss_bytes: r.uss,
                    swap_bytes: r.swap,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => unreadable += 1,
            Err(_) => {}
        }
    }
    out.sort_by(|a, b| b.pss_bytes.cmp(&a.pss_bytes).then(a.pid.cmp(&b.pid)));
    out.truncate(n);
    (out, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "MemTotal:       16318332 kB
MemFree:        12851376 kB
MemAvailable:   14778072 kB
Buffers:          102400 kB
Cached:          1900000 kB
SwapCached:            0 kB
Shmem:             42808 kB
SReclaimable:     219892 kB
SUnreclaim:        50000 kB
SwapTotal:       1000000 kB
SwapFree:         900000 kB
";

    #[test]
    fn three_generations_of_used() {
        let m = MemInfo::parse(TEXT).unwrap();
        let kb = 1024;
        assert_eq!(m.used(), (16318332 - 14778072) * kb);
        assert_eq!(m.buff_cache(), (102400 + 1900000 + 219892) * kb);
        assert_eq!(
            m.used_legacy(),
            (16318332 - 12851376 - 102400 - 1900000 - 219892) * kb
        );
        assert_eq!(
            m.used_minus_buffers_cache(),
            (16318332 - 12851376 - 102400 - 1900000) * kb
        );
        assert_eq!(m.shared, 42808 * kb);
        assert_eq!(m.swap_used(), 100000 * kb);
    }

    #[test]
    fn available_falls_back_to_free_like_procps() {
        let no_avail = TEXT.replace("MemAvailable:   14778072 kB\n", "");
        let m = MemInfo::parse(&no_avail).unwrap();
        assert_eq!(m.available, m.free);
        let too_big = TEXT.replace("14778072", "99999999");
        assert_eq!(MemInfo::parse(&too_big).unwrap().available, 12851376 * 1024);
    }

    #[test]
    fn legacy_used_never_negative() {
        let m = MemInfo {
            total: 100,
            free: 50,
            buffers: 30,
            cached: 30,
            ..MemInfo::default()
        };
        assert_eq!(m.used_legacy(), 50);
        assert_eq!(m.used_minus_buffers_cache(), 0);
    }
}
