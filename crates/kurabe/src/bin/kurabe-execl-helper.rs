//! kurabe-execl-helper: the program `kurabe system`'s Execl Throughput test
//! executes over and over, as UnixBench's `execl` re-executes itself.
//!
//! Usage (internal): `kurabe-execl-helper FD DURATION_MS COUNT START_MS`.
//! Every invocation adds one to COUNT (START_MS 0 means "this is the first:
//! take the clock now"); while less than DURATION_MS has passed since the
//! start it `execve`s itself (argv[0]) with the new count — the same process,
//! no fork — and when time is up it writes kurabe-system's 32-byte result
//! record (count, no own time, its pid as the check, no error) to FD and
//! exits. The pid lets tests prove the chain stayed in one process.
//!
//! Why a dedicated binary rather than re-running `kurabe` itself: exec cost
//! grows with what the dynamic loader and runtime do before `main` and with
//! the pages touched; the full `kurabe` binary (clap, all subcommands) is
//! several times larger than UnixBench's 24 KB `execl` and would parse its
//! whole command line on every step. This helper uses `#![no_main]` and libc
//! only, so what runs per exec is close to the C program's startup: the
//! dynamic loader, libc init and a few syscalls. It is still a Rust binary
//! with the std runtime linked in, which is why execl is reported, not held
//! to a ±5 % target. Measured (release build): 268 KB of text against the C
//! program's 11 KB; two shared libraries to map and relocate (libgcc_s, for
//! std's unwinder, besides libc) against one; `BIND_NOW` with 292
//! relocations against lazy binding with 48. `bench/system-fidelity.sh` gave
//! kurabe/UnixBench = 0.71 (5 × 5 s rounds) and 0.87 (9 × 2 s rounds) — the
//! extra loader work per exec.

#![no_main]

use std::ffi::{c_char, c_int};

use kurabe_system::Record;

extern "C" {
    static environ: *const *const c_char;
}

fn parse(p: *const c_char) -> Option<u64> {
    // SAFETY: argv entries are NUL-terminated strings.
    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    if bytes.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Decimal digits of `v`, NUL-terminated, into `buf` (no panicking paths:
/// see the module docs on why the helper avoids them).
fn fmt(v: u64, buf: &mut [u8; 24]) -> *const c_char {
    let mut tmp = [0u8; 20];
    let mut n = v;
    let mut len = 0;
    for slot in tmp.iter_mut() {
        *slot = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (dst, src) in buf.iter_mut().zip(tmp[..len.min(20)].iter().rev()) {
        *dst = *src;
    }
    if let Some(end) = buf.get_mut(len) {
        *end = 0;
    }
    buf.as_ptr().cast()
}

fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

fn report(fd: c_int, rec: Record) -> c_int {
    let b = rec.to_bytes();
    // SAFETY: writing a live buffer; a short write is the parent's problem to report.
    unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
    0
}

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    if argc != 5 {
        return 2;
    }
    // SAFETY: argv has argc valid entries.
    let arg = |i: usize| unsafe { *argv.add(i) };
    let (Some(fd), Some(dur), Some(count), Some(start)) =
        (parse(arg(1)), parse(arg(2)), parse(arg(3)), parse(arg(4)))
    else {
        return 2;
    };
    let fd = fd as c_int;
    let count = count + 1;
    let now = now_ms();
    let start = if start == 0 { now } else { start };
    if now.saturating_sub(start) >= dur {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u64;
        return report(
            fd,
            Record {
                count: count as f64,
                time_s: f64::NAN,
                check: pid,
                err: 0,
            },
        );
    }
    let mut cbuf = [0u8; 24];
    let mut sbuf = [0u8; 24];
    let next = [
        arg(0),
        arg(1),
        arg(2),
        fmt(count, &mut cbuf),
        fmt(start, &mut sbuf),
        std::ptr::null(),
    ];
    // SAFETY: next is a NULL-terminated argv of live C strings; environ is libc's.
    unsafe { libc::execve(arg(0), next.as_ptr(), environ) };
    // Only reached when execve failed: report it as kurabe-system's error code 5.
    report(fd, Record::error(5))
}
