//! One `kurabe mem` snapshot as the versioned record: /proc/meminfo with
//! every procps generation's "used", the host, and the top processes by PSS.
//!
//! Owns assembling the record from [`MemInfo`] and the host facts. Must not
//! render or print.

use kurabe_model::probe::MemReport;

use crate::{MemInfo, Result};

/// The system's memory now, with the `top` processes by PSS (none when 0);
/// `tool_version` is the kurabe that reads it.
pub fn read(top: usize, tool_version: &str) -> Result<MemReport> {
    let m = MemInfo::read()?;
    let host = crate::host::host_facts();
    let time = crate::host::now_rfc3339();
    let (top, unreadable) = if top > 0 {
        crate::top_by_pss(top)
    } else {
        (Vec::new(), 0)
    };
    Ok(MemReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        tool_version: tool_version.to_owned(),
        host: host.hostname,
        kernel: host.kernel,
        arch: host.arch,
        time,
        total_bytes: m.total,
        free_bytes: m.free,
        available_bytes: m.available,
        buffers_bytes: m.buffers,
        cached_bytes: m.cached,
        sreclaimable_bytes: m.sreclaimable,
        buff_cache_bytes: m.buff_cache(),
        shared_bytes: m.shared,
        used_bytes: m.used(),
        used_legacy_bytes: m.used_legacy(),
        used_minus_buffers_cache_bytes: m.used_minus_buffers_cache(),
        swap_total_bytes: m.swap_total,
        swap_free_bytes: m.swap_free,
        swap_used_bytes: m.swap_used(),
        top_processes: top,
        processes_unreadable: unreadable,
    })
}
