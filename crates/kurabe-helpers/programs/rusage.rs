//! The rusage helper: the small launcher `kurabe run` and `kurabe cmd`
//! run a `command` workload's executions through, so each command's max
//! RSS is its own. kurabe embeds it (see kurabe-helpers' crate docs) and
//! runs it from memory.
//!
//! Usage (internal): `rusage REQ_FD REPORT_FD PID_FD DONE_FD PROGRAM [ARGS...]`.
//! One helper serves every execution of a command line. A request is 16
//! bytes read from REQ_FD: a little-endian u32 count, a u32 of flags
//! (`FLAG_*`) and a u64 seed. The helper then runs PROGRAM with ARGS
//! `count` times back to back, each in a process group of its own, with
//! its environment plus, under `FLAG_PAD`, `KURABE_ENV_PAD=` and 0 to 4095
//! `x` (the length drawn from the seed per execution); cwd and stdio are
//! inherited, and under `FLAG_REWIND` stdin is rewound to its start first.
//! For each execution it writes to PID_FD, as soon as the exec has
//! happened (or failed), 16 bytes: the child's pid (0 when the exec failed)
//! and the CLOCK_MONOTONIC time of the spawn in ns; then it `wait4`s the
//! child, kills what is left of its process group, and writes one 168-byte
//! record of 21 little-endian i64 to REPORT_FD: `exec_errno` (0 when the
//! exec happened), `wait_status`, `user_us`, `sys_us`, `max_rss_kib`,
//! `wall_ns` (spawn to reaped), the child's pid, then the counters of
//! the child's whole tree (`COUNTER_FIELDS`, -1 for one not counted):
//! minor and major faults and voluntary and involuntary context switches
//! (its rusage, which folds in every descendant it reaped), read and write
//! system calls and bytes (`/proc/PID/io` read while it is a zombie,
//! between `waitid(WNOWAIT)` and the reap: the kernel folds reaped
//! descendants in there too), and CPU migrations, instructions, cycles,
//! cache references and misses and branch misses (perf events this helper
//! opens on itself at start with `inherit`, so every child and its
//! descendants count into them as they exit; the same events without
//! `inherit` count the helper alone, which is subtracted). After the last
//! execution of a request it writes the number run as a u32 to DONE_FD.
//! It stops a request early when an exec fails, when an execution fails
//! (non-zero status) under `FLAG_STOP_ON_FAILURE`, or when another request
//! is waiting on REQ_FD (kurabe cancels by sending one with count 0, which
//! is then read and ignored). At end-of-file on REQ_FD it exits 0; exit 2
//! on a malformed command line.
//!
//! Why the done pipe, apart from the pid and report pipes: kurabe sleeps in
//! `poll` on DONE_FD only (and wakes every 20 ms to read the other two, to
//! sample memory, to check for Ctrl-C), so a request of many executions
//! wakes it about once, not once or twice per execution: per execution
//! there is no hop through kurabe at all.
//!
//! Why its own `clone(CLONE_VM | CLONE_VFORK)` and not `posix_spawnp`:
//! glibc's child resets every signal's disposition (about 120
//! `rt_sigaction` calls per spawn) because its caller may have handlers;
//! this program installs none, so its child only sets its process group and
//! execs. And the PATH search is done once, at start: `posix_spawnp` tried
//! every PATH directory before the right one for every execution (9
//! `execve` calls for `true` on a typical PATH). hyperfine, the bar for
//! kurabe's cost per run, pays both per run. The exec folds this image's
//! whole high-water RSS into the command's `ru_maxrss` (shared-memory
//! vfork: the child runs in this address space until its exec), so build.rs
//! links it statically: no ld.so or libc pages, and `true` measures about
//! 1.0 MiB, as under `/usr/bin/time`, where dynamically linked it measured
//! 1.4-1.8.
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
//! available), so its image stays small: two allocations (the environment
//! array and the resolved path, at start), no formatting, no panicking path.

#![no_main]

use std::ffi::{c_char, c_int, c_void};

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

    /// `struct pollfd`.
    #[repr(C)]
    pub struct PollFd {
        pub fd: c_int,
        pub events: c_short,
        pub revents: c_short,
    }

    pub const CLOCK_MONOTONIC: c_int = 1;
    pub const ENOENT: c_int = 2;
    pub const EINTR: c_int = 4;
    pub const EACCES: c_int = 13;
    pub const ENOTDIR: c_int = 20;
    pub const F_SETFD: c_int = 2;
    pub const FD_CLOEXEC: c_int = 1;
    pub const SEEK_SET: c_int = 0;
    pub const SIGKILL: c_int = 9;
    pub const SIGCHLD: c_int = 17;
    pub const CLONE_VM: c_int = 0x100;
    pub const CLONE_VFORK: c_int = 0x4000;
    pub const POLLIN: c_short = 1;
    pub const X_OK: c_int = 1;
    pub const O_RDONLY: c_int = 0;
    pub const O_CLOEXEC: c_int = 0o2000000;
    pub const P_PID: c_int = 1;
    pub const WEXITED: c_int = 4;
    pub const WNOWAIT: c_int = 0x0100_0000;
    #[cfg(target_arch = "x86_64")]
    pub const SYS_PERF_EVENT_OPEN: c_long = 298;
    #[cfg(target_arch = "aarch64")]
    pub const SYS_PERF_EVENT_OPEN: c_long = 241;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const SYS_PERF_EVENT_OPEN: c_long = -1;
    pub const PERF_FLAG_FD_CLOEXEC: c_long = 8;

    /// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0).
    #[repr(C)]
    pub struct PerfAttr {
        pub kind: u32,
        pub size: u32,
        pub config: u64,
        pub sample_period: u64,
        pub sample_type: u64,
        pub read_format: u64,
        pub flags: u64,
        pub wakeup_events: u32,
        pub bp_type: u32,
        pub config1: u64,
    }

    extern "C" {
        pub static environ: *const *const c_char;
        pub fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
        pub fn __errno_location() -> *mut c_int;
        pub fn write(fd: c_int, buf: *const u8, len: usize) -> isize;
        pub fn read(fd: c_int, buf: *mut u8, len: usize) -> isize;
        pub fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        pub fn wait4(pid: c_int, status: *mut c_int, options: c_int, ru: *mut Rusage) -> c_int;
        pub fn waitid(idtype: c_int, id: u32, info: *mut c_void, options: c_int) -> c_int;
        pub fn open(path: *const c_char, flags: c_int, ...) -> c_int;
        pub fn close(fd: c_int) -> c_int;
        pub fn syscall(n: c_long, ...) -> c_long;
        pub fn kill(pid: c_int, sig: c_int) -> c_int;
        pub fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
        pub fn malloc(size: usize) -> *mut c_void;
        pub fn poll(fds: *mut PollFd, n: u64, timeout: c_int) -> c_int;
        pub fn getenv(name: *const c_char) -> *const c_char;
        pub fn access(path: *const c_char, mode: c_int) -> c_int;
        pub fn setpgid(pid: c_int, pgid: c_int) -> c_int;
        pub fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
        pub fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
        pub fn _exit(code: c_int) -> !;
        pub fn clone(f: extern "C" fn(*mut c_void) -> c_int, stack: *mut c_void, flags: c_int, arg: *mut c_void, ...) -> c_int;
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

/// Longest environment padding an execution gets, plus one.
const MAX_PAD: usize = 4096;

/// Request flag: pad the environment by a random length per execution.
const FLAG_PAD: u32 = 1;
/// Request flag: end the request at the first execution that fails.
const FLAG_STOP_ON_FAILURE: u32 = 2;
/// Request flag: rewind stdin (an input file) before every execution.
const FLAG_REWIND: u32 = 4;

/// `KURABE_ENV_PAD=` and the padding, rewritten for each execution (the
/// spawned child has exec'd, copying it, before the spawn returns).
const PAD_NAME: &[u8] = b"KURABE_ENV_PAD=";
static mut PAD: [u8; PAD_NAME.len() + MAX_PAD + 1] = [0; PAD_NAME.len() + MAX_PAD + 1];

/// The child's stack until its exec (it runs in this address space).
#[repr(C, align(16))]
struct Stack([u8; 64 * 1024]);
static mut STACK: Stack = Stack([0; 64 * 1024]);

/// One request: how many executions, how, and the padding's seed.
struct Request {
    count: u32,
    flags: u32,
    seed: u64,
}

/// Read exactly `b.len()` bytes; false at end-of-file or on an error.
fn read_exact(fd: c_int, b: &mut [u8]) -> bool {
    let mut got = 0;
    while got < b.len() {
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe { sys::read(fd, b[got..].as_mut_ptr(), b.len() - got) };
        if n < 0 && errno() == sys::EINTR {
            continue;
        }
        if n <= 0 {
            return false;
        }
        got += n as usize;
    }
    true
}

/// The next request; `None` at end-of-file.
fn read_request(fd: c_int) -> Option<Request> {
    let mut b = [0u8; 16];
    if !read_exact(fd, &mut b) {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Some(Request {
        count: word(0),
        flags: word(4),
        seed: u64::from(word(8)) | u64::from(word(12)) << 32,
    })
}

/// True when another request (a cancel) is waiting on `fd`.
fn request_waiting(fd: c_int) -> bool {
    let mut p = sys::PollFd {
        fd,
        events: sys::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd; a zero timeout only looks.
    unsafe { sys::poll(&mut p, 1, 0) > 0 && p.revents != 0 }
}

/// splitmix64: the padding lengths of a request, from its seed.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What the child needs to exec, and where it leaves its error.
#[repr(C)]
struct ChildArgs {
    /// The program found on PATH at start, or NULL (then `execvpe`).
    path: *const c_char,
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// The child's errno when its setpgid or exec failed, else 0.
    err: c_int,
}

/// The child: its own process group, then the exec. It shares this
/// address space and thread pointer until the exec (the parent is
/// suspended meanwhile), so it only makes system calls and writes `err`.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: arg is the parent's live ChildArgs; the parent waits.
    unsafe {
        let a = &mut *arg.cast::<ChildArgs>();
        if sys::setpgid(0, 0) != 0 {
            a.err = errno();
            sys::_exit(127);
        }
        if !a.path.is_null() {
            sys::execve(a.path, a.argv, a.envp);
            let e = errno();
            if e != sys::ENOENT && e != sys::EACCES && e != sys::ENOTDIR {
                a.err = e;
                sys::_exit(127);
            }
        }
        // Not found at start, or gone since: search PATH as posix_spawnp does.
        sys::execvpe(a.file, a.argv, a.envp);
        a.err = errno();
        sys::_exit(127)
    }
}

/// What every execution is started with.
struct Spawn {
    argv: *const *const c_char,
    /// PROGRAM's path found on PATH at start; NULL when not found.
    path: *const c_char,
    /// This helper's environment, then one free slot (the padding or
    /// NULL), then NULL.
    envp: *mut *const c_char,
    /// Index of the free slot.
    slot: usize,
}

/// Length of the NUL-terminated `p`.
fn c_len(p: *const c_char) -> usize {
    // SAFETY: callers pass NUL-terminated strings.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes().len()
}

/// `file` looked up on PATH as execvp does (an empty entry is the current
/// directory), the first executable found; `file` itself when it holds a
/// `/`; NULL when none is found or memory is short.
fn resolve(file: *const c_char) -> *const c_char {
    // SAFETY: file is NUL-terminated; PATH from getenv is too; the buffer
    // has room for the longest directory, the `/`, the name and the NUL.
    unsafe {
        let name = std::slice::from_raw_parts(file.cast::<u8>(), c_len(file));
        if name.is_empty() || name.contains(&b'/') {
            return if name.is_empty() { std::ptr::null() } else { file };
        }
        let path = sys::getenv(c"PATH".as_ptr());
        let path: &[u8] = if path.is_null() {
            b"/bin:/usr/bin"
        } else {
            std::slice::from_raw_parts(path.cast::<u8>(), c_len(path))
        };
        let buf: *mut u8 = sys::malloc(path.len() + name.len() + 3).cast();
        if buf.is_null() {
            return std::ptr::null();
        }
        for dir in path.split(|&b| b == b':') {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let mut n = 0;
            for &b in dir.iter().chain(b"/").chain(name) {
                *buf.add(n) = b;
                n += 1;
            }
            *buf.add(n) = 0;
            if sys::access(buf.cast(), sys::X_OK) == 0 {
                return buf.cast();
            }
        }
        std::ptr::null()
    }
}

impl Spawn {
    /// The environment array and the program's path; `None` when memory
    /// cannot be had.
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
            Some(Spawn {
                argv,
                path: resolve(*argv),
                envp,
                slot: n,
            })
        }
    }

    /// Start one execution with `pad` bytes of padding: its pid, or the
    /// exec's error number.
    fn start(&self, pad: usize) -> Result<c_int, c_int> {
        // SAFETY: PAD and STACK are only touched here, in this
        // single-threaded program (the child runs while this thread is
        // suspended); envp has a slot at `self.slot`; argv is NULL-terminated.
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
            let mut args = ChildArgs {
                path: self.path,
                file: *self.argv,
                argv: self.argv,
                envp: self.envp.cast_const(),
                err: 0,
            };
            let stack = std::ptr::addr_of_mut!(STACK).cast::<u8>();
            let top = stack.add(std::mem::size_of::<Stack>()).cast::<c_void>();
            let flags = sys::CLONE_VM | sys::CLONE_VFORK | sys::SIGCHLD;
            let arg = std::ptr::addr_of_mut!(args).cast::<c_void>();
            let pid = sys::clone(child, top, flags, arg);
            if pid < 0 {
                return Err(errno());
            }
            let err = std::ptr::read_volatile(std::ptr::addr_of!(args.err));
            if err != 0 {
                reap(pid);
                return Err(err);
            }
            Ok(pid)
        }
    }
}

/// Wait until `pid` has exited without reaping it, so its `/proc` files
/// still hold its totals.
fn wait_exited(pid: c_int) {
    let mut info = [0u64; 16]; // siginfo_t
    loop {
        // SAFETY: info is a live buffer of siginfo_t's 128 bytes.
        let rc = unsafe {
            sys::waitid(sys::P_PID, pid as u32, info.as_mut_ptr().cast(), sys::WEXITED | sys::WNOWAIT)
        };
        if rc < 0 && errno() == sys::EINTR {
            continue;
        }
        return;
    }
}

/// `/proc/PID/io`'s syscr, syscw, rchar and wchar (in that order; -1 each
/// when the file cannot be read).
fn proc_io(pid: c_int) -> [i64; 4] {
    let mut path = [0u8; 32];
    let mut n = 0;
    for &b in b"/proc/" {
        path[n] = b;
        n += 1;
    }
    let mut digits = [0u8; 12];
    let (mut d, mut v) = (0, pid as u32);
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        path[n] = digits[d];
        n += 1;
    }
    for &b in b"/io\0" {
        path[n] = b;
        n += 1;
    }
    let mut buf = [0u8; 512];
    // SAFETY: path is NUL-terminated; buf is live for its length.
    let len = unsafe {
        let fd = sys::open(path.as_ptr().cast(), sys::O_RDONLY | sys::O_CLOEXEC);
        if fd < 0 {
            return [-1; 4];
        }
        let len = sys::read(fd, buf.as_mut_ptr(), buf.len());
        sys::close(fd);
        len
    };
    if len <= 0 {
        return [-1; 4];
    }
    let text = &buf[..len as usize];
    [b"syscr", b"syscw", b"rchar", b"wchar"].map(|k: &[u8; 5]| io_field(text, k))
}

/// The number after `key: ` on a line of `text`; -1 when absent.
fn io_field(text: &[u8], key: &[u8]) -> i64 {
    for line in text.split(|&b| b == b'\n') {
        if line.len() > key.len() && line.starts_with(key) && line[key.len()] == b':' {
            let mut v: i64 = 0;
            for &b in &line[key.len() + 1..] {
                if b.is_ascii_digit() {
                    v = v * 10 + i64::from(b - b'0');
                }
            }
            return v;
        }
    }
    -1
}

/// The perf events counted per execution: (type, config) of CPU
/// migrations (software) and instructions, cycles, cache references,
/// cache misses and branch misses (hardware).
const PERF_EVENTS: [(u32, u64); 6] = [(1, 4), (0, 1), (0, 0), (0, 2), (0, 3), (0, 5)];

/// Each perf event opened on this helper with `inherit` (this helper and
/// every descendant) and without (this helper alone); -1 where it could
/// not be opened (no PMU, perf events not allowed).
struct Perf {
    tree: [c_int; 6],
    own: [c_int; 6],
}

impl Perf {
    /// Open every event on this process.
    fn open() -> Perf {
        let open = |i: usize, inherit: bool| perf_open(PERF_EVENTS[i], inherit);
        Perf {
            tree: [0, 1, 2, 3, 4, 5].map(|i| open(i, true)),
            own: [0, 1, 2, 3, 4, 5].map(|i| open(i, false)),
        }
    }

    /// Each event's count of the descendants so far (-1 when not counted).
    fn read(&self) -> [i64; 6] {
        [0, 1, 2, 3, 4, 5].map(|i| match (perf_read(self.tree[i]), perf_read(self.own[i])) {
            (Some(t), Some(o)) => t.wrapping_sub(o) as i64,
            _ => -1,
        })
    }
}

/// One counting perf event on this process; -1 when it cannot be opened.
fn perf_open((kind, config): (u32, u64), inherit: bool) -> c_int {
    if sys::SYS_PERF_EVENT_OPEN < 0 {
        return -1;
    }
    let attr = sys::PerfAttr {
        kind,
        size: std::mem::size_of::<sys::PerfAttr>() as u32,
        config,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        // bit 1: inherit
        flags: if inherit { 1 << 1 } else { 0 },
        wakeup_events: 0,
        bp_type: 0,
        config1: 0,
    };
    // SAFETY: attr is a live perf_event_attr of the size it states.
    let fd = unsafe {
        sys::syscall(sys::SYS_PERF_EVENT_OPEN, &attr as *const sys::PerfAttr, 0 as c_int, -1 as c_int, -1 as c_int, sys::PERF_FLAG_FD_CLOEXEC)
    };
    if fd < 0 { -1 } else { fd as c_int }
}

/// An event's count; `None` for no event or a failed read.
fn perf_read(fd: c_int) -> Option<u64> {
    if fd < 0 {
        return None;
    }
    let mut b = [0u8; 8];
    read_exact(fd, &mut b).then(|| u64::from_le_bytes(b))
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

/// The helper's three output descriptors.
struct Out {
    report: c_int,
    pid: c_int,
    done: c_int,
}

/// One execution (see the module docs); its exec error and wait status.
fn run_once(spawn: &Spawn, out: &Out, perf: &Perf, pad: usize, rewind: bool) -> (c_int, c_int) {
    if rewind {
        // Every execution reads the input file from its start.
        // SAFETY: lseek on fd 0 has no memory-safety preconditions.
        unsafe { sys::lseek(0, 0, sys::SEEK_SET) };
    }
    let before = perf.read();
    let t0 = now_ns();
    let started = spawn.start(pad);
    let pid = started.unwrap_or(0);
    let mut msg = [0u8; 16];
    msg[..8].copy_from_slice(&i64::from(pid).to_le_bytes());
    msg[8..].copy_from_slice(&t0.to_le_bytes());
    write_all(out.pid, &msg);
    let (exec_errno, status, ru, wall, counted) = match started {
        Ok(pid) => {
            wait_exited(pid);
            let wall = now_ns() - t0;
            let io = proc_io(pid);
            let after = perf.read();
            let (status, ru) = reap(pid);
            // Whatever the command left running in its group dies with it.
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { sys::kill(-pid, sys::SIGKILL) };
            let counted = counters(&ru, io, before, after);
            (0, status, ru, wall, counted)
        }
        // SAFETY: an all-zero rusage is a valid value.
        Err(e) => (e, 0, unsafe { std::mem::zeroed() }, now_ns() - t0, [-1; COUNTER_FIELDS]),
    };
    let head = [i64::from(exec_errno), i64::from(status)];
    write_all(out.report, &record(head, &ru, wall, pid, counted));
    (exec_errno, status)
}

/// The executions of one request; how many ran.
fn serve(spawn: &Spawn, req_fd: c_int, out: &Out, perf: &Perf, r: &Request) -> u32 {
    let mut random = r.seed;
    let mut ran = 0;
    while ran < r.count {
        let pad = if r.flags & FLAG_PAD != 0 {
            (next_random(&mut random) % MAX_PAD as u64) as usize
        } else {
            0
        };
        let (exec_errno, status) = run_once(spawn, out, perf, pad, r.flags & FLAG_REWIND != 0);
        ran += 1;
        let stop = exec_errno != 0 || (status != 0 && r.flags & FLAG_STOP_ON_FAILURE != 0);
        if stop || (ran < r.count && request_waiting(req_fd)) {
            break;
        }
    }
    ran
}

/// Counter fields at the end of a record.
const COUNTER_FIELDS: usize = 14;

/// The counters of one execution (see the module docs): -1 for one not counted.
fn counters(ru: &sys::Rusage, io: [i64; 4], before: [i64; 6], after: [i64; 6]) -> [i64; COUNTER_FIELDS] {
    let l = |i: usize| i64::from(ru.rest[i]);
    let mut c = [-1; COUNTER_FIELDS];
    // ru_minflt, ru_majflt, ru_nvcsw, ru_nivcsw.
    c[..4].copy_from_slice(&[l(3), l(4), l(11), l(12)]);
    c[4..8].copy_from_slice(&io);
    for i in 0..6 {
        if before[i] >= 0 && after[i] >= 0 {
            c[8 + i] = (after[i] - before[i]).max(0);
        }
    }
    c
}

/// The 168-byte record of one execution (see the module docs).
fn record(head: [i64; 2], ru: &sys::Rusage, wall: i64, pid: c_int, counted: [i64; COUNTER_FIELDS]) -> [u8; 168] {
    let us = |t: sys::Timeval| i64::from(t.tv_sec) * 1_000_000 + i64::from(t.tv_usec);
    let times = [us(ru.ru_utime), us(ru.ru_stime), i64::from(ru.ru_maxrss), wall, i64::from(pid)];
    let mut rec = [0u8; 168];
    let fields = head.iter().chain(&times).chain(&counted);
    for (chunk, v) in rec.chunks_exact_mut(8).zip(fields) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    rec
}

/// C entry point.
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    if argc < 6 {
        return 2;
    }
    // SAFETY: argv has argc valid entries.
    let fds = unsafe { [1, 2, 3, 4].map(|i| parse_fd(*argv.add(i))) };
    let [Some(req), Some(report), Some(pid), Some(done)] = fds else {
        return 2;
    };
    // None of the pipes may reach the command.
    for fd in [req, report, pid, done] {
        // SAFETY: fcntl on a descriptor number; failure is harmless.
        unsafe { sys::fcntl(fd, sys::F_SETFD, sys::FD_CLOEXEC) };
    }
    // SAFETY: argv[5..] is a NULL-terminated argv of live C strings.
    let Some(spawn) = Spawn::new(unsafe { argv.add(5) }) else {
        return 2;
    };
    let out = Out { report, pid, done };
    let perf = Perf::open();
    while let Some(r) = read_request(req) {
        if r.count > 0 {
            let ran = serve(&spawn, req, &out, &perf, &r);
            write_all(out.done, &ran.to_le_bytes());
        }
    }
    0
}
