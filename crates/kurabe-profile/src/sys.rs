//! The `perf_event_open(2)` interface this crate uses: the attribute
//! struct, opening one sampling event per CPU, and the mmap'd ring buffer.
//!
//! Owns every `unsafe` call of the crate. Must not parse records
//! (`record.rs` does) or decide what to sample (`sampler.rs` does).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `perf_event_attr` up to `sample_max_stack` (PERF_ATTR_SIZE_VER5, 112 bytes).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct Attr {
    pub(crate) kind: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_watermark: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) branch_sample_type: u64,
    pub(crate) sample_regs_user: u64,
    pub(crate) sample_stack_user: u32,
    pub(crate) clockid: i32,
    pub(crate) sample_regs_intr: u64,
    pub(crate) aux_watermark: u32,
    pub(crate) sample_max_stack: u16,
    pub(crate) reserved: u16,
}

/// `PERF_TYPE_SOFTWARE`.
pub(crate) const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_CPU_CLOCK`: a timer that runs while the task is on a CPU.
pub(crate) const SW_CPU_CLOCK: u64 = 0;

/// `PERF_SAMPLE_IP`.
pub(crate) const SAMPLE_IP: u64 = 1 << 0;
/// `PERF_SAMPLE_TID`.
pub(crate) const SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`.
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_CALLCHAIN`.
pub(crate) const SAMPLE_CALLCHAIN: u64 = 1 << 5;

/// `perf_event_attr` flag bits.
pub(crate) mod flag {
    pub(crate) const INHERIT: u64 = 1 << 1;
    pub(crate) const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub(crate) const EXCLUDE_HV: u64 = 1 << 6;
    pub(crate) const MMAP: u64 = 1 << 8;
    pub(crate) const COMM: u64 = 1 << 9;
    pub(crate) const TASK: u64 = 1 << 13;
    pub(crate) const WATERMARK: u64 = 1 << 14;
    pub(crate) const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub(crate) const MMAP2: u64 = 1 << 23;
    pub(crate) const COMM_EXEC: u64 = 1 << 24;
    pub(crate) const USE_CLOCKID: u64 = 1 << 25;
}

/// `PERF_FLAG_FD_CLOEXEC`.
const FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `PERF_EVENT_IOC_ENABLE` (`_IO('$', 0)`).
const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE` (`_IO('$', 1)`).
const IOC_DISABLE: libc::c_ulong = 0x2401;
/// `PERF_EVENT_IOC_SET_OUTPUT` (`_IO('$', 5)`).
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;

/// Open `attr` for task `pid` on `cpu`; the OS error (its errno says why) on failure.
pub(crate) fn open(attr: &Attr, pid: i32, cpu: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: attr is a live perf_event_attr of the size it states; the
    // other arguments are plain integers (no group, close on exec).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid,
            cpu,
            -1 as libc::c_int,
            FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Start (`true`) or stop counting on `fd`.
pub(crate) fn enable(fd: &OwnedFd, on: bool) -> std::io::Result<()> {
    let request = if on { IOC_ENABLE } else { IOC_DISABLE };
    // SAFETY: an ioctl without an argument on a perf event fd we own.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, 0) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Send `fd`'s records to `to`'s ring (both on the same CPU).
pub(crate) fn set_output(fd: &OwnedFd, to: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: an ioctl whose argument is another perf event fd we own.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT as _, to.as_raw_fd()) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `CLOCK_MONOTONIC` now, ns.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Page size of this machine.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// One event's mmap'd ring: the metadata page, then `2^n` data pages.
pub(crate) struct Ring {
    base: *mut u8,
    len: usize,
    data: usize,
    size: usize,
    /// The event it reads (kept open as long as the mapping).
    pub(crate) fd: OwnedFd,
    /// Events of other threads on the same CPU that write into this ring.
    pub(crate) extra: Vec<OwnedFd>,
}

// SAFETY: the mapping is owned by the Ring alone and only read through &mut self.
unsafe impl Send for Ring {}

/// Offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

impl Ring {
    /// Map `pages` data pages (a power of two) of `fd`'s ring.
    pub(crate) fn map(fd: OwnedFd, pages: usize) -> std::io::Result<Ring> {
        let page = page_size();
        let len = page * (pages + 1);
        // SAFETY: a fresh shared mapping of a perf event fd we own; the
        // kernel checks the length.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Ring {
            base: base.cast(),
            len,
            data: page,
            size: page * pages,
            fd,
            extra: Vec::new(),
        })
    }

    /// The metadata page's word at `offset`, shared with the kernel.
    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offset is one of the aligned u64 fields of the metadata
        // page, inside the mapping, which lives as long as self.
        unsafe { &*(self.base.add(offset) as *const AtomicU64) }
    }

    /// Hand every complete record written so far to `each` (wrapped
    /// records copied whole into `scratch`), then free their space.
    pub(crate) fn drain(&mut self, scratch: &mut Vec<u8>, each: &mut dyn FnMut(&[u8])) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        while tail + 8 <= head {
            scratch.clear();
            self.copy(tail, 8, scratch);
            let size = u16::from_ne_bytes([scratch[6], scratch[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            scratch.clear();
            self.copy(tail, size as usize, scratch);
            each(scratch);
            tail += size;
        }
        self.word(DATA_TAIL).store(tail, Ordering::Release);
    }

    /// Append `n` bytes of the ring from position `at` (modulo its size) to `out`.
    fn copy(&self, at: u64, n: usize, out: &mut Vec<u8>) {
        let start = (at % self.size as u64) as usize;
        let first = n.min(self.size - start);
        // SAFETY: both ranges lie inside the data area of the mapping
        // (start < size, first ≤ size − start, n − first < size).
        unsafe {
            let data = self.base.add(self.data);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, n - first));
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base and len are the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The CPUs the kernel lists as possible (`/sys/devices/system/cpu/online`).
pub(crate) fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let cpus = parse_cpu_list(text.trim());
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        return (0..n as i32).collect();
    }
    cpus
}

/// `0-3,5` → [0, 1, 2, 3, 5].
fn parse_cpu_list(text: &str) -> Vec<i32> {
    let mut cpus = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<i32>(), hi.parse::<i32>()) {
            cpus.extend(lo..=hi);
        }
    }
    cpus
}

/// `/proc/sys/kernel/perf_event_paranoid`, when readable.
pub(crate) fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_the_kernels_version_5_size() {
        assert_eq!(std::mem::size_of::<Attr>(), 112);
    }

    #[test]
    fn cpu_lists_expand_ranges() {
        assert_eq!(parse_cpu_list("0-3,5"), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert!(parse_cpu_list("").is_empty());
    }
}
