//! The rusage helper: the small launcher `kurabe run` and `kurabe cmd`
//! run a `command` workload's executions through, so each command's max
//! RSS is its own. kurabe embeds it (see kurabe-helpers' crate docs) and
//! runs it from memory.
//!
//! Usage (internal): `rusage REQ_FD REPORT_FD PROGRAM [ARGS...]`. One
//! helper serves every execution of a run: for each request — a
//! little-endian u32 read from REQ_FD, the length of the environment
//! padding — it rewinds its stdin (so an input file is read from its start
//! by every execution) and forks; the child moves into a process group of
//! its own, adds `KURABE_ENV_PAD=` and that many `x` to its environment
//! (when the length is not 0, at most 4096) and `execvp`s PROGRAM with ARGS
//! (environment, cwd and stdio inherited). The parent writes the child's
//! pid to REPORT_FD as one little-endian i64 as soon as the exec has
//! happened (or failed), so kurabe can sample the command's memory and kill
//! its group, then `wait4`s it and writes one 56-byte record of seven
//! little-endian i64: `exec_errno` (0 when the exec happened),
//! `wait_status`, `user_us`, `sys_us`, `max_rss_kib`, `wall_ns` (fork to
//! reaped), and the child's pid. At end-of-file on REQ_FD it exits 0; exit
//! 2 on a malformed command line or a failed fork.
//!
//! Why one helper for many executions: starting it costs an exec, about
//! what running `true` costs, so starting one per execution doubled
//! kurabe's cost per run against hyperfine's (which spawns the command
//! only). Served from a running helper, an execution costs a fork of this
//! small image and the command's exec, as hyperfine's does.
//!
//! Why it exists: Linux carries the *pre-exec* address space's high-water
//! mark into the new program's `ru_maxrss` (`exec_mmap` →
//! `setmax_mm_hiwater_rss`). A command spawned straight from kurabe — by
//! fork or by posix_spawn's shared-memory vfork — therefore reports at least
//! kurabe's own peak RSS (≈ 9–11 MiB), and `true` looks like a 10 MiB
//! program. Forking from this helper's small image instead puts the floor
//! at the helper's few hundred KiB, below `/usr/bin/time`'s own.
//!
//! Like the Execl helper it is `#![no_main]` and uses libc only (declared
//! here: build.rs compiles this file alone with rustc, so no crate is
//! available), so its image stays small: no allocation, no formatting, no
//! panicking path.

#![no_main]

use std::ffi::{c_char, c_int};

/// The libc calls, types and constants used, declared here (see the module docs).
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
    #[derive(Clone, Copy)]
    pub struct Timeval {
        pub tv_sec: c_long,
        pub tv_usec: c_long,
    }

    /// `struct rusage`: the two times, `ru_maxrss`, and 13 more longs.
    #[repr(C)]
    pub struct Rusage {
        pub ru_utime: Timeval,
        pub ru_stime: Timeval,
        pub ru_maxrss: c_long,
        pub rest: [c_long; 13],
    }

    pub const CLOCK_MONOTONIC: c_int = 1;
    pub const EINTR: c_int = 4;
    pub const F_SETFD: c_int = 2;
    pub const FD_CLOEXEC: c_int = 1;
    pub const O_CLOEXEC: c_int = 0o2000000;
    pub const SEEK_SET: c_int = 0;

    extern "C" {
        pub fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
        pub fn __errno_location() -> *mut c_int;
        pub fn write(fd: c_int, buf: *const u8, len: usize) -> isize;
        pub fn read(fd: c_int, buf: *mut u8, len: usize) -> isize;
        pub fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        pub fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
        pub fn close(fd: c_int) -> c_int;
        pub fn fork() -> c_int;
        pub fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int;
        pub fn _exit(status: c_int) -> !;
        pub fn wait4(pid: c_int, status: *mut c_int, options: c_int, ru: *mut Rusage) -> c_int;
        pub fn setpgid(pid: c_int, pgid: c_int) -> c_int;
        pub fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
        pub fn putenv(string: *mut c_char) -> c_int;
    }
}

// As in the Execl helper: std's unwinder from the static libgcc_eh, so the
// image maps no shared library but libc.
#[cfg_attr(target_env = "gnu", link(name = "gcc_eh", kind = "static"))]
extern "C" {}

/// Decimal `p` as a file descriptor number.
fn parse_fd(p: *const c_char) -> Option<c_int> {
    // SAFETY: argv entries are NUL-terminated strings.
    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    if bytes.is_empty() || bytes.len() > 9 {
        return None;
    }
    let mut v: c_int = 0;
    for &b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + c_int::from(b - b'0');
    }
    Some(v)
}

fn now_ns() -> i64 {
    let mut ts = sys::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { sys::clock_gettime(sys::CLOCK_MONOTONIC, &mut ts) };
    i64::from(ts.tv_sec) * 1_000_000_000 + i64::from(ts.tv_nsec)
}

fn errno() -> c_int {
    // SAFETY: errno location is thread-local and always valid.
    unsafe { *sys::__errno_location() }
}

/// Write all of `buf` to `fd`, retrying on EINTR and short writes.
fn write_all(fd: c_int, buf: &[u8]) {
    let mut done = 0;
    while done < buf.len() {
        let rest = &buf[done..];
        // SAFETY: writing from a live buffer of the given length.
        let n = unsafe { sys::write(fd, rest.as_ptr(), rest.len()) };
        if n < 0 && errno() == sys::EINTR {
            continue;
        }
        if n <= 0 {
            return;
        }
        done += n as usize;
    }
}

/// Read up to 4 bytes (the exec errno) from `fd` until EOF.
fn read_errno(fd: c_int) -> c_int {
    let mut b = [0u8; 4];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe { sys::read(fd, b[got..].as_mut_ptr(), b.len() - got) };
        if n < 0 && errno() == sys::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    if got == b.len() {
        c_int::from_le_bytes(b)
    } else {
        0
    }
}

/// Longest environment padding a request may ask for.
const MAX_PAD: usize = 4096;

/// `KURABE_ENV_PAD=` and the padding, built in the forked child only.
const PAD_NAME: &[u8] = b"KURABE_ENV_PAD=";
static mut PAD: [u8; PAD_NAME.len() + MAX_PAD + 1] = [0; PAD_NAME.len() + MAX_PAD + 1];

/// The next request: the padding length; `None` at end-of-file.
fn read_request(fd: c_int) -> Option<usize> {
    let mut b = [0u8; 4];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe { sys::read(fd, b[got..].as_mut_ptr(), b.len() - got) };
        if n < 0 && errno() == sys::EINTR {
            continue;
        }
        if n <= 0 {
            return None;
        }
        got += n as usize;
    }
    Some((u32::from_le_bytes(b) as usize).min(MAX_PAD))
}

/// In the forked child: put `KURABE_ENV_PAD` of `pad` bytes into the environment.
fn set_padding(pad: usize) {
    if pad == 0 {
        return;
    }
    // SAFETY: only the single-threaded forked child touches PAD, once.
    unsafe {
        let buf = &mut *std::ptr::addr_of_mut!(PAD);
        buf[..PAD_NAME.len()].copy_from_slice(PAD_NAME);
        buf[PAD_NAME.len()..PAD_NAME.len() + pad].fill(b'x');
        buf[PAD_NAME.len() + pad] = 0;
        sys::putenv(buf.as_mut_ptr().cast());
    }
}

/// One execution of `argv` (see the module docs); false when fork failed.
fn run_once(report: c_int, argv: *const *const c_char, pad: usize) -> bool {
    let mut errpipe = [0 as c_int; 2];
    // SAFETY: errpipe is a valid out-array of two ints.
    if unsafe { sys::pipe2(errpipe.as_mut_ptr(), sys::O_CLOEXEC) } != 0 {
        return false;
    }
    // Every execution reads an input file from its start (a pipe or
    // /dev/null refuses the seek, harmlessly).
    // SAFETY: lseek on fd 0 has no memory-safety preconditions.
    unsafe { sys::lseek(0, 0, sys::SEEK_SET) };
    let t0 = now_ns();
    // SAFETY: single-threaded program; the child only calls async-signal-safe
    // functions, and putenv, which is safe in a single-threaded child.
    let pid = unsafe { sys::fork() };
    if pid < 0 {
        return false;
    }
    if pid == 0 {
        // SAFETY: argv is a NULL-terminated argv of live C strings.
        unsafe {
            sys::close(errpipe[0]);
            sys::setpgid(0, 0);
            set_padding(pad);
            sys::execvp(*argv, argv);
        }
        // Only reached when exec failed: tell the parent why, then go.
        write_all(errpipe[1], &errno().to_le_bytes());
        // SAFETY: _exit skips atexit handlers and buffers of the forked copy.
        unsafe { sys::_exit(127) };
    }
    // Also from this side, so the group exists before kurabe may signal it.
    // SAFETY: setpgid and close take plain integers.
    unsafe {
        sys::setpgid(pid, pid);
        sys::close(errpipe[1]);
    }
    let exec_errno = read_errno(errpipe[0]);
    // SAFETY: closing this execution's read end.
    unsafe { sys::close(errpipe[0]) };
    write_all(report, &i64::from(pid).to_le_bytes());
    let mut status: c_int = 0;
    // SAFETY: zeroed rusage is valid; wait4 only writes it.
    let mut ru: sys::Rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals.
        let rc = unsafe { sys::wait4(pid, &mut status, 0, &mut ru) };
        if rc < 0 && errno() == sys::EINTR {
            continue;
        }
        break;
    }
    let wall = now_ns() - t0;
    let us = |t: sys::Timeval| i64::from(t.tv_sec) * 1_000_000 + i64::from(t.tv_usec);
    let fields: [i64; 7] = [
        i64::from(exec_errno),
        i64::from(status),
        us(ru.ru_utime),
        us(ru.ru_stime),
        i64::from(ru.ru_maxrss),
        wall,
        i64::from(pid),
    ];
    let mut rec = [0u8; 56];
    for (chunk, v) in rec.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    write_all(report, &rec);
    true
}

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    if argc < 4 {
        return 2;
    }
    // SAFETY: argv has argc valid entries.
    let (req, report) = unsafe { (parse_fd(*argv.add(1)), parse_fd(*argv.add(2))) };
    let (Some(req), Some(report)) = (req, report) else {
        return 2;
    };
    // Neither the request nor the report pipe may reach the command.
    // SAFETY: fcntl on descriptor numbers; failure is harmless.
    unsafe {
        sys::fcntl(req, sys::F_SETFD, sys::FD_CLOEXEC);
        sys::fcntl(report, sys::F_SETFD, sys::FD_CLOEXEC);
    }
    while let Some(pad) = read_request(req) {
        // SAFETY: argv[3..] is a NULL-terminated argv of live C strings.
        if !run_once(report, unsafe { argv.add(3) }, pad) {
            return 2;
        }
    }
    0
}
