//! The program under test for one run: start it fresh, wait until it is
//! ready, watch its output, stop it and everything it started.
//!
//! A command written as a string runs through `/bin/sh -c` (so plans can use
//! pipes, `&&` and `$VARS` exactly as in a terminal; a variant's `args` are
//! appended shell-quoted); a command written as a list runs directly, no
//! shell. Either way the target gets its own process group and, whenever a
//! cgroup can be made, its own cgroup: the cgroup is what counts the CPU of
//! children that double-fork out of the group and what kills them at the end.
//! With `limits` the cgroup is mandatory (a run without its limits would be a
//! different experiment).
//!
//! [`RunningTarget`] is a guard: dropping it kills the process group, every
//! descendant and the cgroup's members, and removes the cgroup — on success,
//! failure, panic or Ctrl-C alike. It must not print.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use kurabe_model::probe::oom_killed_text;
use kurabe_probe::cgroup::{CgroupReader, Limits, RunCgroup};
use kurabe_probe::launch::{self, Started};
use kurabe_stop::Stop;

/// Lines of stderr kept for a failed run's report.
pub const TAIL_LINES: usize = 20;

/// How readiness is detected, placeholders already substituted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadyCheck {
    /// Ready at once (no `ready`, no `{port}`).
    Immediately,
    /// An HTTP GET to this loopback URL gets any HTTP response.
    Url {
        /// Address to connect to.
        addr: SocketAddr,
        /// Host header.
        host: String,
        /// Path and query.
        path: String,
    },
    /// A TCP connect to this port on 127.0.0.1 succeeds.
    Tcp(u16),
    /// This text appears in a line of stdout or stderr.
    Log(String),
}

/// Everything needed to start one target, fully resolved.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// Program and arguments (`/bin/sh -c …` for a shell string).
    pub argv: Vec<String>,
    /// Environment added to kurabe's own.
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Readiness check.
    pub ready: ReadyCheck,
    /// Signal that asks the target to stop.
    pub stop_signal: libc::c_int,
    /// Time between the stop signal and SIGKILL of everything.
    pub stop_grace: Duration,
    /// Longest wait for readiness.
    pub startup_timeout: Duration,
    /// Resource limits (a cgroup is then required).
    pub limits: Option<Limits>,
}

/// Why a run failed; becomes the run's `error_tail` in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFailure {
    /// What happened, one line.
    pub message: String,
    /// Last lines of the target's stderr (may be empty).
    pub stderr_tail: String,
}

impl RunFailure {
    /// A failure without output.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            stderr_tail: String::new(),
        }
    }

    /// The text stored with the run: the message, then the stderr tail.
    pub fn text(&self) -> String {
        if self.stderr_tail.is_empty() {
            self.message.clone()
        } else {
            format!(
                "{}\n--- last lines of stderr ---\n{}",
                self.message, self.stderr_tail
            )
        }
    }
}

/// What the output readers share: the stderr tail and whether the log line was seen.
#[derive(Debug, Default)]
struct OutputState {
    tail: VecDeque<String>,
    log_seen: bool,
    /// Readers that have not reached end of file yet.
    open_readers: usize,
    /// Triggered when the log line is seen (set while waiting for readiness).
    wake: Option<Arc<Stop>>,
}

/// The readers' shared state and the condition variable they signal at end of file.
#[derive(Debug, Default)]
struct Output {
    state: Mutex<OutputState>,
    drained: Condvar,
}

impl Output {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutputState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Block until every reader has reached end of file (the target's
    /// last words are in the tail) or `timeout` passes.
    fn wait_drained(&self, timeout: Duration) {
        let guard = self.lock();
        let _ = self
            .drained
            .wait_timeout_while(guard, timeout, |s| s.open_readers > 0);
    }

    /// One line of output: note the log line, keep the stderr tail.
    fn line(&self, line: &str, keep_tail: bool, needle: Option<&str>) {
        let mut s = self.lock();
        if needle.is_some_and(|n| line.contains(n)) {
            s.log_seen = true;
            if let Some(w) = &s.wake {
                w.trigger(None);
            }
        }
        if keep_tail {
            if s.tail.len() == TAIL_LINES {
                s.tail.pop_front();
            }
            s.tail.push_back(line.to_owned());
        }
    }

    /// A reader reached end of file.
    fn closed(&self) {
        self.lock().open_readers -= 1;
        self.drained.notify_all();
    }
}

/// A started target. Dropping it kills everything it started.
#[derive(Debug)]
pub struct RunningTarget {
    // Field order matters for Drop: the process tree dies first, then the
    // cgroup kills any escapee and is removed.
    started: Started,
    cgroup: Option<RunCgroup>,
    output: Arc<Output>,
    spec: TargetSpec,
    spawned_at: Instant,
}

/// A pipe whose read end is ours and whose write end goes to the child.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints; pipe2 only writes it.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fresh descriptors; we own them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Read `fd` line by line on a thread: look for the log line, keep the stderr tail.
fn spawn_reader(fd: OwnedFd, keep_tail: bool, needle: Option<String>, output: Arc<Output>) {
    output.lock().open_readers += 1;
    // The thread ends at EOF, when the last process holding the write end
    // dies; it is never joined so a leaked descriptor cannot hang kurabe.
    let reading = output.clone();
    let spawned = std::thread::Builder::new()
        .name("kurabe-target-output".into())
        .spawn(move || {
            let mut reader = BufReader::new(std::fs::File::from(fd));
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.by_ref().take(64 * 1024).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                reading.line(line, keep_tail, needle.as_deref());
            }
            reading.closed();
        });
    if spawned.is_err() {
        output.closed();
    }
}

/// Start the target described by `spec`.
pub fn start(spec: &TargetSpec) -> Result<RunningTarget, RunFailure> {
    let Some(program) = spec.argv.first() else {
        return Err(RunFailure::new("the target command is empty"));
    };
    let cgroup = run_cgroup(spec)?;
    let (out_r, out_w) = pipe().map_err(|e| RunFailure::new(format!("cannot make a pipe: {e}")))?;
    let (err_r, err_w) = pipe().map_err(|e| RunFailure::new(format!("cannot make a pipe: {e}")))?;
    let started = spawn(program, spec, cgroup.as_ref(), (out_w, err_w))?;
    let output = Arc::new(Output::default());
    let needle = match &spec.ready {
        ReadyCheck::Log(l) => Some(l.clone()),
        _ => None,
    };
    spawn_reader(out_r, false, needle.clone(), output.clone());
    spawn_reader(err_r, true, needle, output.clone());
    Ok(RunningTarget {
        started,
        cgroup,
        output,
        spec: spec.clone(),
        spawned_at: Instant::now(),
    })
}

/// The run's cgroup: required with limits, a bonus without.
fn run_cgroup(spec: &TargetSpec) -> Result<Option<RunCgroup>, RunFailure> {
    Ok(match &spec.limits {
        Some(limits) if !limits.is_empty() => Some(
            RunCgroup::create(limits)
                .map_err(|e| RunFailure::new(format!("cannot apply the variant's limits: {e}")))?,
        ),
        // Without limits the cgroup is a bonus (counts and kills escapees);
        // where none can be made the process group and ppid scan still work.
        _ => RunCgroup::create(&Limits::default()).ok(),
    })
}

/// Spawn the target's root (`program`, the first of its argv) with its
/// stdout and stderr to the two write ends.
fn spawn(
    program: &str,
    spec: &TargetSpec,
    cgroup: Option<&RunCgroup>,
    (out, err): (OwnedFd, OwnedFd),
) -> Result<Started, RunFailure> {
    // The Command holds our copies of the write ends: it is dropped on
    // return, right after spawning, or the readers would never see EOF.
    let mut cmd = Command::new(program);
    kurabe_store::scrub_secrets(&mut cmd);
    cmd.args(&spec.argv[1..])
        .envs(&spec.env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    // launch::spawn also sets PR_SET_PDEATHSIG: a killed kurabe takes the root along.
    launch::spawn(&mut cmd, cgroup).map_err(|e| {
        RunFailure::new(format!(
            "cannot start the target `{}`: {e}; check the command and `cwd`",
            spec.argv.join(" ")
        ))
    })
}

impl RunningTarget {
    /// PID of the target's root process.
    pub fn pid(&self) -> u32 {
        self.started.pid()
    }

    /// The run cgroup's counters, when the target runs in one.
    pub fn cgroup_reader(&self) -> Option<CgroupReader> {
        self.cgroup.as_ref().map(RunCgroup::reader)
    }

    /// The run cgroup's directories (empty without a cgroup).
    pub fn cgroup_dirs(&self) -> Vec<PathBuf> {
        self.cgroup
            .as_ref()
            .map(|c| c.dirs().to_vec())
            .unwrap_or_default()
    }

    /// The last lines of stderr so far.
    pub fn stderr_tail(&self) -> String {
        let s = self.output.lock();
        s.tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// A failure carrying the stderr tail (after a moment for the readers to catch up).
    pub fn failure(&mut self, message: impl Into<String>) -> RunFailure {
        // A dying process's last words are often still in the pipe: wait
        // (on its pidfd) for it to exit, then for the readers' end of file.
        if self.started.wait_exit(Duration::from_millis(100)) {
            self.output.wait_drained(Duration::from_millis(20));
        }
        RunFailure {
            message: message.into(),
            stderr_tail: self.stderr_tail(),
        }
    }

    /// True once the root process has exited.
    pub fn has_exited(&mut self) -> bool {
        self.started.has_exited()
    }

    /// A failure if the root has exited (the target died), with its status.
    pub fn check_alive(&mut self, when: &str) -> Result<(), RunFailure> {
        if !self.started.has_exited() {
            return Ok(());
        }
        let (status, _) = self.started.reap();
        let how = match (status.code, status.signal) {
            _ if self.oom_killed() => {
                oom_killed_text(self.spec.limits.as_ref().and_then(|l| l.memory_bytes))
            }
            (Some(c), _) => format!("exit code {c}"),
            (_, Some(s)) => format!("signal {s}"),
            _ => "unknown status".to_owned(),
        };
        // Readers may still be draining the pipe.
        self.output.wait_drained(Duration::from_millis(50));
        Err(RunFailure {
            message: format!("the target exited {when} ({how})"),
            stderr_tail: self.stderr_tail(),
        })
    }

    /// True when the target's cgroup counted an OOM kill (its memory limit was hit).
    fn oom_killed(&self) -> bool {
        self.cgroup
            .as_ref()
            .and_then(|c| c.reader().oom_kills())
            .is_some_and(|n| n > 0)
    }

    /// Check readiness until it passes, the target dies, the startup
    /// timeout passes or `stop` is set. Between checks it blocks on one
    /// [`Stop`] that the stop, the log line and the root's exit (its pidfd,
    /// watched on a thread) all trigger.
    pub fn wait_ready(&mut self, stop: &Arc<Stop>) -> Result<Duration, RunFailure> {
        let deadline = self.spawned_at + self.spec.startup_timeout;
        let wake = stop.child();
        self.output.lock().wake = Some(wake.clone());
        let exit_seen = self.watch_exit(deadline, &wake);
        let result = loop {
            if self.is_ready() {
                break Ok(self.spawned_at.elapsed());
            }
            if let Err(e) = self.check_alive("before it was ready") {
                break Err(e);
            }
            if stop.is_set() {
                break Err(RunFailure::new("interrupted while waiting for the target"));
            }
            if Instant::now() >= deadline {
                break Err(self.not_ready());
            }
            wake.wait_until(self.next_check(deadline, exit_seen));
        };
        self.output.lock().wake = None;
        result
    }

    /// Trigger `wake` when the root exits (before `deadline`); false where
    /// exits cannot be waited for (no pidfds), so the caller checks instead.
    fn watch_exit(&self, deadline: Instant, wake: &Arc<Stop>) -> bool {
        let Some(waiter) = self.started.exit_waiter() else {
            return false;
        };
        let wake = wake.clone();
        std::thread::Builder::new()
            .name("kurabe-target-exit".into())
            .spawn(move || {
                if waiter.wait(deadline.saturating_duration_since(Instant::now())) {
                    wake.trigger(None);
                }
            })
            .is_ok()
    }

    /// When to check readiness again. A listener's appearance has no event
    /// to wait for, so TCP and URL checks are retried every 10 ms (a paced
    /// wait the stop, the log line and the exit cut short); a log line or
    /// the exit wakes the wait itself.
    fn next_check(&self, deadline: Instant, exit_seen: bool) -> Instant {
        let paced = Instant::now() + Duration::from_millis(10);
        match &self.spec.ready {
            ReadyCheck::Log(_) | ReadyCheck::Immediately if exit_seen => deadline,
            _ => paced.min(deadline),
        }
    }

    /// The failure for a target that was not ready within the startup timeout.
    fn not_ready(&mut self) -> RunFailure {
        let what = match &self.spec.ready {
            ReadyCheck::Immediately => "ready".to_owned(),
            ReadyCheck::Url { host, path, addr } => {
                format!("an HTTP answer from http://{host}:{}{path}", addr.port())
            }
            ReadyCheck::Tcp(p) => format!("a TCP listener on port {p}"),
            ReadyCheck::Log(l) => format!("the log line `{l}`"),
        };
        self.failure(format!(
            "the target was not ready within the startup timeout of {:?} (waited for {what}); raise `target.startup_timeout` or fix `target.ready`",
            self.spec.startup_timeout
        ))
    }

    fn is_ready(&self) -> bool {
        match &self.spec.ready {
            ReadyCheck::Immediately => true,
            ReadyCheck::Tcp(port) => TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], *port)),
                Duration::from_millis(200),
            )
            .is_ok(),
            ReadyCheck::Url { addr, host, path } => http_answers(*addr, host, path),
            ReadyCheck::Log(_) => self.output.lock().log_seen,
        }
    }

    /// Stop the target: the stop signal to its group, up to the grace
    /// period for it to exit, then SIGKILL to the group, every descendant
    /// and the cgroup; reap it and remove the cgroup.
    pub fn stop(mut self) {
        let pid = self.started.pid();
        if !self.started.has_exited() {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(-(pid as libc::pid_t), self.spec.stop_signal) };
            // Blocks on the root's pidfd: returns the moment it exits.
            self.started.wait_exit(self.spec.stop_grace);
        }
        // The root is gone or out of time: kill what is left of the tree.
        self.started.terminate(Duration::ZERO);
        if let Some(cg) = self.cgroup.as_mut() {
            let _ = cg.cleanup();
        }
    }
}

/// One tiny HTTP/1.0 GET; true when any HTTP response comes back.
fn http_answers(addr: SocketAddr, host: &str, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(1000)));
    let _ = s.set_write_timeout(Some(Duration::from_millis(1000)));
    let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    s.read_exact(&mut head).is_ok() && &head == b"HTTP/"
}

/// Parse a loopback `http://host:port/path` readiness URL.
pub fn parse_ready_url(url: &str) -> Result<ReadyCheck, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("readiness URL `{url}` must start with http://"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("readiness URL `{url}` has a bad port `{p}`"))?,
        ),
        _ => (authority, 80),
    };
    let ip = match host.trim_start_matches('[').trim_end_matches(']') {
        "localhost" => std::net::IpAddr::from([127, 0, 0, 1]),
        h => h
            .parse()
            .map_err(|_| format!("readiness URL `{url}`: host must be a loopback address"))?,
    };
    Ok(ReadyCheck::Url {
        addr: SocketAddr::new(ip, port),
        host: host.to_owned(),
        path: path.to_owned(),
    })
}

/// A free TCP port on 127.0.0.1: bind port 0, read the port, let it go.
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    l.local_addr().map(|a| a.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_urls_parse_to_loopback_addresses() {
        let r = parse_ready_url("http://127.0.0.1:8080/health?x=1").unwrap();
        assert_eq!(
            r,
            ReadyCheck::Url {
                addr: "127.0.0.1:8080".parse().unwrap(),
                host: "127.0.0.1".into(),
                path: "/health?x=1".into()
            }
        );
        let r = parse_ready_url("http://localhost:9").unwrap();
        assert!(matches!(r, ReadyCheck::Url { path, .. } if path == "/"));
        assert!(parse_ready_url("https://127.0.0.1/").is_err());
        assert!(parse_ready_url("http://example.com/").is_err());
    }

    #[test]
    fn free_ports_are_nonzero() {
        assert_ne!(free_port().unwrap(), 0);
    }
}
