//! Timed executions of a command through kurabe's rusage helper.
//!
//! Owns starting the helper ([`kurabe_helpers::rusage`]) for a run, with
//! the command's input, output, environment, process group or cgroup
//! ([`Session::start`]); one execution per request to it
//! ([`Session::exec`]), supervised from the calling thread; sampling the
//! command's Σ PSS while it lives; and decoding the helper's report into a
//! [`Timed`] execution. It must not print, choose metrics (`measure.rs`
//! does) or touch the store.
//!
//! Why a helper: Linux carries the pre-exec address space's high-water mark
//! into the new program's `ru_maxrss`, so a command forked (or vforked by
//! posix_spawn) straight from kurabe reports at least kurabe's own peak —
//! ≈ 10 MiB for `true`. The helper is a tiny fresh image that forks the
//! command, `wait4`s it and sends its rusage back over a pipe. It measures
//! the wall time, fork to reaped, so kurabe's own work is not in it.
//!
//! Why it is cheap (hyperfine's cost per run is the bar,
//! `bench/cmd-vs-hyperfine.sh`): one helper serves every execution of a
//! run, so an execution costs a fork of the helper's small image and the
//! command's exec — what hyperfine's spawn costs — not also an exec of the
//! helper and a fork of kurabe. The helper is started by posix_spawn (no
//! `pre_exec` hook) unless the run has a cgroup to enter, and one `poll`
//! loop on the report pipe, the helper's pidfd and the output pipes
//! replaces the threads (stderr reader, output drain, watchdog) that each
//! execution used to start while the command ran.
//!
//! Σ PSS: a command still running 100 ms after it started is sampled
//! (kurabe-probe's [`TreeSampler`], the command's tree), then every 50 ms
//! or a fifth of its age (at most every 250 ms), so a long command costs a
//! few dozen samples and a short one none. Not earlier: a sample reads
//! /proc (a scan for the tree's members, `smaps_rollup`), CPU that a busy
//! machine takes from the command being timed.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kurabe_model::plan::{CommandOutput, CommandWorkload, ExecCost};
use kurabe_probe::{SamplerConfig, TreeSampler};

use crate::target::{RunFailure, TAIL_LINES};

/// One timed execution of a command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Timed {
    pub(crate) wall_s: f64,
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    pub(crate) max_rss_bytes: u64,
}

impl Timed {
    /// These times less a fixed per-execution `cost`, never below 0.
    pub(crate) fn less(self, cost: &ExecCost) -> Timed {
        Timed {
            wall_s: (self.wall_s - cost.wall_s).max(0.0),
            user_s: (self.user_s - cost.user_s).max(0.0),
            sys_s: (self.sys_s - cost.system_s).max(0.0),
            ..self
        }
    }
}

/// A timed execution and how it ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Execution {
    pub(crate) timed: Timed,
    /// Exit code; `None` when a signal ended it.
    pub(crate) exit_code: Option<i32>,
    /// Highest Σ PSS of the command's tree seen; `None` when it ended
    /// before the first sample.
    pub(crate) pss_peak_bytes: Option<u64>,
}

/// What one timed execution starts, and where.
#[derive(Clone, Copy)]
pub(crate) struct Launch<'a> {
    pub(crate) helper: &'a Path,
    pub(crate) argv: &'a [String],
    pub(crate) env: &'a std::collections::BTreeMap<String, String>,
    pub(crate) cwd: Option<&'a Path>,
    /// Input, output, failure and environment settings.
    pub(crate) workload: &'a CommandWorkload,
    pub(crate) cgroup: Option<&'a kurabe_probe::cgroup::RunCgroup>,
    /// Sample the command's Σ PSS while it runs.
    pub(crate) sample_memory: bool,
}

/// The helper's record: seven little-endian i64 (see kurabe-helpers'
/// `programs/rusage.rs`); the pid comes first on a pipe of its own.
const REPORT_LEN: usize = 56;

/// A decoded helper report.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HelperRecord {
    exec_errno: i32,
    wait_status: i32,
    timed: Timed,
}

/// A complete record; `None` when it is incomplete.
fn decode_record(b: &[u8]) -> Option<HelperRecord> {
    if b.len() != REPORT_LEN {
        return None;
    }
    let f = |i: usize| word(b, i).unwrap_or(0);
    Some(HelperRecord {
        exec_errno: i32::try_from(f(0)).ok()?,
        wait_status: i32::try_from(f(1)).ok()?,
        timed: Timed {
            wall_s: f(5) as f64 / 1e9,
            user_s: f(2) as f64 / 1e6,
            sys_s: f(3) as f64 / 1e6,
            max_rss_bytes: u64::try_from(f(4)).unwrap_or(0) * 1024,
        },
    })
}

/// The `i`th little-endian i64 of `b`, when it is all there.
fn word(b: &[u8], i: usize) -> Option<i64> {
    let bytes = b.get(i * 8..i * 8 + 8)?;
    Some(i64::from_le_bytes(bytes.try_into().ok()?))
}

/// Length of the `KURABE_ENV_PAD` padding: 0–4095 bytes, new every call.
fn env_padding() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded randomly per process and varies per instance:
    // enough to spread the stack's offset, no dependency needed.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    (h.finish() % 4096) as u32
}

/// Point the command's stdin, stdout and stderr where the workload says.
fn redirect(cmd: &mut Command, w: &CommandWorkload) -> Result<(), RunFailure> {
    let open_err = |what: &str, p: &Path, e: std::io::Error| {
        RunFailure::new(format!("cannot open {what} {}: {e}", p.display()))
    };
    match &w.stdin {
        Some(p) => cmd.stdin(std::fs::File::open(p).map_err(|e| open_err("the input file", p, e))?),
        None => cmd.stdin(Stdio::null()),
    };
    match &w.output {
        CommandOutput::Null => cmd.stdout(Stdio::null()).stderr(Stdio::piped()),
        CommandOutput::Pipe => cmd.stdout(Stdio::piped()).stderr(Stdio::piped()),
        CommandOutput::Inherit => cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()),
        CommandOutput::File(p) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| open_err("the output file", p, e))?;
            let f2 = f
                .try_clone()
                .map_err(|e| open_err("the output file", p, e))?;
            cmd.stdout(f).stderr(f2)
        }
    };
    Ok(())
}

/// Set or clear a descriptor flag (`F_GETFD`/`F_GETFL` family) on `fd`.
fn set_flag(fd: RawFd, get: libc::c_int, set: libc::c_int, flag: libc::c_int, on: bool) {
    // SAFETY: fcntl on a descriptor this process owns; no memory is passed.
    unsafe {
        let old = libc::fcntl(fd, get);
        if old >= 0 {
            libc::fcntl(fd, set, if on { old | flag } else { old & !flag });
        }
    }
}

/// Make reads from `fd` return at once when it holds nothing.
fn nonblocking(fd: RawFd) {
    set_flag(fd, libc::F_GETFL, libc::F_SETFL, libc::O_NONBLOCK, true);
}

/// A pipe, both ends close-on-exec; the read end non-blocking when asked.
fn pipe(nonblocking_read: bool) -> std::io::Result<(std::fs::File, std::fs::File)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid out-array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these descriptors; each is owned once.
    let (r, w) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    if nonblocking_read {
        nonblocking(r.as_raw_fd());
    }
    Ok((r, w))
}

/// The helper's pidfd: readable once it has exited (None where pidfds are missing).
fn pidfd_of(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; the result is a new fd or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative result is a descriptor this process now owns.
    (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

/// The helper's command line for `l`, its three pipe ends passed on.
fn helper_command(l: &Launch<'_>, fds: [RawFd; 3]) -> Result<Command, RunFailure> {
    let mut cmd = Command::new(l.helper);
    if !l.workload.pass_secrets {
        // kurabe's secrets (store URL, PostgreSQL password) stay with
        // kurabe unless the workload asks for them (`kurabe cmd` does).
        kurabe_store::scrub_secrets(&mut cmd);
    }
    cmd.args(fds.map(|fd| fd.to_string()))
        .args(l.argv)
        .envs(l.env);
    redirect(&mut cmd, l.workload)?;
    match l.cgroup {
        Some(cg) => cg.prepare(&mut cmd),
        None => {
            cmd.process_group(0);
        }
    }
    if let Some(d) = l.cwd {
        cmd.current_dir(d);
    }
    Ok(cmd)
}

/// The pipes between kurabe and a helper: kurabe's ends, and the helper's.
struct Pipes {
    /// Requests: one u32 (the padding length) per execution.
    requests: std::fs::File,
    /// The helper's records, non-blocking.
    report: std::fs::File,
    /// The commands' pids, one i64 per execution, non-blocking.
    pids: std::fs::File,
    /// The helper's ends: request, report and pid.
    theirs: [std::fs::File; 3],
}

impl Pipes {
    fn new() -> std::io::Result<Pipes> {
        let (req_r, requests) = pipe(false)?;
        let (report, report_w) = pipe(true)?;
        let (pids, pid_w) = pipe(true)?;
        Ok(Pipes {
            requests,
            report,
            pids,
            theirs: [req_r, report_w, pid_w],
        })
    }

    /// The helper's descriptors, open across its exec. Clearing
    /// close-on-exec here, not in a pre_exec hook, keeps std on
    /// posix_spawn; a process spawned elsewhere in this instant may inherit
    /// them too, which is harmless: kurabe never waits for end-of-file on
    /// the report pipe, and it kills the helper rather than wait for it to
    /// see one.
    fn inheritable(&self) -> [RawFd; 3] {
        let fds = self.theirs.each_ref().map(AsRawFd::as_raw_fd);
        for fd in fds {
            set_flag(fd, libc::F_GETFD, libc::F_SETFD, libc::FD_CLOEXEC, false);
        }
        fds
    }
}

/// A running helper serving one run's executions of one command line.
pub(crate) struct Session<'a> {
    launch: Launch<'a>,
    helper: Child,
    pidfd: Option<OwnedFd>,
    requests: std::fs::File,
    report: std::fs::File,
    pids: std::fs::File,
    stderr: Option<ChildStderr>,
    stdout: Option<ChildStdout>,
}

impl<'a> Session<'a> {
    /// Start the helper for `l`'s command line.
    pub(crate) fn start(l: Launch<'a>) -> Result<Session<'a>, RunFailure> {
        let start_err = |e: std::io::Error| {
            let shown = l.argv.join(" ");
            RunFailure::new(format!(
                "cannot start `{shown}` through {}: {e}",
                l.helper.display()
            ))
        };
        let pipes = Pipes::new().map_err(start_err)?;
        let spawned = helper_command(&l, pipes.inheritable())?.spawn();
        drop(pipes.theirs);
        let mut helper = spawned.map_err(start_err)?;
        let (stderr, stdout) = (helper.stderr.take(), helper.stdout.take());
        let fds = [
            stderr.as_ref().map(AsRawFd::as_raw_fd),
            stdout.as_ref().map(AsRawFd::as_raw_fd),
        ];
        fds.into_iter().flatten().for_each(nonblocking);
        Ok(Session {
            launch: l,
            pidfd: pidfd_of(helper.id() as libc::pid_t),
            helper,
            requests: pipes.requests,
            report: pipes.report,
            pids: pipes.pids,
            stderr,
            stdout,
        })
    }

    /// Run the command once and return its own times, peak RSS and Σ PSS;
    /// a timeout or Ctrl-C kills its process group.
    pub(crate) fn exec(
        &mut self,
        timeout: Option<Duration>,
        stop: &AtomicBool,
    ) -> Result<Execution, RunFailure> {
        let pad = if self.launch.workload.randomize_env {
            env_padding()
        } else {
            0
        };
        let mut x = InFlight::new(self.launch.sample_memory);
        if self.requests.write_all(&pad.to_le_bytes()).is_ok() {
            self.supervise(&mut x, timeout, stop);
        }
        // The helper sent the pid before the record: take it off the pipe.
        let pid = x.pid(&mut self.pids);
        if x.killed.is_some() || x.report.len() < REPORT_LEN {
            // Killed, or the helper is gone: whatever the command left
            // running in its group dies with it (the helper does this
            // itself after a normal end).
            if let Some(pid) = pid {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        self.read_outputs(&mut x.err);
        judge(&self.launch, x)
    }

    /// Until the helper's record is complete (or the helper is gone): read
    /// output, sample memory, kill the command on timeout or Ctrl-C.
    fn supervise(&mut self, x: &mut InFlight, timeout: Option<Duration>, stop: &AtomicBool) {
        let deadline = timeout.map(|t| x.started + t);
        loop {
            let now = Instant::now();
            if x.killed.is_none() {
                x.killed = why_kill(stop, deadline, now);
            }
            if x.killed.is_some() {
                let pid = x.pid(&mut self.pids);
                self.kill_command(pid);
            }
            let ready = self.wait_events(x.wake(now, deadline).saturating_duration_since(now));
            if ready.report {
                read_report(&mut self.report, &mut x.report);
            }
            if x.report.len() >= REPORT_LEN || (ready.helper && self.helper_gone()) {
                read_report(&mut self.report, &mut x.report);
                return;
            }
            if ready.output {
                self.read_outputs(&mut x.err);
            }
            x.sample_memory(&mut self.pids);
        }
    }

    /// Kill the command's group; before its pid is known, the helper.
    fn kill_command(&self, pid: Option<libc::pid_t>) {
        let target = pid.map_or(self.helper.id() as libc::pid_t, |p| -p);
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(target, libc::SIGKILL) };
    }

    /// True once the helper has exited (it only does when killed or broken).
    fn helper_gone(&self) -> bool {
        // SAFETY: waitid with WNOWAIT only looks; info is a valid out-pointer.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            let rc = libc::waitid(libc::P_PID, self.helper.id(), &mut info, flags);
            rc < 0 || info.si_pid() != 0
        }
    }

    /// Block until the record, output or the helper's exit arrives, or
    /// `wait` passes; what became ready. Without a pidfd, poll cannot see
    /// the helper die: then it wakes every 10 ms and says to look.
    fn wait_events(&self, wait: Duration) -> Ready {
        let watch = |fd: Option<RawFd>| libc::pollfd {
            fd: fd.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [
            watch(Some(self.report.as_raw_fd())),
            watch(self.pidfd.as_ref().map(AsRawFd::as_raw_fd)),
            watch(self.stderr.as_ref().map(AsRawFd::as_raw_fd)),
            watch(self.stdout.as_ref().map(AsRawFd::as_raw_fd)),
        ];
        let cap = match self.pidfd {
            Some(_) => wait,
            None => wait.min(Duration::from_millis(10)),
        };
        let ms = cap.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a live array of fds.len() pollfd structs; poll
        // ignores entries with a negative fd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        let got = |i: usize| n != 0 && fds[i].revents != 0;
        Ready {
            report: got(0),
            helper: got(1) || self.pidfd.is_none(),
            output: got(2) || got(3),
        }
    }

    /// Read what the output pipes hold now; drop a pipe at end-of-file.
    fn read_outputs(&mut self, err: &mut Vec<u8>) {
        if let Some(s) = &mut self.stderr {
            if drain(s, Some(err)) {
                self.stderr = None;
            }
            if err.len() > 2 * STDERR_KEEP {
                err.drain(..err.len() - STDERR_KEEP);
            }
        }
        if let Some(s) = &mut self.stdout {
            if drain(s, None) {
                self.stdout = None;
            }
        }
    }
}

/// What one `poll` found ready.
struct Ready {
    report: bool,
    /// The helper may have exited.
    helper: bool,
    output: bool,
}

impl Drop for Session<'_> {
    /// The helper is between executions: kill and reap it.
    fn drop(&mut self) {
        let _ = self.helper.kill();
        let _ = self.helper.wait();
    }
}

/// One execution in flight: what the supervisor gathers.
struct InFlight {
    started: Instant,
    /// Why kurabe killed it (timeout, Ctrl-C), once it did.
    killed: Option<&'static str>,
    /// The last MiB or so of its stderr (when piped).
    err: Vec<u8>,
    /// The helper's record as read so far.
    report: Vec<u8>,
    /// The command's pid message as read so far.
    pid: Vec<u8>,
    memory: Option<MemoryWatch>,
}

impl InFlight {
    fn new(sample_memory: bool) -> InFlight {
        let started = Instant::now();
        InFlight {
            started,
            killed: None,
            err: Vec::new(),
            report: Vec::with_capacity(REPORT_LEN),
            pid: Vec::with_capacity(8),
            memory: sample_memory.then(|| MemoryWatch::new(started)),
        }
    }

    /// The command's pid, once the helper has sent it (read from `pids`
    /// on first need, so kurabe is not woken for it).
    fn pid(&mut self, pids: &mut std::fs::File) -> Option<libc::pid_t> {
        if self.pid.len() < 8 {
            read_upto(pids, &mut self.pid, 8);
        }
        word(&self.pid, 0)
            .and_then(|p| libc::pid_t::try_from(p).ok())
            .filter(|p| *p > 0)
    }

    /// When to wake next: the Ctrl-C check, the deadline, the next sample.
    fn wake(&self, now: Instant, deadline: Option<Instant>) -> Instant {
        let mut wake = now + STOP_CHECK;
        if let Some(d) = deadline.filter(|_| self.killed.is_none()) {
            wake = wake.min(d);
        }
        if let Some(m) = &self.memory {
            wake = wake.min(m.next);
        }
        wake
    }

    /// Sample Σ PSS when it is due.
    fn sample_memory(&mut self, pids: &mut std::fs::File) {
        if self.memory.as_ref().is_none_or(|m| Instant::now() < m.next) {
            return;
        }
        let pid = self.pid(pids).and_then(|p| u32::try_from(p).ok());
        if let Some(m) = &mut self.memory {
            m.sample(pid);
        }
    }
}

/// The failure, or the execution, that the helper's record says.
fn judge(l: &Launch<'_>, e: InFlight) -> Result<Execution, RunFailure> {
    let rec = accepted(l, &e).map_err(|message| RunFailure {
        message,
        stderr_tail: tail(&e.err),
    })?;
    Ok(Execution {
        timed: rec.timed,
        exit_code: exit_code(rec.wait_status),
        pss_peak_bytes: e.memory.and_then(|m| m.peak),
    })
}

/// The record of an execution that counts; else why it does not.
fn accepted(l: &Launch<'_>, e: &InFlight) -> Result<HelperRecord, String> {
    let shown = || l.argv.join(" ");
    if let Some(why) = e.killed {
        return Err(format!("the command `{}` {why}", shown()));
    }
    let Some(rec) = decode_record(&e.report) else {
        let helper = l.helper.display();
        return Err(format!(
            "the launcher {helper} ended without a report for `{}`",
            shown()
        ));
    };
    if rec.exec_errno != 0 {
        let err = std::io::Error::from_raw_os_error(rec.exec_errno);
        return Err(format!("cannot start `{}`: {err}", shown()));
    }
    let code = exit_code(rec.wait_status);
    match failed(code, rec.wait_status, l.workload.ignore_failure) {
        Some(how) => Err(format!("the command `{}` failed ({how})", shown())),
        None => Ok(rec),
    }
}

/// The exit code in a wait status; `None` when a signal ended the process.
fn exit_code(status: i32) -> Option<i32> {
    libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
}

/// How the command failed, unless it succeeded or failures are ignored.
fn failed(exit_code: Option<i32>, status: i32, ignore: bool) -> Option<String> {
    match exit_code {
        Some(0) => None,
        _ if ignore => None,
        Some(c) => Some(format!("exit code {c}")),
        None => Some(format!("signal {}", libc::WTERMSIG(status))),
    }
}

/// The last [`TAIL_LINES`] lines of `err`.
fn tail(err: &[u8]) -> String {
    let text = String::from_utf8_lossy(err);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// How often kurabe checks for Ctrl-C while a command runs.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// stderr kept for the failure message: the last part, about this much.
const STDERR_KEEP: usize = 1 << 20;

/// Why to kill a running command now, if at all.
fn why_kill(stop: &AtomicBool, deadline: Option<Instant>, now: Instant) -> Option<&'static str> {
    if stop.load(Ordering::Relaxed) {
        Some("interrupted")
    } else if deadline.is_some_and(|d| now >= d) {
        Some("timed out")
    } else {
        None
    }
}

/// Read a non-blocking pipe until it is empty; true at end-of-file.
fn drain(r: &mut dyn Read, mut keep: Option<&mut Vec<u8>>) -> bool {
    let mut buf = [0u8; 16384];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => {
                if let Some(k) = keep.as_deref_mut() {
                    k.extend_from_slice(&buf[..n]);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return e.kind() != ErrorKind::WouldBlock,
        }
    }
}

/// Append what the report pipe holds to `got` (at most a full record).
fn read_report(r: &mut std::fs::File, got: &mut Vec<u8>) {
    read_upto(r, got, REPORT_LEN);
}

/// Append what the non-blocking `r` holds to `got`, up to `len` bytes in all.
fn read_upto(r: &mut std::fs::File, got: &mut Vec<u8>, len: usize) {
    let mut buf = [0u8; REPORT_LEN];
    while got.len() < len {
        match r.read(&mut buf[..len - got.len()]) {
            Ok(0) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// First Σ PSS sample this long after the start; shorter commands get none.
const FIRST_SAMPLE: Duration = Duration::from_millis(100);

/// Shortest gap between two samples.
const MIN_SAMPLE_GAP: Duration = Duration::from_millis(50);

/// Longest gap between two samples.
const MAX_SAMPLE_GAP: Duration = Duration::from_millis(250);

/// Σ PSS of the command's tree, sampled at a fifth of its age.
struct MemoryWatch {
    started: Instant,
    next: Instant,
    sampler: Option<TreeSampler>,
    peak: Option<u64>,
}

impl MemoryWatch {
    fn new(started: Instant) -> MemoryWatch {
        MemoryWatch {
            started,
            next: started + FIRST_SAMPLE,
            sampler: None,
            peak: None,
        }
    }

    /// One sample of the tree rooted at `pid` (the command), then schedule the next.
    fn sample(&mut self, pid: Option<u32>) {
        let now = Instant::now();
        self.next = now + ((now - self.started) / 5).clamp(MIN_SAMPLE_GAP, MAX_SAMPLE_GAP);
        if self.sampler.is_none() {
            let config = SamplerConfig {
                interval: MIN_SAMPLE_GAP,
                // Peaks need fresh values: up to 5 % of a core for smaps_rollup.
                pss_budget: 0.05,
                count_from_root_start: false,
            };
            self.sampler = pid.and_then(|p| TreeSampler::with_config(p, config, None).ok());
        }
        let Some(s) = self.sampler.as_mut().and_then(|t| t.sample().ok()) else {
            return;
        };
        if s.root_alive && s.pss_bytes > 0 {
            self.peak = Some(self.peak.unwrap_or(0).max(s.pss_bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_reports_decode_and_bad_lengths_are_refused() {
        let mut b = Vec::new();
        for v in [0i64, 0, 1_500_000, 250_000, 1_234, 2_000_000_000, 42] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(word(&b, 6), Some(42));
        let r = decode_record(&b).unwrap();
        assert_eq!((r.exec_errno, r.wait_status), (0, 0));
        assert_eq!(
            r.timed,
            Timed {
                wall_s: 2.0,
                user_s: 1.5,
                sys_s: 0.25,
                max_rss_bytes: 1_234 * 1024,
            }
        );
        assert!(decode_record(&b[..55]).is_none());
        assert!(decode_record(&b[..8]).is_none());
        assert!(decode_record(&[]).is_none());
    }
}
