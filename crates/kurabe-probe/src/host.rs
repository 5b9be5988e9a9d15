//! Host facts and wall-clock time as RFC 3339.
//!
//! Owns the one reader of this machine's facts ([`host_facts`]): `uname(2)`
//! for name, kernel and architecture, `/proc/cpuinfo` for the CPU model,
//! `/proc/meminfo` for memory, the scheduler for logical CPUs. Every record
//! kurabe keeps (experiments, saved results, watch/mem/system reports) takes
//! its facts from here, so the same machine reads the same everywhere.
//! Must not fail: a fact that cannot be read is `"unknown"` or 0 (a result
//! without a CPU model is still worth keeping). No time-zone database:
//! times are UTC.

use std::ffi::CStr;
use std::time::SystemTime;

use kurabe_model::record::HostFacts;
use kurabe_model::time::rfc3339;

use crate::{procfs, MemInfo};

/// What an unreadable text fact reads as.
const UNKNOWN: &str = "unknown";

/// This machine: `uname`, the CPU model, logical CPUs and MemTotal.
pub fn host_facts() -> HostFacts {
    let uname = uname();
    let cpuinfo = procfs::read("/proc/cpuinfo").unwrap_or_default();
    HostFacts {
        hostname: or_unknown(uname.hostname),
        cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| UNKNOWN.to_owned()),
        cores: procfs::online_cpus(),
        memory_bytes: MemInfo::read().map_or(0, |m| m.total),
        kernel: or_unknown(uname.kernel),
        arch: or_unknown(uname.arch),
    }
}

/// The CPU model in `/proc/cpuinfo` text: `model name` on x86, `Model` or
/// `cpu model` on the ARM and MIPS boards that lack it.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| {
            l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
        })
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn or_unknown(s: String) -> String {
    if s.is_empty() {
        UNKNOWN.to_owned()
    } else {
        s
    }
}

/// `uname(2)`'s fields kurabe records (empty when the call fails).
struct Uname {
    hostname: String,
    kernel: String,
    arch: String,
}

/// Host name, kernel release and machine of this host.
fn uname() -> Uname {
    // SAFETY: utsname is plain old data; zeroed is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid, writable utsname.
    let ok = unsafe { libc::uname(&mut u) } == 0;
    let field = |f: &[libc::c_char]| -> String {
        if !ok {
            return String::new();
        }
        // SAFETY: uname NUL-terminates each field within its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Uname {
        hostname: field(&u.nodename),
        kernel: field(&u.release),
        arch: field(&u.machine),
    }
}

/// This host's name as [`host_facts`] records it; empty when `uname(2)`
/// fails (for callers that must tell "unknown" from a name, such as the
/// store's check that a writer ran on this machine).
pub fn hostname() -> String {
    uname().hostname
}

/// Now as RFC 3339 UTC with milliseconds, e.g. `2026-11-29T22:31:05.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str) -> String {
        std::fs::read_to_string(path).unwrap().trim().to_owned()
    }

    /// CPUs in `Cpus_allowed_list` (`0-1,4`) of /proc/self/status.
    fn allowed_cpus() -> u32 {
        let status = read("/proc/self/status");
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim();
        list.split(',')
            .map(|r| match r.split_once('-') {
                Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
                None => 1,
            })
            .sum()
    }

    #[test]
    fn host_facts_match_proc() {
        let h = host_facts();
        assert_eq!(h.hostname, read("/proc/sys/kernel/hostname"));
        assert_eq!(h.kernel, read("/proc/sys/kernel/osrelease"));
        // No child processes here (uname(1), nproc(1)): the watcher test
        // in this binary counts this process's tree.
        if let Ok(arch) = std::fs::read_to_string("/proc/sys/kernel/arch") {
            assert_eq!(h.arch, arch.trim());
        }
        // The CPUs this process may run on; a cgroup CPU quota may lower it.
        assert!((1..=allowed_cpus()).contains(&h.cores), "{}", h.cores);
        let mem_total_kib: u64 = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        assert_eq!(h.memory_bytes, mem_total_kib * 1024);
        let first_model = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .map(|l| l.split_once(':').unwrap().1.trim().to_owned());
        if let Some(model) = first_model {
            assert_eq!(h.cpu_model, model);
        }
        assert_ne!(h.cpu_model, "");
    }

    #[test]
    fn cpu_model_on_x86_arm_and_mips() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) @ 2.00GHz\n";
        assert_eq!(
            cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) @ 2.00GHz")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(
            cpu_model(arm).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        assert_eq!(
            cpu_model("system type : X\ncpu model : MIPS 24Kc V7.4\n").as_deref(),
            Some("MIPS 24Kc V7.4")
        );
        assert_eq!(cpu_model("processor : 0\nmodel name :   \n"), None);
        assert_eq!(cpu_model(""), None);
    }

    #[test]
    fn uname_is_filled() {
        let h = uname();
        assert!(!h.kernel.is_empty());
        assert!(!h.arch.is_empty());
    }
}
