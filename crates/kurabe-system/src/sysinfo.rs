//! Host facts recorded with a run: host name, kernel, architecture, CPUs,
//! and the start time as RFC 3339 UTC (no date crate needed for that).

use std::ffi::CStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// `uname` fields kurabe records.
pub(crate) struct SysInfo {
    pub host: String,
    pub kernel: String,
    pub arch: String,
}

impl SysInfo {
    /// Read them from `uname(2)`.
    pub(crate) fn current() -> SysInfo {
        // SAFETY: utsname is plain data; uname fills it with NUL-terminated strings.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) != 0 {
                return SysInfo {
                    host: "unknown".into(),
                    kernel: "unknown".into(),
                    arch: "unknown".into(),
                };
            }
            let s = |f: &[libc::c_char]| CStr::from_ptr(f.as_ptr()).to_string_lossy().into_owned();
            SysInfo {
                host: s(&u.nodename),
                kernel: s(&u.release),
                arch: s(&u.machine),
            }
        }
    }
}

/// Online CPUs.
pub(crate) fn online_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// Now, as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    kurabe_model::time::rfc3339_secs(secs)
}
