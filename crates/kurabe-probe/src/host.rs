//! Host facts (name, kernel, architecture) and wall-clock time as RFC 3339.
//!
//! `uname(2)` and the system clock only; no time-zone database: times are UTC.

use std::ffi::CStr;
use std::time::SystemTime;

use kurabe_model::probe::HostInfo;
use kurabe_model::time::rfc3339;

/// Host name, kernel release and machine of this host (`uname`).
pub fn host_info() -> HostInfo {
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
    HostInfo {
        hostname: field(&u.nodename),
        kernel: field(&u.release),
        arch: field(&u.machine),
    }
}

/// Now as RFC 3339 UTC with milliseconds, e.g. `2026-11-29T22:31:05.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uname_is_filled() {
        let h = host_info();
        assert!(!h.kernel.is_empty());
        assert!(!h.arch.is_empty());
    }
}
