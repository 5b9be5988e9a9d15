//! The rusage helper: the small launcher `kurabe run` starts a `command`
//! workload through, so the command's max RSS is its own. kurabe embeds it
//! (see kurabe-helpers' crate docs) and runs it from memory.
//!
//! Usage (internal): `rusage FD PROGRAM [ARGS...]`. It forks,
//! the child `execvp`s PROGRAM with ARGS (environment, cwd, stdio and
//! process group inherited). The parent writes the child's pid to FD as one
//! little-endian i64 as soon as the exec has happened (or failed), so kurabe
//! can sample the command's memory while it runs; then it `wait4`s it and
//! writes one 56-byte record of seven little-endian i64 to FD, then exits 0:
//! `exec_errno` (0 when the exec happened), `wait_status`, `user_us`,
//! `sys_us`, `max_rss_kib`, `wall_ns` (fork to reaped), and the child's pid.
//! Exit 2 on a malformed command line or a failed fork (no record).
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

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    if argc < 3 {
        return 2;
    }
    // SAFETY: argv has argc valid entries.
    let Some(fd) = parse_fd(unsafe { *argv.add(1) }) else {
        return 2;
    };
    // Neither the report pipe nor the exec-error pipe may reach the command.
    // SAFETY: fcntl on a descriptor number; failure is harmless.
    unsafe { sys::fcntl(fd, sys::F_SETFD, sys::FD_CLOEXEC) };
    let mut errpipe = [0 as c_int; 2];
    // SAFETY: errpipe is a valid out-array of two ints.
    if unsafe { sys::pipe2(errpipe.as_mut_ptr(), sys::O_CLOEXEC) } != 0 {
        return 2;
    }
    let t0 = now_ns();
    // SAFETY: single-threaded program; the child only calls async-signal-safe functions.
    let pid = unsafe { sys::fork() };
    if pid < 0 {
        return 2;
    }
    if pid == 0 {
        // SAFETY: argv[2..] is a NULL-terminated argv of live C strings.
        unsafe {
            sys::close(errpipe[0]);
            sys::execvp(*argv.add(2), argv.add(2));
        }
        // Only reached when exec failed: tell the parent why, then go.
        let e = errno().to_le_bytes();
        write_all(errpipe[1], &e);
        // SAFETY: _exit skips atexit handlers and buffers of the forked copy.
        unsafe { sys::_exit(127) };
    }
    // SAFETY: closing our copy of the write end so the read sees EOF.
    unsafe { sys::close(errpipe[1]) };
    let exec_errno = read_errno(errpipe[0]);
    write_all(fd, &i64::from(pid).to_le_bytes());
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
    write_all(fd, &rec);
    0
}
