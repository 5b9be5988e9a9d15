//! Facts about the machine a result was measured on.
//!
//! Recorded with every experiment and saved result so that numbers from two
//! machines (the 32-bit vs 64-bit VPS question) are never confused.

use serde::{Deserialize, Serialize};

/// CPU, memory, kernel and name of a machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct HostFacts {
    /// Host name.
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cores: u32,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Machine architecture (`x86_64`, `aarch64`).
    pub arch: String,
}

impl HostFacts {
    /// Facts about this machine, read from /proc; what cannot be read is
    /// `"unknown"` or 0 rather than an error (a result without a CPU model
    /// is still worth keeping).
    pub fn current() -> HostFacts {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| {
                l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
            })
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        let or_unknown = |s: String| {
            if s.is_empty() {
                "unknown".to_owned()
            } else {
                s
            }
        };
        HostFacts {
            hostname: or_unknown(read("/proc/sys/kernel/hostname").trim().to_owned()),
            cpu_model,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
            memory_bytes,
            kernel: or_unknown(read("/proc/sys/kernel/osrelease").trim().to_owned()),
            arch: std::env::consts::ARCH.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_host_matches_independent_sources() {
        let h = HostFacts::current();
        // uname(1) is an independent reader of the same kernel facts.
        let uname = |flag| {
            std::process::Command::new("uname")
                .arg(flag)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap()
        };
        assert_eq!(h.kernel, uname("-r"));
        assert_eq!(h.arch, uname("-m"));
        assert_eq!(h.hostname, uname("-n"));
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 64 << 20, "{}", h.memory_bytes);
        assert_ne!(h.cpu_model, "");
    }
}
