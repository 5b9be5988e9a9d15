//! kurabe-execl-helper: the small program in which `kurabe system` runs the
//! two tests whose cost depends on the process image: Execl Throughput (it
//! executes itself over and over, as UnixBench's `execl` does) and Process
//! Creation (it forks, as UnixBench's `spawn` does).
//!
//! Usage (internal), two modes:
//! * `kurabe-execl-helper FD DURATION_MS COUNT START_MS` — Execl. Every
//!   invocation adds one to COUNT (START_MS 0 means "this is the first: take
//!   the clock now"); while less than DURATION_MS has passed since the start
//!   it `execve`s itself (argv[0]) with the new count — the same process, no
//!   fork — and when time is up it writes kurabe-system's 32-byte result
//!   record (count, no own time, its pid as the check, no error) to FD and
//!   exits. The pid lets tests prove the chain stayed in one process.
//! * `kurabe-execl-helper spawn FD DURATION_MS` — Process Creation: `fork`,
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
//! Keep it small: no allocation, no threads, no panicking paths, libc only,
//! and no shared library but libc: std's unwinder comes from the static
//! libgcc_eh (the `#[link]` below), not libgcc_s. With libgcc_s mapped the
//! helper had 27 mappings and needed ~6 % more CPU per fork than `spawn`; a
//! C `spawn` linked against libgcc_s showed the same ~7 % (CPU µs per
//! fork+exit+wait, user+sys with the children, medians of 8 interleaved
//! runs under load: spawn 105, spawn + libgcc_s 113, helper with libgcc_s
//! 111, helper without 105).
//!
//! Why a dedicated binary rather than re-running `kurabe` itself for Execl: exec cost
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

use kurabe_system::error_code::{
    CHILD_STATUS as ERR_CHILD_STATUS, EXEC_HELPER as ERR_EXEC_HELPER, FORK as ERR_FORK,
};
use kurabe_system::Record;

extern "C" {
    static environ: *const *const c_char;
}

// The unwinder std links in for panics, from the static libgcc_eh instead of
// the shared libgcc_s: one shared library fewer to map on every exec and to
// copy on every fork (see the module docs). With LTO (the release profile)
// every _Unwind_* reference resolves here, so `--as-needed` drops libgcc_s.
#[link(name = "gcc_eh", kind = "static")]
extern "C" {}

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

/// Set by the `SIGALRM` handler; the spawn loop polls it.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_alarm(_sig: c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// A one-shot `SIGALRM` after `ms`, without `SA_RESTART`: a blocked `wait`
/// returns `EINTR` and the loop sees the flag.
fn arm_timer(ms: u64) {
    // SAFETY: sigaction/setitimer with fully initialised structs.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        let it = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: (ms / 1000) as libc::time_t,
                tv_usec: ((ms % 1000) * 1000) as libc::suseconds_t,
            },
        };
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

/// `wait` for `pid`, retried on `EINTR` (the timer) so no child is left a
/// zombie; its status, or `None` when waiting failed.
fn wait_for(pid: libc::pid_t) -> Option<c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Some(status);
        }
        // SAFETY: reading errno right after the failed call.
        if r < 0 && unsafe { *libc::__errno_location() } != libc::EINTR {
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
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: see above.
            unsafe { libc::exit(0) };
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
    report(
        fd,
        Record {
            count: loops as f64,
            time_s: f64::NAN,
            check: clean,
            err,
        },
    )
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
    // Only reached when execve failed.
    report(fd, Record::error(ERR_EXEC_HELPER))
}
