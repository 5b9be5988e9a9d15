//! The machine a record was measured on ([`HostFacts`]), as plain data.
//!
//! Its own module below the records, the reports and the probes' records,
//! which all name it (`record` re-exports it). Must not read the machine:
//! `kurabe-probe` fills it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// CPU, memory, kernel and name of a machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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
