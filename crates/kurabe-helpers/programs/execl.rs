//! The Execl helper: the small program in which `kurabe system` runs the two
//! tests whose cost depends on the process image: Execl Throughput (it
//! executes itself over and over, as UnixBench's `execl` does) and Process
//! Creation (it forks, as UnixBench's `spawn` does).
//!
//! kurabe embeds it (see kurabe-helpers' crate docs) and runs it from
//! memory. Usage (internal), two modes:
//! * `execl FD DURATION_MS COUNT START_MS` — Execl. Every
//!   invocation adds one to COUNT (START_MS 0 means "this is the first: take
//!   the clock now"); while less than DURATION_MS has passed since the start
//!   it `execve`s itself (`/proc/self/exe`) with the new count — the same process, no
//!   fork — and when time is up it writes kurabe-system's 32-byte result
//!   record (count, no own time, its pid as the check, no error) to FD and
//!   exits. The pid lets tests prove the chain stayed in one process.
//! * `execl spawn FD DURATION_MS` — Process Creation: `fork`,
//!   the child `exit(0)`s, the parent `wait`s, until a `SIGALRM` after
//!   DURATION_MS; then the record (count, no own time, children reaped with
//!   status 0 as the check, an error code on a failed fork or a bad status).
//!   Forking from here rather than from kurabe matters: the cost of a fork
//!   grows with the mappings and page tables of the process that forks, and
//!   kurabe's image has half again as many mappings and three times the
//!   resident pages of UnixBench's `spawn` (figures in kurabe-system's
//!   `loops` module docs). This helper has 22 mappings against `spawn`'s 23
//!   and the same 40 kB of page tables.
//!
//! Keep it small: no allocation, no threads, no panicking paths, libc only
//! (declared here: build.rs compiles this file alone with rustc, so no
//! crate is available, not even `libc`),
//! and no shared library but libc: std's unwinder comes from the static
//! libgcc_eh (the `#[link]` below), not libgcc_s. With libgcc_s mapped the
//! helper had 27 mappings and needed ~6 % more CPU per fork than `spawn`; a
//! C `spawn` linked against libgcc_s showed the same ~7 % (CPU µs per
//! fork+exit+wait, user+sys with the children, medians of 8 interleaved
//! runs under load: spawn 105, spawn + libgcc_s 113, helper with libgcc_s
//! 111, helper without 105).
//!
//! Why a dedicated image rather than re-running `kurabe` itself for Execl: exec cost
//! grows with what the dynamic loader and runtime do before `main` and with
//! the pages touched; the full `kurabe` binary (clap, all subcommands) is
//! several times larger than UnixBench's 24 KB `execl` and would parse its
//! whole command line on every step. This helper uses `#![no_main]` and libc
//! only, so what runs per exec is close to the C program's startup: the
//! dynamic loader, libc init and a few syscalls. It is still a Rust binary
//! with the std runtime linked in, which is why execl is reported, not held
//! to a ±5 % target. Measured (release build): 293 KB of text against the C
//! program's 11 KB; one shared library (libc) as there; `BIND_NOW` with 308
//! relocations against lazy binding with 48. Before libgcc_s was dropped,
//! `bench/system-fidelity.sh` gave kurabe/UnixBench = 0.71 (5 × 5 s rounds)
//! and 0.87 (9 × 2 s rounds) — the extra loader work per exec; after, 1.11
//! (5 × 5 s rounds run concurrently with the original under load 11–12).

#![no_main]

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

/// kurabe-system's error codes (`kurabe_system::error_code`) this program
/// reports; kurabe-system's tests run this program and check them.
const ERR_FORK: u64 = 2;
const ERR_CHILD_STATUS: u64 = 4;
const ERR_EXEC_HELPER: u64 = 5;

/// The libc calls and types used, declared here (see the module docs).
mod sys {
    use std::ffi::{c_char, c_int, c_long};

    /// `struct timespec`.
    #[repr(C)]
    pub struct Timespec {
        pub tv_sec: c_long,
        pub tv_nsec: c_long,
    }

    /// `struct timeval`.
    #[repr(C)]
    pub struct Timeval {
        pub tv_sec: c_long,
        pub tv_usec: c_long,
    }

    /// `struct itimerval`.
    #[repr(C)]
    pub struct Itimerval {
        pub it_interval: Timeval,
        pub it_value: Timeval,
    }

    pub const CLOCK_REALTIME: c_int = 0;
    pub const ITIMER_REAL: c_int = 0;
    pub const SIGALRM: c_int = 14;
    pub const EINTR: c_int = 4;

    extern "C" {
        pub static environ: *const *const c_char;
        pub fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
        pub fn write(fd: c_int, buf: *const u8, len: usize) -> isize;
        pub fn getpid() -> c_int;
        pub fn fork() -> c_int;
        pub fn exit(status: c_int) -> !;
        pub fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
        pub fn execve(
            path: *const c_char,
            argv: *const *const c_char,
            envp: *const *const c_char,
        ) -> c_int;
        pub fn signal(sig: c_int, handler: usize) -> usize;
        pub fn setitimer(which: c_int, new: *const Itimerval, old: *mut Itimerval) -> c_int;
        pub fn __errno_location() -> *mut c_int;
    }
}

// The unwinder std links in for panics, from the static libgcc_eh instead of
// the shared libgcc_s: one shared library fewer to map on every exec and to
// copy on every fork (see the module docs). With LTO every _Unwind_*
// reference resolves here, so `--as-needed` drops libgcc_s.
#[cfg_attr(target_env = "gnu", link(name = "gcc_eh", kind = "static"))]
extern "C" {}

/// kurabe-system's 32-byte result record (`kurabe_system::Record`): count
/// (f64), own time in seconds (f64, NaN: none), check (u64), error (u64),
/// all little-endian.
fn report(fd: c_int, count: u64, check: u64, err: u64) -> c_int {
    let mut b = [0u8; 32];
    let fields = [
        (count as f64).to_bits(),
        f64::NAN.to_bits(),
        check,
        err,
    ];
    for (chunk, v) in b.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    // SAFETY: writing a live buffer; a short write is the parent's problem to report.
    unsafe { sys::write(fd, b.as_ptr(), b.len()) };
    0
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
    let mut ts = sys::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { sys::clock_gettime(sys::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Set by the `SIGALRM` handler; the spawn loop polls it.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_alarm(_sig: c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// A one-shot `SIGALRM` after `ms`; the loop sees the flag after the wait
/// in progress returns.
fn arm_timer(ms: u64) {
    let it = sys::Itimerval {
        it_interval: sys::Timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: sys::Timeval {
            tv_sec: (ms / 1000) as _,
            tv_usec: ((ms % 1000) * 1000) as _,
        },
    };
    // SAFETY: a handler that only stores an atomic; a fully initialised timer.
    unsafe {
        sys::signal(sys::SIGALRM, on_alarm as *const () as usize);
        sys::setitimer(sys::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

/// `wait` for `pid`, retried on `EINTR` (the timer) so no child is left a
/// zombie; its status, or `None` when waiting failed.
fn wait_for(pid: c_int) -> Option<c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { sys::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Some(status);
        }
        // SAFETY: reading errno right after the failed call.
        if r < 0 && unsafe { *sys::__errno_location() } != sys::EINTR {
            return None;
        }
    }
}

/// Process Creation: `fork`; the child exits at once with `exit(0)`, as
/// UnixBench's `spawn` child does; the parent waits and requires status 0.
/// Reports loops, and as the check the children reaped with status 0.
fn spawn(fd: c_int, dur_ms: u64) -> c_int {
    let mut loops: u64 = 0;
    let mut clean: u64 = 0;
    let mut err = 0;
    arm_timer(dur_ms.max(1));
    while !STOP.load(Ordering::Relaxed) {
        // SAFETY: this process is single-threaded (no std runtime, no
        // threads), so the child may call exit like a C program's child does.
        let pid = unsafe { sys::fork() };
        if pid == 0 {
            // SAFETY: see above.
            unsafe { sys::exit(0) };
        }
        if pid < 0 {
            err = ERR_FORK;
            break;
        }
        match wait_for(pid) {
            Some(0) => clean += 1,
            _ => {
                err = ERR_CHILD_STATUS;
                break;
            }
        }
        loops += 1;
    }
    report(fd, loops, clean, err)
}

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: argv has argc valid entries.
    let arg = |i: usize| unsafe { *argv.add(i) };
    // SAFETY: argv entries are NUL-terminated strings.
    if argc == 4 && unsafe { std::ffi::CStr::from_ptr(arg(1)) }.to_bytes() == b"spawn" {
        let (Some(fd), Some(dur)) = (parse(arg(2)), parse(arg(3))) else {
            return 2;
        };
        return spawn(fd as c_int, dur);
    }
    if argc != 5 {
        return 2;
    }
    execl(arg)
}

/// Execl Throughput: count this invocation, then `execve` the next one or report.
fn execl(arg: impl Fn(usize) -> *const c_char) -> c_int {
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
        let pid = unsafe { sys::getpid() } as u64;
        return report(fd, count, pid, 0);
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
    // This image usually runs from memory (kurabe's memfd, see the crate
    // docs), so argv[0] names a descriptor that close-on-exec has closed by
    // now; the kernel's link to the running image is the way back.
    // SAFETY: next is a NULL-terminated argv of live C strings; environ is libc's.
    unsafe {
        sys::execve(c"/proc/self/exe".as_ptr(), next.as_ptr(), sys::environ);
        sys::execve(arg(0), next.as_ptr(), sys::environ);
    }
    // Only reached when both execve calls failed.
    report(fd, 0, 0, ERR_EXEC_HELPER)
}
