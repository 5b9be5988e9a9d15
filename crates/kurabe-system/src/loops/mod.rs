//! The per-iteration work of each test, run inside a forked copy.
//!
//! Each loop does per iteration what the matching UnixBench program does
//! (`pgms/<name>` built from `src/<name>.c`), and returns one [`Record`]:
//! the count the C program would print as `COUNT|…`, its own time when it
//! prints `TIME|…`, and a `check` value that proves the loop did its work
//! (tests assert on it). Loops run after `fork`, so they do not allocate:
//! [`Job::prepare`] builds every path and argv beforehand.
//!
//! What each loop does (in UnixBench's words, then ours):
//! * **syscall** — per loop: `close(dup(fd))`, a raw `getpid` system call,
//!   `getuid()`, `umask(022)`. check = loops whose `getpid` returned our pid.
//! * **pipe** — one pipe; per loop write 512 bytes, read them back.
//!   check = bytes read.
//! * **context1** — two processes, two pipes; the master writes its counter,
//!   the partner reads it, verifies it equals its own counter and writes it
//!   back; the master verifies the echo. check = verified echoes.
//! * **spawn** — per loop `fork`; the child exits at once with `exit(0)`;
//!   the parent `wait`s and fails on any other status. check = children
//!   reaped with status 0. The loop runs in the helper program
//!   (kurabe-helpers' execl program, `spawn FD MS`, see [`spawn_argv`]), not in the
//!   forked kurabe copy, because what one `fork` costs depends on the process
//!   that forks: the kernel duplicates every mapping (its `vm_area_struct`
//!   and anon-vma links) and the page tables of its private pages, and tears
//!   them down again when the child exits. A forked copy of kurabe has 35
//!   mappings, 4.7 MB resident and 60 kB of page tables (a 15 MB binary,
//!   more shared libraries, heap arenas); UnixBench's `spawn` has 23
//!   mappings, 1.3 MB and 40 kB. Forking from kurabe made 0.83–0.87 times
//!   as many processes per second as `spawn` on a quiet machine; its anon
//!   memory was not the cause (440 kB; `malloc_trim` changed nothing). The
//!   helper has 22 mappings (libc only, no heap), 1.3 MB resident and 40 kB
//!   of page tables; its CPU time per fork+exit+wait matches `spawn`'s
//!   (105 µs both, medians of 8 interleaved runs; the helper's docs say why
//!   it links the unwinder statically).
//! * **execl** — see [`execl_argv`]: the copy `execve`s the helper,
//!   which re-`execve`s itself with an incremented counter until the time is
//!   up (no fork anywhere in the chain) and reports the count and its pid.
//! * **fstime / fsbuffer / fsdisk** — see [`fscopy`].
//! * **shell1 / shell8** — see [`shell`].
//! * **dhry2reg**, **whetstone-double** — see [`dhry`], [`whets`].

pub(crate) mod dhry;
pub(crate) mod fscopy;
pub(crate) mod shell;
pub(crate) mod whets;

use std::ffi::{c_char, CString};
use std::os::fd::RawFd;
use std::path::Path;

use crate::worker::{self, Record};

/// Error codes a child can report (the helper program reports some of them too).
pub mod code {
    #![allow(missing_docs)]
    pub const PIPE: u64 = 1;
    pub const FORK: u64 = 2;
    pub const SYNC: u64 = 3;
    pub const CHILD_STATUS: u64 = 4;
    pub const EXEC_HELPER: u64 = 5;
    pub const CREATE: u64 = 6;
    pub const WRITE: u64 = 7;
    pub const READ: u64 = 8;
    pub const EXEC_SH: u64 = 9;
    pub const SHELL_STATUS: u64 = 10;
    pub const CHDIR: u64 = 11;
    pub const WRONG_STATE: u64 = 12;
    pub const CGROUP: u64 = 13;
}

/// Human text for a child's error code.
pub fn error_text(code: u64) -> &'static str {
    match code {
        code::PIPE => "pipe() failed",
        code::FORK => "fork() failed (process limit reached?)",
        code::SYNC => "context switch partner echoed a wrong counter",
        code::CHILD_STATUS => "a forked child exited with a non-zero status",
        code::EXEC_HELPER => "execve of the Execl helper program failed",
        code::CREATE => "cannot create the file-copy test files in the temp dir",
        code::WRITE => "write to the file-copy test file failed",
        code::READ => "read from the file-copy test file failed",
        code::EXEC_SH => "execve of /bin/sh failed",
        code::SHELL_STATUS => "the shell workload (sort/od/grep/tee/wc) exited non-zero",
        code::CHDIR => "cannot enter the temp dir",
        code::WRONG_STATE => "the benchmark computed wrong values",
        code::CGROUP => "a test process could not join the run's cgroup (the variant's limits)",
        _ => "unknown failure in a test process",
    }
}

/// Everything one test's loop needs, built before `fork`.
pub(crate) enum Job {
    Dhry,
    Whets,
    Syscall,
    Pipe,
    Context,
    Spawn(ExecArgs),
    Execl(ExecArgs),
    FileCopy(fscopy::FsJob),
    Shell(shell::ShellJob),
}

/// A prepared `execve`: owned strings and the NULL-terminated pointer arrays into them.
pub(crate) struct ExecArgs {
    _strings: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

impl ExecArgs {
    /// Prepare `path args…` with the given environment.
    pub(crate) fn new(args: Vec<CString>, env: Vec<CString>) -> ExecArgs {
        let mut argv: Vec<*const c_char> = args.iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const c_char> = env.iter().map(|s| s.as_ptr()).collect();
        envp.push(std::ptr::null());
        let mut strings = args;
        strings.extend(env);
        ExecArgs {
            _strings: strings,
            argv,
            envp,
        }
    }

    /// `execve` (returns only on failure).
    pub(crate) fn exec(&self) {
        // SAFETY: argv/envp are NULL-terminated arrays of live C strings.
        unsafe { libc::execve(self.argv[0], self.argv.as_ptr(), self.envp.as_ptr()) };
    }
}

/// The current environment as `KEY=VALUE` C strings, with overrides.
pub(crate) fn environment(overrides: &[(&str, &str)]) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let mut out: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| !overrides.iter().any(|(o, _)| k.as_bytes() == o.as_bytes()))
        .filter_map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect();
    for (k, v) in overrides {
        out.push(CString::new(format!("{k}={v}")).expect("no NUL in overrides"));
    }
    out
}

/// Arguments of the Execl helper's first invocation:
/// `helper <result fd> <duration ms> <count> <start ms>` (count and start 0).
/// The helper counts itself, and on every invocation compares the clock with
/// the start; while time is left it `execve`s itself with count + 1, as
/// UnixBench's `execl` does (with whole seconds there, milliseconds here).
pub(crate) fn execl_argv(helper: &Path, secs: f64) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let ms = (secs * 1000.0).round().max(1.0) as u64;
    vec![
        CString::new(helper.as_os_str().as_bytes()).expect("helper path without NUL"),
        CString::new(HELPER_FD.to_string()).expect("digits"),
        CString::new(ms.to_string()).expect("digits"),
        CString::new("0").expect("digit"),
        CString::new("0").expect("digit"),
    ]
}

/// Arguments of the helper's Process Creation mode:
/// `helper spawn <result fd> <duration ms>`. The helper runs the fork/exit/wait
/// loop itself, so the process that forks is the small helper image, as in
/// UnixBench, not kurabe (see the module docs).
pub(crate) fn spawn_argv(helper: &Path, secs: f64) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let ms = (secs * 1000.0).round().max(1.0) as u64;
    vec![
        CString::new(helper.as_os_str().as_bytes()).expect("helper path without NUL"),
        CString::new("spawn").expect("no NUL"),
        CString::new(HELPER_FD.to_string()).expect("digits"),
        CString::new(ms.to_string()).expect("digits"),
    ]
}

/// The descriptor the helper program writes its record to.
pub const HELPER_FD: RawFd = 3;

impl Job {
    /// Run this job's loop for `secs` in the current (child) process;
    /// `result_fd` is where the record goes.
    pub(crate) fn run(&self, secs: f64, result_fd: RawFd) -> Record {
        match self {
            Job::Dhry => dhry::run(secs),
            Job::Whets => whets::run(secs),
            Job::Syscall => syscall_loop(secs),
            Job::Pipe => pipe_loop(secs),
            Job::Context => context_loop(secs),
            Job::Spawn(args) | Job::Execl(args) => exec_helper(args, result_fd),
            Job::FileCopy(job) => job.run(secs),
            Job::Shell(job) => job.run(secs),
        }
    }
}

fn syscall_loop(secs: f64) -> Record {
    let mut fds = [0; 2];
    // SAFETY: plain syscalls on descriptors we own.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 || libc::close(fds[1]) != 0 {
            return Record::error(code::PIPE);
        }
    }
    let fd = fds[0];
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() } as libc::c_long;
    let mut loops: u64 = 0;
    let mut good: u64 = 0;
    worker::arm_timer(secs);
    while !worker::stopped() {
        // SAFETY: the same four calls UnixBench's syscall.c makes per loop;
        // getpid goes through syscall(2) so no libc cache can skip it.
        let pid = unsafe {
            libc::close(libc::dup(fd));
            let pid = libc::syscall(libc::SYS_getpid);
            libc::getuid();
            libc::umask(0o022);
            pid
        };
        good += u64::from(pid == me);
        loops += 1;
    }
    Record {
        count: loops as f64,
        time_s: f64::NAN,
        check: good,
        err: 0,
    }
}

fn pipe_loop(secs: f64) -> Record {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Record::error(code::PIPE);
    }
    let mut buf = [0u8; 512];
    let mut loops: u64 = 0;
    let mut bytes: u64 = 0;
    worker::arm_timer(secs);
    while !worker::stopped() {
        // SAFETY: writing and reading a live 512-byte buffer.
        unsafe {
            libc::write(fds[1], buf.as_ptr().cast(), buf.len());
            let r = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
            if r > 0 {
                bytes += r as u64;
            }
        }
        loops += 1;
    }
    Record {
        count: loops as f64,
        time_s: f64::NAN,
        check: bytes,
        err: 0,
    }
}

fn read_u64(fd: RawFd) -> Option<u64> {
    let mut v = [0u8; 8];
    // SAFETY: reading into a live 8-byte buffer.
    let r = unsafe { libc::read(fd, v.as_mut_ptr().cast(), 8) };
    (r == 8).then(|| u64::from_ne_bytes(v))
}

fn write_u64(fd: RawFd, v: u64) -> bool {
    let b = v.to_ne_bytes();
    // SAFETY: writing a live 8-byte buffer.
    unsafe { libc::write(fd, b.as_ptr().cast(), 8) == 8 }
}

fn context_loop(secs: f64) -> Record {
    let mut p1 = [0; 2];
    let mut p2 = [0; 2];
    // SAFETY: plain syscalls; the partner only uses async-signal-safe calls.
    unsafe {
        if libc::pipe(p1.as_mut_ptr()) != 0 || libc::pipe(p2.as_mut_ptr()) != 0 {
            return Record::error(code::PIPE);
        }
        let partner = libc::fork();
        if partner < 0 {
            return Record::error(code::FORK);
        }
        if partner == 0 {
            // Partner: read p1, check the counter, echo it on p2. With
            // `--pin`, it first takes its own CPU (outside the loop).
            crate::pin::pin_partner();
            libc::close(p1[1]);
            libc::close(p2[0]);
            let mut iter: u64 = 0;
            loop {
                let Some(got) = read_u64(p1[0]) else {
                    libc::_exit(0)
                };
                if got != iter {
                    libc::_exit(2);
                }
                if !write_u64(p2[1], iter) {
                    libc::_exit(0);
                }
                iter += 1;
            }
        }
        libc::close(p1[0]);
        libc::close(p2[1]);
        let mut iter: u64 = 0;
        let mut err = 0;
        worker::arm_timer(secs);
        while !worker::stopped() {
            if !write_u64(p1[1], iter) {
                break;
            }
            match read_u64(p2[0]) {
                Some(echo) if echo == iter => iter += 1,
                Some(_) => {
                    err = code::SYNC;
                    break;
                }
                None => break, // EINTR from the timer, or the partner died
            }
        }
        // Closing our ends makes the partner see end-of-stream and exit.
        libc::close(p1[1]);
        libc::close(p2[0]);
        let mut status = 0;
        while libc::waitpid(partner, &mut status, 0) < 0 {}
        if err == 0 && status != 0 {
            err = code::SYNC;
        }
        Record {
            count: iter as f64,
            time_s: f64::NAN,
            check: iter,
            err,
        }
    }
}

/// `waitpid`, retried on `EINTR` (the timer) so no child is left a zombie.
pub(crate) fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return -1;
        }
    }
}

/// Hand the copy over to the helper program, its record pipe on [`HELPER_FD`].
fn exec_helper(args: &ExecArgs, result_fd: RawFd) -> Record {
    // SAFETY: descriptor juggling in our own process before execve.
    unsafe {
        if result_fd != HELPER_FD && libc::dup2(result_fd, HELPER_FD) < 0 {
            return Record::error(code::EXEC_HELPER);
        }
        libc::fcntl(HELPER_FD, libc::F_SETFD, 0);
    }
    args.exec();
    Record::error(code::EXEC_HELPER)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    fn once(job: &Job, secs: f64) -> worker::CopyOutcome {
        let stop = AtomicBool::new(false);
        let mut out = worker::run_copies(1, Duration::from_secs(30), &stop, &|_, fd| {
            job.run(secs, fd)
        })
        .unwrap();
        out.pop().unwrap()
    }

    #[test]
    fn pipe_moves_512_bytes_per_iteration() {
        let o = once(&Job::Pipe, 0.1);
        assert!(o.record.count > 10.0);
        assert_eq!(o.record.check, o.record.count as u64 * 512);
    }

    #[test]
    fn syscall_loop_makes_real_calls() {
        let o = once(&Job::Syscall, 0.1);
        assert!(o.record.count > 10.0);
        assert_eq!(
            o.record.check, o.record.count as u64,
            "every getpid returned our pid"
        );
    }

    #[test]
    fn context_partner_echoes_every_counter() {
        let o = once(&Job::Context, 0.1);
        assert_eq!(o.record.err, 0, "{}", error_text(o.record.err));
        assert!(o.record.count > 10.0);
        assert_eq!(o.record.check, o.record.count as u64);
    }

    #[test]
    fn wall_time_covers_the_duration() {
        let o = once(&Job::Pipe, 0.2);
        assert!(o.elapsed_s >= 0.2 && o.elapsed_s < 5.0, "{}", o.elapsed_s);
    }
}
