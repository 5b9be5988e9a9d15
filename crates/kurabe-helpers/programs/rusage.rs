//! The rusage helper: the small launcher `kurabe run` and `kurabe cmd`
//! run a `command` workload's executions through, so each command's max
//! RSS is its own. kurabe embeds it (see kurabe-helpers' crate docs) and
//! runs it from memory.
//!
//! Usage (internal): `rusage REQ_FD REPORT_FD PID_FD PROGRAM [ARGS...]`.
//! One helper serves every execution of a run: for each request — a
//! little-endian u32 read from REQ_FD, the length of the environment
//! padding — it rewinds its stdin (so an input file is read from its start
//! by every execution) and starts PROGRAM with ARGS by `posix_spawnp` in a
//! process group of its own, with its environment plus `KURABE_ENV_PAD=`
//! and that many `x` when the length is not 0 (at most 4096); cwd and
//! stdio are inherited. As soon as the exec has happened (or failed) it
//! writes the child's pid (0 when the exec failed) to PID_FD as one
//! little-endian i64, so kurabe can sample the command's memory and kill
//! its group, then `wait4`s it, kills what is left of its process group,
//! and writes one 56-byte record of seven little-endian i64 to REPORT_FD:
//! `exec_errno` (0 when the exec happened), `wait_status`, `user_us`,
//! `sys_us`, `max_rss_kib`, `wall_ns` (spawn to reaped), and the child's
//! pid. At end-of-file on REQ_FD it exits 0; exit 2 on a malformed command
//! line.
//!
//! Why the pid has a pipe of its own: kurabe sleeps in `poll` on the report
//! pipe; a pid written there woke it once more per execution, for nothing
//! in the common case (a command too short to sample, no timeout).
//!
//! Why `posix_spawnp` (glibc and musl start the child with `CLONE_VM |
//! CLONE_VFORK`): a `fork` copied this image's page tables for every
//! execution, and hyperfine, the bar for kurabe's cost per run, spawns the
//! same way. The exec folds this image's whole high-water RSS into the
//! command's `ru_maxrss` (shared-memory vfork: the child runs in this
//! address space until its exec), so build.rs links it statically: no
//! ld.so or libc pages, and `true` measures about 1.0 MiB, as under
//! `/usr/bin/time`, where dynamically linked it measured 1.4-1.8.
//!
//! Why one helper for many executions: starting it costs an exec, about
//! what running `true` costs, so starting one per execution doubled
//! kurabe's cost per run against hyperfine's (which spawns the command
//! only). Served from a running helper, an execution costs a spawn from
//! this small image and the command's exec, as hyperfine's does.
//!
//! Why it exists: Linux carries the *pre-exec* address space's high-water
//! mark into the new program's `ru_maxrss` (`exec_mmap` →
//! `setmax_mm_hiwater_rss`). A command spawned straight from kurabe — by
//! fork or by posix_spawn's shared-memory vfork — therefore reports at least
//! kurabe's own peak RSS (≈ 9–11 MiB), and `true` looks like a 10 MiB
//! program. Starting it from this helper's small image instead puts the floor
//! at the helper's few hundred KiB, below `/usr/bin/time`'s own.
//!
//! Like the Execl helper it is `#![no_main]` and uses libc only (declared
//! here: build.rs compiles this file alone with rustc, so no crate is
//! available), so its image stays small: one allocation (the environment
//! array, at start), no formatting, no panicking path.

#![no_main]

use std::ffi::{c_char, c_int};

/// The libc calls, types and constants used, declared here (see the module docs).
mod sys {
    use std::ffi::{c_char, c_int, c_long, c_short, c_void};

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

    /// `posix_spawnattr_t`, opaque: 336 bytes in glibc and musl, room for more.
    #[repr(C, align(8))]
    pub struct SpawnAttr(pub [u8; 512]);

    pub const CLOCK_MONOTONIC: c_int = 1;
    pub const EINTR: c_int = 4;
    pub const F_SETFD: c_int = 2;
    pub const FD_CLOEXEC: c_int = 1;
    pub const SEEK_SET: c_int = 0;
    pub const SIGKILL: c_int = 9;
    /// The same value in glibc and musl.
    pub const POSIX_SPAWN_SETPGROUP: c_short = 2;

    extern "C" {
        pub static environ: *const *const c_char;
        pub fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
        pub fn __errno_location() -> *mut c_int;
        pub fn write(fd: c_int, buf: *const u8, len: usize) -> isize;
        pub fn read(fd: c_int, buf: *mut u8, len: usize) -> isize;
        pub fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        pub fn wait4(pid: c_int, status: *mut c_int, options: c_int, ru: *mut Rusage) -> c_int;
        pub fn kill(pid: c_int, sig: c_int) -> c_int;
        pub fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
        pub fn malloc(size: usize) -> *mut c_void;
        pub fn posix_spawnattr_init(attr: *mut SpawnAttr) -> c_int;
        pub fn posix_spawnattr_setflags(attr: *mut SpawnAttr, flags: c_short) -> c_int;
        pub fn posix_spawnattr_setpgroup(attr: *mut SpawnAttr, pgroup: c_int) -> c_int;
        pub fn posix_spawnp(
            pid: *mut c_int,
            file: *const c_char,
            actions: *const c_void,
            attr: *const SpawnAttr,
            argv: *const *const c_char,
            envp: *const *const c_char,
        ) -> c_int;
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

/// Longest environment padding a request may ask for.
const MAX_PAD: usize = 4096;

/// `KURABE_ENV_PAD=` and the padding, rewritten for each execution (the
/// spawned child has exec'd, copying it, before `posix_spawnp` returns).
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

/// What every execution is started with.
struct Spawn {
    argv: *const *const c_char,
    /// This helper's environment, then one free slot (the padding or
    /// NULL), then NULL.
    envp: *mut *const c_char,
    /// Index of the free slot.
    slot: usize,
    attr: sys::SpawnAttr,
}

impl Spawn {
    /// The environment array and the spawn attributes (own process group);
    /// `None` when memory or the attributes cannot be had.
    fn new(argv: *const *const c_char) -> Option<Spawn> {
        // SAFETY: environ is a NULL-terminated array of C strings; the
        // copy has room for all of them, the slot and the terminator.
        unsafe {
            let mut n = 0;
            while !(*sys::environ.add(n)).is_null() {
                n += 1;
            }
            let envp: *mut *const c_char = sys::malloc((n + 2) * std::mem::size_of::<*const c_char>()).cast();
            if envp.is_null() {
                return None;
            }
            std::ptr::copy_nonoverlapping(sys::environ, envp, n);
            *envp.add(n) = std::ptr::null();
            *envp.add(n + 1) = std::ptr::null();
            let mut attr = sys::SpawnAttr([0; 512]);
            let ok = sys::posix_spawnattr_init(&mut attr) == 0
                && sys::posix_spawnattr_setflags(&mut attr, sys::POSIX_SPAWN_SETPGROUP) == 0
                && sys::posix_spawnattr_setpgroup(&mut attr, 0) == 0;
            ok.then_some(Spawn {
                argv,
                envp,
                slot: n,
                attr,
            })
        }
    }

    /// Start one execution with `pad` bytes of padding: its pid, or the
    /// exec's error number.
    fn start(&self, pad: usize) -> Result<c_int, c_int> {
        // SAFETY: PAD is only touched here, in this single-threaded
        // program; envp has a slot at `self.slot`; argv is NULL-terminated.
        unsafe {
            let buf = &mut *std::ptr::addr_of_mut!(PAD);
            *self.envp.add(self.slot) = if pad == 0 {
                std::ptr::null()
            } else {
                buf[..PAD_NAME.len()].copy_from_slice(PAD_NAME);
                buf[PAD_NAME.len()..PAD_NAME.len() + pad].fill(b'x');
                buf[PAD_NAME.len() + pad] = 0;
                buf.as_ptr().cast()
            };
            let mut pid: c_int = 0;
            let envp = self.envp.cast_const();
            let rc = sys::posix_spawnp(&mut pid, *self.argv, std::ptr::null(), &self.attr, self.argv, envp);
            if rc == 0 {
                Ok(pid)
            } else {
                Err(rc)
            }
        }
    }
}

/// Reap `pid`: its wait status and rusage.
fn reap(pid: c_int) -> (c_int, sys::Rusage) {
    let mut status: c_int = 0;
    // SAFETY: zeroed rusage is valid; wait4 only writes it.
    let mut ru: sys::Rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals.
        let rc = unsafe { sys::wait4(pid, &mut status, 0, &mut ru) };
        if rc < 0 && errno() == sys::EINTR {
            continue;
        }
        return (status, ru);
    }
}

/// One execution (see the module docs).
fn run_once(spawn: &Spawn, report: c_int, pid_fd: c_int, pad: usize) {
    // Every execution reads an input file from its start (a pipe or
    // /dev/null refuses the seek, harmlessly).
    // SAFETY: lseek on fd 0 has no memory-safety preconditions.
    unsafe { sys::lseek(0, 0, sys::SEEK_SET) };
    let t0 = now_ns();
    let started = spawn.start(pad);
    let pid = started.unwrap_or(0);
    write_all(pid_fd, &i64::from(pid).to_le_bytes());
    let (exec_errno, status, ru) = match started {
        Ok(pid) => {
            let (status, ru) = reap(pid);
            // Whatever the command left running in its group dies with it.
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { sys::kill(-pid, sys::SIGKILL) };
            (0, status, ru)
        }
        // SAFETY: an all-zero rusage is a valid value.
        Err(e) => (e, 0, unsafe { std::mem::zeroed() }),
    };
    let wall = now_ns() - t0;
    write_all(report, &record(exec_errno, status, &ru, wall, pid));
}

/// The 56-byte record of one execution (see the module docs).
fn record(exec_errno: c_int, status: c_int, ru: &sys::Rusage, wall: i64, pid: c_int) -> [u8; 56] {
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
    rec
}

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    if argc < 5 {
        return 2;
    }
    // SAFETY: argv has argc valid entries.
    let fds = unsafe { [1, 2, 3].map(|i| parse_fd(*argv.add(i))) };
    let [Some(req), Some(report), Some(pid_fd)] = fds else {
        return 2;
    };
    // None of the three pipes may reach the command.
    for fd in [req, report, pid_fd] {
        // SAFETY: fcntl on a descriptor number; failure is harmless.
        unsafe { sys::fcntl(fd, sys::F_SETFD, sys::FD_CLOEXEC) };
    }
    // SAFETY: argv[4..] is a NULL-terminated argv of live C strings.
    let Some(spawn) = Spawn::new(unsafe { argv.add(4) }) else {
        return 2;
    };
    while let Some(pad) = read_request(req) {
        run_once(&spawn, report, pid_fd, pad);
    }
    0
}
