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
    rfc3339(secs)
}

/// Seconds since the epoch as RFC 3339 UTC.
pub(crate) fn rfc3339(secs: u64) -> String {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_996_800 + 3_723), "2026-11-30T01:02:03Z");
    }
}
