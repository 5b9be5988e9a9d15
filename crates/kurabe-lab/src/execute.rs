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
//! command line, and a block of executions is one request to it
//! ([`Session::run`]): the helper spawns them back to back and kurabe
//! sleeps on the helper's done pipe, waking every 20 ms ([`STOP_CHECK`])
//! to read the pids and records, check for Ctrl-C and timeouts and sample
//! memory. So an execution costs the helper's spawn (its own `clone`, no
//! signal resets, the program found on PATH once) and the command's exec,
//! and no wakeup of kurabe. Helpers are kept between blocks of the same
//! command line ([`retire_idle`] ends them): a fresh helper's first
//! execution is 50–100 µs slower. The helper is started by posix_spawn (no
//! `pre_exec` hook) unless the run has a cgroup to enter, and one `poll`
//! loop on the done pipe, the helper's pidfd and the output pipes
//! replaces the threads (stderr reader, output drain, watchdog) that each
//! execution used to start while the command ran.
//!
//! Σ PSS: a command still running 100 ms after it started (by the
//! helper's clock, sent with its pid) is sampled
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
use kurabe_model::tree_counters::{Counter, Counts};
use kurabe_probe::{SamplerConfig, TreeSampler};

use crate::target::{RunFailure, TAIL_LINES};

/// One timed execution of a command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Timed {
    pub(crate) wall_s: f64,
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    pub(crate) max_rss_bytes: u64,
    /// The kernel's counters of the execution's tree, as the helper sent them.
    pub(crate) counters: Counts,
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
    /// Instructions executed, when counted under Cachegrind (`measure.rs`
    /// reads them after the execution).
    pub(crate) instructions: Option<u64>,
    /// The command's pid (the helper's child): a profile's samples of
    /// this execution are those of its tree.
    pub(crate) pid: u32,
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

/// The helper's record: 21 little-endian i64 (see kurabe-helpers'
/// `programs/rusage.rs`); the pid comes first on a pipe of its own.
const REPORT_LEN: usize = 168;

/// The counter of each of the record's fields from the 8th on, in order
/// (-1 in a field: not counted).
const RECORD_COUNTERS: [Counter; 14] = [
    Counter::MinorFaults,
    Counter::MajorFaults,
    Counter::VoluntarySwitches,
    Counter::InvoluntarySwitches,
    Counter::ReadSyscalls,
    Counter::WriteSyscalls,
    Counter::ReadBytes,
    Counter::WriteBytes,
    Counter::CpuMigrations,
    Counter::Instructions,
    Counter::Cycles,
    Counter::CacheReferences,
    Counter::CacheMisses,
    Counter::BranchMisses,
];

/// A decoded helper report.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HelperRecord {
    exec_errno: i32,
    wait_status: i32,
    timed: Timed,
    pid: u32,
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
            counters: record_counters(b),
        },
        pid: u32::try_from(f(6)).unwrap_or(0),
    })
}

/// The counters of a complete record; a field of -1 was not counted.
fn record_counters(b: &[u8]) -> Counts {
    let mut c = Counts::default();
    for (i, counter) in RECORD_COUNTERS.into_iter().enumerate() {
        if let Some(v) = word(b, 7 + i).filter(|v| *v >= 0) {
            c.set(counter, v as f64);
        }
    }
    c
}

/// The `i`th little-endian i64 of `b`, when it is all there.
fn word(b: &[u8], i: usize) -> Option<i64> {
    let bytes = b.get(i * 8..i * 8 + 8)?;
    Some(i64::from_le_bytes(bytes.try_into().ok()?))
}

/// Seed of a request's `KURABE_ENV_PAD` lengths (the helper draws 0–4095
/// bytes per execution from it): new every call.
fn env_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded randomly per process and varies per instance:
    // enough to spread the stack's offset, no dependency needed.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
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

/// The helper's command line for `l`, its four pipe ends passed on.
fn helper_command(l: &Launch<'_>, fds: [RawFd; 4]) -> Result<Command, RunFailure> {
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

/// Room asked for in the pid and report pipes: the helper writes a pid
/// message inside the timed interval, so it must never find the pipe full
/// while kurabe sleeps (the default 64 KiB holds ~4000 pid messages).
const PIPE_ROOM: libc::c_int = 1 << 20;

/// The pipes between kurabe and a helper: kurabe's ends, and the helper's.
struct Pipes {
    /// Requests: count, flags, seed.
    requests: std::fs::File,
    /// The helper's records, non-blocking.
    report: std::fs::File,
    /// The commands' pids and start times, non-blocking.
    pids: std::fs::File,
    /// One u32 per request, after its last record, non-blocking.
    done: std::fs::File,
    /// The helper's ends: request, report, pid and done.
    theirs: [std::fs::File; 4],
}

impl Pipes {
    fn new() -> std::io::Result<Pipes> {
        let (req_r, requests) = pipe(false)?;
        let (report, report_w) = pipe(true)?;
        let (pids, pid_w) = pipe(true)?;
        let (done, done_w) = pipe(true)?;
        for fd in [report.as_raw_fd(), pids.as_raw_fd()] {
            // SAFETY: fcntl on our own descriptor; best effort (the limit
            // for unprivileged users may refuse it).
            unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_ROOM) };
        }
        Ok(Pipes {
            requests,
            report,
            pids,
            done,
            theirs: [req_r, report_w, pid_w, done_w],
        })
    }

    /// The helper's descriptors, open across its exec. Clearing
    /// close-on-exec here, not in a pre_exec hook, keeps std on
    /// posix_spawn; a process spawned elsewhere in this instant may inherit
    /// them too, which is harmless: kurabe never waits for end-of-file on
    /// the report pipe, and it kills the helper rather than wait for it to
    /// see one.
    fn inheritable(&self) -> [RawFd; 4] {
        let fds = self.theirs.each_ref().map(AsRawFd::as_raw_fd);
        for fd in fds {
            set_flag(fd, libc::F_GETFD, libc::F_SETFD, libc::FD_CLOEXEC, false);
        }
        fds
    }
}

/// A running helper and kurabe's ends of its pipes.
struct Conn {
    helper: Child,
    pidfd: Option<OwnedFd>,
    requests: std::fs::File,
    report: std::fs::File,
    pids: std::fs::File,
    done: std::fs::File,
    stderr: Option<ChildStderr>,
    stdout: Option<ChildStdout>,
}

impl Conn {
    /// Kill and reap the helper.
    fn end(mut self) {
        let _ = self.helper.kill();
        kurabe_probe::launch::forget(self.helper.id());
        let _ = self.helper.wait();
    }
}

/// Helpers between blocks, by what they run ([`pool_key`]): the next
/// block of the same command line takes one instead of starting its own.
/// A fresh helper's first execution costs 50-100 µs more than later ones,
/// and with one execution per block (30 runs or fewer) every timed
/// execution would be a first.
static IDLE: std::sync::Mutex<Vec<(String, Conn)>> = std::sync::Mutex::new(Vec::new());

/// Most helpers kept idle; the oldest goes first.
const MAX_IDLE: usize = 16;

/// What makes two launches interchangeable: everything the helper was
/// started with. `None` (never pooled) for a launch in a cgroup, which
/// belongs to one run.
fn pool_key(l: &Launch<'_>) -> Option<String> {
    let w = l.workload;
    // Under Cachegrind each run counts into a directory of its own, so its
    // command line is never seen again; and its start-up dwarfs a helper's.
    let pooled = l.cgroup.is_none() && w.measure.is_time();
    pooled.then(|| {
        format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}",
            l.helper, l.argv, l.env, l.cwd, w.stdin, w.output, w.pass_secrets
        )
    })
}

/// End every idle helper (they also end on their own when kurabe exits:
/// end-of-file on their request pipe).
pub(crate) fn retire_idle() {
    let idle = std::mem::take(&mut *IDLE.lock().unwrap_or_else(|e| e.into_inner()));
    idle.into_iter().for_each(|(_, c)| c.end());
}

/// An idle helper started for `key`, if there is one still running.
fn take_idle(key: &str) -> Option<Conn> {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    let i = idle.iter().position(|(k, _)| k == key)?;
    let (_, conn) = idle.remove(i);
    drop(idle);
    if helper_gone(&conn) {
        conn.end();
        return None;
    }
    Some(conn)
}

/// Keep `conn` for the next block of the same command line.
fn park_idle(key: String, conn: Conn) {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    idle.push((key, conn));
    let extra = idle.len().saturating_sub(MAX_IDLE);
    let old: Vec<_> = idle.drain(..extra).collect();
    drop(idle);
    old.into_iter().for_each(|(_, c)| c.end());
}

/// A running helper serving executions of one command line.
pub(crate) struct Session<'a> {
    launch: Launch<'a>,
    conn: Option<Conn>,
    /// The last request ran to its end and the helper waits for the next.
    clean: bool,
}

impl<'a> Session<'a> {
    /// The helper's pid: its children are the executions.
    pub(crate) fn helper_pid(&self) -> Option<u32> {
        self.conn.as_ref().map(|c| c.helper.id())
    }

    /// A helper for `l`'s command line: an idle one that ran it before,
    /// else a new one.
    pub(crate) fn start(l: Launch<'a>) -> Result<Session<'a>, RunFailure> {
        let reused = pool_key(&l).and_then(|k| take_idle(&k));
        let conn = match reused {
            Some(c) => c,
            None => Self::spawn(&l)?,
        };
        Ok(Session {
            launch: l,
            conn: Some(conn),
            clean: true,
        })
    }

    /// Start a new helper for `l`.
    fn spawn(l: &Launch<'_>) -> Result<Conn, RunFailure> {
        let start_err = |e: std::io::Error| {
            let shown = l.argv.join(" ");
            RunFailure::new(format!(
                "cannot start `{shown}` through {}: {e}",
                l.helper.display()
            ))
        };
        let pipes = Pipes::new().map_err(start_err)?;
        let spawned = helper_command(l, pipes.inheritable())?.spawn();
        drop(pipes.theirs);
        let mut helper = spawned.map_err(start_err)?;
        // A forced exit (a second signal) kills it and what it runs too.
        kurabe_probe::launch::track(helper.id());
        let (stderr, stdout) = (helper.stderr.take(), helper.stdout.take());
        let fds = [
            stderr.as_ref().map(AsRawFd::as_raw_fd),
            stdout.as_ref().map(AsRawFd::as_raw_fd),
        ];
        fds.into_iter().flatten().for_each(nonblocking);
        Ok(Conn {
            pidfd: pidfd_of(helper.id() as libc::pid_t),
            helper,
            requests: pipes.requests,
            report: pipes.report,
            pids: pipes.pids,
            done: pipes.done,
            stderr,
            stdout,
        })
    }

    /// Run the command `n` times back to back and return each
    /// execution's own times, peak RSS and Σ PSS; the first failure (unless
    /// the workload ignores failures) ends the series and is the error. A
    /// timeout (per execution) or Ctrl-C kills the running command's group.
    pub(crate) fn run(
        &mut self,
        n: u32,
        timeout: Option<Duration>,
        stop: &AtomicBool,
    ) -> Result<Vec<Execution>, RunFailure> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(RunFailure::new("the launcher is gone"));
        };
        let w = self.launch.workload;
        let mut b = Batch::new(n, self.launch.sample_memory);
        self.clean = false;
        if conn.requests.write_all(&request(n, w)).is_ok() {
            supervise(conn, &mut b, timeout, stop);
        }
        if b.killed.is_some() || b.done.is_none() {
            // Killed, or the helper is gone: whatever the command left
            // running in its group dies with it (the helper does this
            // itself after a normal end).
            if let Some((_, pid, _)) = b.last_pid() {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        read_outputs(conn, &mut b.err);
        let done = b.done == Some(n) && b.killed.is_none();
        let judged = judge(&self.launch, b);
        self.clean = done && judged.is_ok();
        judged
    }
}

/// The request for `n` executions under `w`'s settings, a new padding seed.
fn request(n: u32, w: &CommandWorkload) -> [u8; 16] {
    let mut flags = 0u32;
    if w.randomize_env {
        flags |= 1;
    }
    if !w.ignore_failure {
        flags |= 2;
    }
    if w.stdin.is_some() {
        flags |= 4;
    }
    let mut r = [0u8; 16];
    r[..4].copy_from_slice(&n.to_le_bytes());
    r[4..8].copy_from_slice(&flags.to_le_bytes());
    r[8..].copy_from_slice(&env_seed().to_le_bytes());
    r
}

/// Until the helper says the request is done (or is gone): read its pids
/// and records as they come, read output, sample memory, kill the command
/// on timeout or Ctrl-C. kurabe sleeps on the done pipe, so it wakes
/// about once per request and every [`STOP_CHECK`], not per execution.
fn supervise(c: &mut Conn, b: &mut Batch, timeout: Option<Duration>, stop: &AtomicBool) {
    loop {
        b.drain(c);
        if b.done.is_some() {
            return;
        }
        let now = Instant::now();
        if b.killed.is_none() {
            b.killed = why_kill(stop, b.deadline(timeout), now);
        }
        if b.killed.is_some() {
            cancel(c, b);
        }
        let ready = wait_events(c, b.wake(now, timeout).saturating_duration_since(now));
        if ready.done {
            b.done = read_done(&mut c.done);
            b.drain(c);
            return;
        }
        if ready.helper && helper_gone(c) {
            b.drain(c);
            return;
        }
        if ready.output {
            read_outputs(c, &mut b.err);
        }
        b.sample_memory();
    }
}

/// Stop the request: ask the helper to start no more executions, and kill
/// the running one's group (before any pid is known, the helper).
fn cancel(c: &mut Conn, b: &mut Batch) {
    if !b.cancelled {
        b.cancelled = true;
        let _ = c.requests.write_all(&[0u8; 16]);
    }
    let target = match (b.running(), b.last_pid()) {
        (Some((_, pid, _)), _) => -pid,
        (None, None) => c.helper.id() as libc::pid_t,
        (None, Some(_)) => return,
    };
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(target, libc::SIGKILL) };
}

/// The done message: how many executions the request ran.
fn read_done(r: &mut std::fs::File) -> Option<u32> {
    let mut got = Vec::with_capacity(4);
    read_upto(r, &mut got, 4);
    let b: [u8; 4] = got.as_slice().try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// True once the helper has exited (it only does when killed or broken).
fn helper_gone(c: &Conn) -> bool {
    // SAFETY: waitid with WNOWAIT only looks; info is a valid out-pointer.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let rc = libc::waitid(libc::P_PID, c.helper.id(), &mut info, flags);
        rc < 0 || info.si_pid() != 0
    }
}

/// Block until the done message, output or the helper's exit arrives, or
/// `wait` passes; what became ready. Without a pidfd, poll cannot see the
/// helper die: then it wakes every 10 ms and says to look.
fn wait_events(c: &Conn, wait: Duration) -> Ready {
    let watch = |fd: Option<RawFd>| libc::pollfd {
        fd: fd.unwrap_or(-1),
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = [
        watch(Some(c.done.as_raw_fd())),
        watch(c.pidfd.as_ref().map(AsRawFd::as_raw_fd)),
        watch(c.stderr.as_ref().map(AsRawFd::as_raw_fd)),
        watch(c.stdout.as_ref().map(AsRawFd::as_raw_fd)),
    ];
    let cap = match c.pidfd {
        Some(_) => wait,
        None => wait.min(Duration::from_millis(10)),
    };
    let ms = cap.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: fds is a live array of fds.len() pollfd structs; poll
    // ignores entries with a negative fd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    let got = |i: usize| n > 0 && fds[i].revents != 0;
    Ready {
        done: got(0),
        helper: got(1) || c.pidfd.is_none(),
        output: got(2) || got(3),
    }
}

/// Read what the output pipes hold now; drop a pipe at end-of-file.
fn read_outputs(c: &mut Conn, err: &mut Vec<u8>) {
    if let Some(s) = &mut c.stderr {
        if drain(s, Some(err)) {
            c.stderr = None;
        }
        if err.len() > 2 * STDERR_KEEP {
            err.drain(..err.len() - STDERR_KEEP);
        }
    }
    if let Some(s) = &mut c.stdout {
        if drain(s, None) {
            c.stdout = None;
        }
    }
}

/// What one `poll` found ready.
struct Ready {
    done: bool,
    /// The helper may have exited.
    helper: bool,
    output: bool,
}

impl Drop for Session<'_> {
    /// Between requests, the helper waits for the next block of the same
    /// command line; after a kill or a failure it is killed and reaped.
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        match pool_key(&self.launch).filter(|_| self.clean) {
            Some(key) => park_idle(key, conn),
            None => conn.end(),
        }
    }
}

/// Length of a pid message: the pid and the spawn's CLOCK_MONOTONIC ns.
const PID_LEN: usize = 16;

/// One request in flight: what the supervisor gathers.
struct Batch {
    /// Executions asked for.
    n: u32,
    /// When the request was sent.
    sent: Instant,
    /// Why kurabe killed it (timeout, Ctrl-C), once it did.
    killed: Option<&'static str>,
    /// The cancel message has been sent.
    cancelled: bool,
    /// The last MiB or so of the commands' stderr (when piped).
    err: Vec<u8>,
    /// The helper's records as read so far.
    reports: Vec<u8>,
    /// The pid messages as read so far.
    pids: Vec<u8>,
    /// The helper's done message: how many executions it ran.
    done: Option<u32>,
    /// Σ PSS sampling, when asked for: of the running execution (its index).
    memory: Option<Option<(usize, MemoryWatch)>>,
    /// Σ PSS peak of each execution sampled, by index.
    peaks: Vec<Option<u64>>,
}

impl Batch {
    fn new(n: u32, sample_memory: bool) -> Batch {
        Batch {
            n,
            sent: Instant::now(),
            killed: None,
            cancelled: false,
            err: Vec::new(),
            reports: Vec::with_capacity(REPORT_LEN * n.min(4096) as usize),
            pids: Vec::with_capacity(PID_LEN * n.min(4096) as usize),
            done: None,
            memory: sample_memory.then_some(None),
            peaks: Vec::new(),
        }
    }

    /// Take in what the pid and report pipes hold.
    fn drain(&mut self, c: &mut Conn) {
        let cap = self.n as usize;
        read_upto(&mut c.pids, &mut self.pids, PID_LEN * cap);
        read_upto(&mut c.report, &mut self.reports, REPORT_LEN * cap);
    }

    /// The latest execution started: its index, pid and start (ns).
    fn last_pid(&self) -> Option<(usize, libc::pid_t, i64)> {
        let i = (self.pids.len() / PID_LEN).checked_sub(1)?;
        let pid = word(&self.pids, 2 * i).and_then(|p| libc::pid_t::try_from(p).ok())?;
        Some((i, pid, word(&self.pids, 2 * i + 1)?)).filter(|_| pid > 0)
    }

    /// The execution running now (started, no record yet), as [`Self::last_pid`].
    fn running(&self) -> Option<(usize, libc::pid_t, i64)> {
        self.last_pid()
            .filter(|(i, _, _)| self.reports.len() / REPORT_LEN <= *i)
    }

    /// When the running execution times out (before the first pid is
    /// known: counted from the request).
    fn deadline(&self, timeout: Option<Duration>) -> Option<Instant> {
        let t = timeout?;
        let start = match self.running() {
            Some((_, _, ns)) => instant_of(ns),
            None if self.pids.is_empty() => self.sent,
            None => Instant::now(),
        };
        Some(start + t)
    }

    /// When to wake next: the Ctrl-C check, the deadline, the next sample.
    fn wake(&self, now: Instant, timeout: Option<Duration>) -> Instant {
        let mut wake = now + STOP_CHECK;
        if let Some(d) = self.deadline(timeout).filter(|_| self.killed.is_none()) {
            wake = wake.min(d);
        }
        if let Some(Some((_, m))) = &self.memory {
            wake = wake.min(m.next);
        }
        wake
    }

    /// Keep the peak of an execution that ended, watch the running one,
    /// and sample its Σ PSS when it is due.
    fn sample_memory(&mut self) {
        let running = self.running();
        let Some(slot) = self.memory.as_mut() else {
            return;
        };
        if let Some((i, m)) = slot.take_if(|(i, _)| running.map(|r| r.0) != Some(*i)) {
            if self.peaks.len() <= i {
                self.peaks.resize(i + 1, None);
            }
            self.peaks[i] = m.peak;
        }
        let Some((i, pid, start)) = running else {
            return;
        };
        let (_, m) = slot.get_or_insert_with(|| (i, MemoryWatch::new(instant_of(start))));
        if Instant::now() >= m.next {
            m.sample(u32::try_from(pid).ok());
        }
    }

    /// Σ PSS peak of execution `i`, when it was sampled.
    fn peak(&self, i: usize) -> Option<u64> {
        match &self.memory {
            Some(Some((j, m))) if *j == i => m.peak,
            _ => self.peaks.get(i).copied().flatten(),
        }
    }
}

/// kurabe's `Instant` of a CLOCK_MONOTONIC time in ns (the helper's
/// clock; `Instant` reads the same clock on Linux).
fn instant_of(ns: i64) -> Instant {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let now = Instant::now();
    let now_ns = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
    let ago = Duration::from_nanos(u64::try_from(now_ns - ns).unwrap_or(0));
    now.checked_sub(ago).unwrap_or(now)
}

/// The executions the helper's records say; else the first failure (a
/// kill by kurabe first).
fn judge(l: &Launch<'_>, b: Batch) -> Result<Vec<Execution>, RunFailure> {
    let fail = |message: String| RunFailure {
        message,
        stderr_tail: tail(&b.err),
    };
    let shown = || l.argv.join(" ");
    if let Some(why) = b.killed {
        return Err(fail(format!("the command `{}` {why}", shown())));
    }
    let mut execs = Vec::with_capacity(b.n as usize);
    for (i, r) in b.reports.chunks_exact(REPORT_LEN).enumerate() {
        let rec = accepted(l, decode_record(r)).map_err(fail)?;
        execs.push(Execution {
            timed: rec.timed,
            exit_code: exit_code(rec.wait_status),
            pss_peak_bytes: b.peak(i),
            instructions: None,
            pid: rec.pid,
        });
    }
    if execs.len() < b.n as usize {
        let helper = l.helper.display();
        return Err(fail(format!(
            "the launcher {helper} ended without a report for `{}`",
            shown()
        )));
    }
    Ok(execs)
}

/// The record of an execution that counts; else why it does not.
fn accepted(l: &Launch<'_>, rec: Option<HelperRecord>) -> Result<HelperRecord, String> {
    let shown = || l.argv.join(" ");
    let Some(rec) = rec else {
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

/// Append what the non-blocking `r` holds to `got`, up to `len` bytes in all.
fn read_upto(r: &mut std::fs::File, got: &mut Vec<u8>, len: usize) {
    let mut buf = [0u8; 8192];
    while got.len() < len {
        let want = (len - got.len()).min(buf.len());
        match r.read(&mut buf[..want]) {
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
                // The helper counts the execution: no more reads of /proc
                // while it is timed.
                counters: false,
            };
            self.sampler = pid.and_then(|p| TreeSampler::with_config(p, config, None).ok());
        }
        let Some(s) = self.sampler.as_mut().and_then(|t| t.sample().ok()) else {
            return;
        };
        if s.root_alive && s.size.pss_bytes > 0 {
            self.peak = Some(self.peak.unwrap_or(0).max(s.size.pss_bytes));
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
        let counted = [80i64, 0, 6, 1, 1010, 1003, 4_102_976, 4_096_099, 1];
        for v in counted.iter().chain(&[-1; 5]) {
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
                counters: r.timed.counters,
            }
        );
        // Counted fields are kept, -1 ones are absent (never 0).
        assert_eq!(r.timed.counters.get(Counter::MinorFaults), Some(80.0));
        assert_eq!(r.timed.counters.get(Counter::WriteSyscalls), Some(1003.0));
        assert_eq!(r.timed.counters.get(Counter::Instructions), None);
        assert!(decode_record(&b[..167]).is_none());
        assert!(decode_record(&b[..8]).is_none());
        assert!(decode_record(&[]).is_none());
    }
}
