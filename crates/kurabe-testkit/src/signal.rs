//! A process under test stopped by a real signal: spawned with its output
//! read on threads of their own (a full pipe must not hold an exit back),
//! waited on until a phase is observably under way (a line on standard
//! error, or an event the test can see), then signalled, and its exit
//! timed against [`BOUND`].
//!
//! Owns the spawn → wait → signal → timed exit sequence the signal tests
//! share. Must not sleep as a synchronisation: every wait is for an event
//! (a line, a condition the caller checks), polled with a deadline.

use std::io::{BufRead, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a stopped process may take to exit on a loaded 2-CPU
/// machine (the promise is about a second; a missed signal is a wait of
/// minutes or for ever, which this bound tells apart).
pub const BOUND: Duration = Duration::from_secs(10);

/// How long a phase may take to be observably under way.
pub const START: Duration = Duration::from_secs(60);

/// A running process whose standard output is collected and whose
/// standard error is read line by line as it comes.
pub struct Running {
    child: Child,
    lines: Receiver<String>,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

/// How a signalled process ended.
#[derive(Debug)]
pub struct Ended {
    /// Its exit code (`None`: killed by a signal of its own).
    pub code: Option<i32>,
    /// All it wrote on standard output.
    pub stdout: Vec<u8>,
    /// All it wrote on standard error.
    pub stderr: String,
    /// From the signal to the exit.
    pub took: Duration,
}

impl Ended {
    /// Standard output as text.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard output as JSON (panics with the output when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout_text()))
    }

    /// Assert the exit code `code` (with standard error in the message)
    /// and an exit within [`BOUND`] of the signal.
    pub fn assert_ended(&self, code: i32) {
        assert_eq!(self.code, Some(code), "{}", self.stderr);
        assert!(self.took < BOUND, "{:?}: {}", self.took, self.stderr);
    }
}

impl Running {
    /// Start `cmd` with standard output and standard error piped (its
    /// standard input as `cmd` sets it).
    pub fn spawn(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().map(drain);
        let err = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let err = std::thread::spawn(move || {
            let mut all = Vec::new();
            for line in std::io::BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                all.extend_from_slice(line.as_bytes());
                all.push(b'\n');
                let _ = tx.send(line);
            }
            all
        });
        Running {
            child,
            lines,
            out,
            err: Some(err),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its standard input, when `cmd` piped it (taken once).
    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// Wait for a line of standard error containing `want` (fail after
    /// [`START`], or when the process ends first).
    pub fn line(&mut self, want: &str) -> String {
        let deadline = Instant::now() + START;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(want) => return line,
                Ok(_) => {}
                Err(e) => self.fail(&format!("no line with {want:?} on stderr ({e})")),
            }
        }
    }

    /// Wait until `done()` (fail after [`START`], or when the process
    /// ends first), saying `what` never came.
    pub fn until(&mut self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + START;
        while !done() {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.fail(&format!("exited ({status}) before {what}"));
            }
            if Instant::now() > deadline {
                self.fail(&format!("{what} never came"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill it and panic with `why` and what it wrote on standard error.
    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let err = self.err.take().map_or(Vec::new(), |h| h.join().unwrap());
        panic!("{why}: {}", String::from_utf8_lossy(&err));
    }

    /// Send `sig` and wait for the exit (killed and a failure past
    /// [`BOUND`]).
    pub fn signal(self, sig: i32) -> Ended {
        self.signal_with(|pid| {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid, sig) };
        })
    }

    /// SIGINT, then at once SIGTERM (another signal, never taken for the
    /// first one's echo): a second signal; then the exit, as [`Running::signal`].
    pub fn two_signals(self) -> Ended {
        self.signal_with(|pid| {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGINT);
                libc::kill(pid, libc::SIGTERM);
            }
        })
    }

    /// [`Running::signal`], the signal sent by `send(pid)`.
    pub fn signal_with(mut self, send: impl FnOnce(libc::pid_t)) -> Ended {
        let sent = Instant::now();
        send(self.child.id() as libc::pid_t);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if sent.elapsed() > BOUND {
                self.fail(&format!("no exit within {BOUND:?} of the signal"));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = sent.elapsed();
        let join = |h: Option<JoinHandle<Vec<u8>>>| h.map_or(Vec::new(), |h| h.join().unwrap());
        Ended {
            code: status.code(),
            stdout: join(self.out.take()),
            stderr: String::from_utf8_lossy(&join(self.err.take())).into_owned(),
            took,
        }
    }
}

impl Drop for Running {
    /// A test that fails midway leaves no process behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read `pipe` to its end on a thread of its own.
pub fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = pipe.read_to_end(&mut all);
        all
    })
}

/// True once a thread of process `pid` is called `name`.
pub fn has_thread(pid: u32, name: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name))
}

/// True while process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// The children of `pid` (from every thread's list).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// A named pipe at `path`.
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path in a temporary directory of the test's.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// True while a thread of process `pid` is blocked opening a named pipe
/// no one has opened the other end of (the kernel's `wchan`, the function
/// it waits in: `wait_for_partner`, under `fifo_open`).
pub fn opening_a_fifo(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("wchan"))
            .is_ok_and(|w| w.contains("wait_for_partner") || w.contains("fifo"))
    })
}
