//! Whether this machine counts hardware events (instructions, cycles,
//! cache and branch misses) for kurabe: one `perf_event_open` of the
//! instructions counter on this process, as `perf stat -e instructions`
//! does.
//!
//! Owns that one question. Must not count anything: kurabe-helpers'
//! rusage helper counts a command's events; a tree sampled by /proc has
//! no hardware counters.

use kurabe_model::tree_counters::HardwareOff;

/// `PERF_FLAG_FD_CLOEXEC` of `perf_event_open(2)`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// `perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64 bytes).
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Why hardware counters are not counted here; `None` when they are.
pub fn hardware_off() -> Option<HardwareOff> {
    let attr = Attr {
        kind: 0,   // PERF_TYPE_HARDWARE
        config: 1, // PERF_COUNT_HW_INSTRUCTIONS
        size: std::mem::size_of::<Attr>() as u32,
        flags: 1, // disabled: opened to see whether it can be, never run
        ..Attr::default()
    };
    // SAFETY: attr is a live perf_event_attr of the size it states; the
    // other arguments are plain integers (this process, any CPU, no group,
    // close on exec).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd >= 0 {
        // SAFETY: fd was just opened here and is closed once.
        unsafe { libc::close(fd as libc::c_int) };
        return None;
    }
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    Some(match errno {
        libc::EACCES | libc::EPERM => HardwareOff::NotAllowed {
            paranoid: std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .ok()
                .and_then(|t| t.trim().parse().ok()),
        },
        libc::ENOSYS => HardwareOff::NoPerfEvents,
        // ENOENT, EOPNOTSUPP, ENODEV: the kernel has no such event here.
        _ => HardwareOff::NoPmu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_kernels_list_of_pmus() {
        // A hardware PMU registers a "cpu" (x86) or "armv8_*" event source.
        let pmu = std::fs::read_dir("/sys/bus/event_source/devices")
            .map(|d| {
                d.filter_map(|e| e.ok()).any(|e| {
                    e.file_name() == "cpu" || e.file_name().to_string_lossy().starts_with("armv")
                })
            })
            .unwrap_or(false);
        match hardware_off() {
            None => assert!(pmu, "instructions counted without a PMU listed"),
            Some(HardwareOff::NoPmu) => {
                assert!(!pmu, "a PMU is listed but instructions are not supported")
            }
            Some(_) => {}
        }
    }
}
