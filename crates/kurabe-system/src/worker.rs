//! Running one pass: fork N copies of a test loop, time them by wall clock
//! from the parent, collect what each reports, reap every process.
//!
//! This is what UnixBench's `Run` does with its test programs: start N copies
//! at once, measure each one's elapsed time from the outside, read its count.
//! Here a copy is a forked child of kurabe instead of a freshly exec'd C
//! program (the Execl and Process Creation tests exec the helper program from
//! the child).
//!
//! Rules the code here keeps, because a child of a possibly multi-threaded
//! process may only do async-signal-safe things:
//! * everything a loop needs (paths, argv, buffers) is prepared *before*
//!   `fork`; the child does not allocate, lock or print;
//! * the child reports one fixed-size binary [`Record`] on a pipe, then `_exit`s;
//! * the child stops its loop on `SIGALRM` from `setitimer` (sub-second
//!   durations, unlike `alarm`): the handler only sets an atomic flag, which
//!   the hot loop reads with a relaxed load — one L1 hit per iteration;
//! * each child leads its own process group and dies with kurabe
//!   (`PR_SET_PDEATHSIG`), so Ctrl-C or an error kills the whole tree
//!   (context-switch partners, shell pipelines) with one `killpg`, and every
//!   pid is reaped before returning.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by the `SIGALRM` handler in a child; the loops poll it.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

/// What a child reports at the end of its pass.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Record {
    /// Loops done, or the rate for rate-reporting tests.
    pub count: f64,
    /// The test's own timing, seconds, or NaN to use the parent's wall time.
    pub time_s: f64,
    /// A test-specific witness that the loop did its work (see each loop).
    pub check: u64,
    /// 0, or an error code from [`crate::loops::error_text`].
    pub err: u64,
}

/// Size of a serialized [`Record`].
pub const RECORD_LEN: usize = 32;

impl Record {
    /// Little-endian wire form; the Execl helper writes the same layout.
    pub fn to_bytes(self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        b[0..8].copy_from_slice(&self.count.to_le_bytes());
        b[8..16].copy_from_slice(&self.time_s.to_le_bytes());
        b[16..24].copy_from_slice(&self.check.to_le_bytes());
        b[24..32].copy_from_slice(&self.err.to_le_bytes());
        b
    }

    /// Parse the wire form.
    pub fn from_bytes(b: &[u8; RECORD_LEN]) -> Record {
        let f = |r: std::ops::Range<usize>| <[u8; 8]>::try_from(&b[r]).expect("8 bytes");
        Record {
            count: f64::from_le_bytes(f(0..8)),
            time_s: f64::from_le_bytes(f(8..16)),
            check: u64::from_le_bytes(f(16..24)),
            err: u64::from_le_bytes(f(24..32)),
        }
    }

    /// An error record.
    pub fn error(code: u64) -> Record {
        Record {
            count: 0.0,
            time_s: f64::NAN,
            check: 0,
            err: code,
        }
    }
}

/// One copy's outcome as seen by the parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyOutcome {
    /// The child's report.
    pub record: Record,
    /// Wall time from just before the first fork to the arrival of this copy's record, seconds.
    pub elapsed_s: f64,
    /// Pid of the copy's process.
    pub pid: i32,
}

/// Why a pass could not complete.
#[derive(Debug)]
pub enum PassFailure {
    /// Ctrl-C: children killed and reaped.
    Interrupted,
    /// A child died without reporting, or did not finish in time, or fork failed.
    Failed(String),
}

struct Running {
    pid: i32,
    fd: OwnedFd,
    buf: [u8; RECORD_LEN],
    got: usize,
    arrived: Option<f64>,
    eof: bool,
}

/// Fork `copies` children that each run `body` with their copy number
/// (0-based; in the child, which must not allocate), wait for their records,
/// reap them. `limit` bounds the whole
/// pass; `stop` is the Ctrl-C flag.
pub fn run_copies(
    copies: u32,
    limit: Duration,
    stop: &AtomicBool,
    body: &dyn Fn(u32, RawFd) -> Record,
) -> Result<Vec<CopyOutcome>, PassFailure> {
    let start = Instant::now();
    let mut kids = fork_all(copies, body)?;
    let outcome = collect(&mut kids, start, limit, stop);
    if outcome.is_err() {
        kill_all(&kids);
    }
    // Reap every child, whatever happened: they have reported or been killed.
    let mut statuses = Vec::with_capacity(kids.len());
    for k in &kids {
        // Before the reap, after which the number may be another's.
        kurabe_probe::launch::forget(k.pid as u32);
        statuses.push(reap(k.pid));
    }
    if outcome.is_err() {
        await_groups_gone(&kids, GROUP_EXIT_WAIT);
    }
    outcome?;
    reported(&kids, &statuses)
}

/// Fork the `copies` children; on a failed fork, kill the ones made.
fn fork_all(copies: u32, body: &dyn Fn(u32, RawFd) -> Record) -> Result<Vec<Running>, PassFailure> {
    let mut kids: Vec<Running> = Vec::with_capacity(copies as usize);
    for copy in 0..copies {
        match fork_one(copy, body) {
            Ok((pid, fd)) => {
                // A forced exit (a second signal) kills its tree too.
                kurabe_probe::launch::track(pid as u32);
                kids.push(Running {
                    pid,
                    fd,
                    buf: [0; RECORD_LEN],
                    got: 0,
                    arrived: None,
                    eof: false,
                })
            }
            Err(e) => {
                kill_all(&kids);
                return Err(PassFailure::Failed(format!("fork failed: {e}")));
            }
        }
    }
    Ok(kids)
}

/// Every child's record, or the failure of the first that exited (wait
/// status in `statuses`) without reporting.
fn reported(kids: &[Running], statuses: &[i32]) -> Result<Vec<CopyOutcome>, PassFailure> {
    let mut out = Vec::with_capacity(kids.len());
    for (k, &status) in kids.iter().zip(statuses) {
        match k.arrived {
            Some(t) => out.push(CopyOutcome {
                record: Record::from_bytes(&k.buf),
                elapsed_s: t,
                pid: k.pid,
            }),
            None => {
                return Err(PassFailure::Failed(format!(
                    "a test process exited without reporting ({})",
                    describe_status(status)
                )))
            }
        }
    }
    Ok(out)
}

fn collect(
    kids: &mut [Running],
    start: Instant,
    limit: Duration,
    stop: &AtomicBool,
) -> Result<(), PassFailure> {
    loop {
        if kids.iter().all(|k| k.arrived.is_some() || k.eof) {
            return Ok(());
        }
        if stop.load(Ordering::Relaxed) {
            return Err(PassFailure::Interrupted);
        }
        if start.elapsed() > limit {
            return Err(PassFailure::Failed(format!(
                "a test process did not finish within {:.0} s; killed it",
                limit.as_secs_f64()
            )));
        }
        let mut fds: Vec<libc::pollfd> = kids
            .iter()
            .filter(|k| k.arrived.is_none() && !k.eof)
            .map(|k| libc::pollfd {
                fd: k.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: fds is a valid array of pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(PassFailure::Failed(format!("poll failed: {e}")));
        }
        read_ready(kids, &fds, start.elapsed().as_secs_f64());
    }
}

/// Read what the children whose pipes `poll` marked ready have sent; a
/// full record arrived at `now` (seconds since the pass started).
fn read_ready(kids: &mut [Running], fds: &[libc::pollfd], now: f64) {
    for p in fds.iter().filter(|p| p.revents != 0) {
        let k = kids
            .iter_mut()
            .find(|k| k.fd.as_raw_fd() == p.fd)
            .expect("polled fd");
        // SAFETY: reading into the unfilled tail of k.buf.
        let r = unsafe { libc::read(p.fd, k.buf[k.got..].as_mut_ptr().cast(), RECORD_LEN - k.got) };
        if r > 0 {
            k.got += r as usize;
            if k.got == RECORD_LEN {
                k.arrived = Some(now);
            }
        } else if r == 0 {
            k.eof = true;
        }
    }
}

fn fork_one(copy: u32, body: &dyn Fn(u32, RawFd) -> Record) -> io::Result<(i32, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child only calls async-signal-safe functions (see module docs).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        child_main(rd.as_raw_fd(), wr.as_raw_fd(), copy, body);
    }
    // Also from this side, so a kill right after fork reaches the group.
    // SAFETY: setpgid on our own child; failure (it already did it) is fine.
    unsafe { libc::setpgid(pid, pid) };
    drop(wr);
    Ok((pid, rd))
}

fn child_main(rd: RawFd, wr: RawFd, copy: u32, body: &dyn Fn(u32, RawFd) -> Record) -> ! {
    // SAFETY: plain syscalls on our own process and descriptors.
    unsafe {
        libc::close(rd);
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Default dispositions: kurabe's Ctrl-C hooks are not the child's business.
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let rec = body(copy, wr);
    write_record(wr, rec);
    // SAFETY: leave without running the parent's atexit handlers or destructors.
    unsafe { libc::_exit(0) }
}

/// Write a record to `fd` (async-signal-safe).
pub fn write_record(fd: RawFd, rec: Record) {
    let b = rec.to_bytes();
    let mut off = 0;
    while off < b.len() {
        // SAFETY: writing from a live stack buffer.
        let r = unsafe { libc::write(fd, b[off..].as_ptr().cast(), b.len() - off) };
        if r <= 0 {
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        off += r as usize;
    }
}

extern "C" fn on_alarm(_sig: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// In a child: clear [`STOP`] and arm a one-shot `SIGALRM` after `secs`.
/// The handler is installed without `SA_RESTART`, so a blocked read or write
/// returns `EINTR` and the loop sees the flag.
pub fn arm_timer(secs: f64) {
    STOP.store(false, Ordering::Relaxed);
    let usec = (secs.max(0.001) * 1e6) as i64;
    // SAFETY: sigaction/setitimer with fully initialised structs.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        let it = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: (usec / 1_000_000) as libc::time_t,
                tv_usec: (usec % 1_000_000) as libc::suseconds_t,
            },
        };
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

/// True once the timer fired.
#[inline(always)]
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

fn kill_all(kids: &[Running]) {
    for k in kids {
        // SAFETY: signalling the process group our own child leads.
        unsafe {
            libc::kill(-k.pid, libc::SIGKILL);
            libc::kill(k.pid, libc::SIGKILL);
        }
    }
}

/// How long a killed copy's process group may take to disappear.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(5);

/// Wait, at most `within`, until every member of the killed copies'
/// process groups has exited (zombies may remain until reaped). Reaping the leader is not enough: a SIGKILLed pipeline member
/// (the shell test's `tee`, `sort`) may still finish the system call it
/// was in — creating a file in the temp dir — after the leader is gone,
/// and the temp dir is removed right after this returns. On a loaded
/// machine that window is long enough to leave the dir behind.
fn await_groups_gone(kids: &[Running], within: Duration) {
    let deadline = Instant::now() + within;
    for k in kids {
        // Blocks on the members' pidfds: no polling of the group.
        kurabe_probe::exitwait::kill_until_empty(
            || kurabe_probe::procfs::group_members(k.pid as u32),
            deadline,
        );
    }
}

fn reap(pid: i32) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return status;
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return -1;
        }
    }
}

fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips() {
        let r = Record {
            count: 12.5,
            time_s: f64::NAN,
            check: 7,
            err: 0,
        };
        let back = Record::from_bytes(&r.to_bytes());
        assert_eq!(back.count, 12.5);
        assert!(back.time_s.is_nan());
        assert_eq!((back.check, back.err), (7, 0));
    }

    #[test]
    fn copies_report_and_are_reaped() {
        let stop = AtomicBool::new(false);
        let out = run_copies(3, Duration::from_secs(20), &stop, &|_copy, _fd| {
            // SAFETY: getpid is async-signal-safe.
            let pid = unsafe { libc::getpid() } as u64;
            Record {
                count: 5.0,
                time_s: f64::NAN,
                check: pid,
                err: 0,
            }
        })
        .unwrap();
        assert_eq!(out.len(), 3);
        for o in &out {
            assert_eq!(
                o.record.check, o.pid as u64,
                "each record comes from its own child"
            );
            // Reaped: the pid is no longer our child.
            // SAFETY: non-blocking query of a pid we forked.
            let r = unsafe { libc::waitpid(o.pid, std::ptr::null_mut(), libc::WNOHANG) };
            assert_eq!(r, -1);
        }
    }

    #[test]
    fn a_silent_child_is_an_error_not_a_hang() {
        let stop = AtomicBool::new(false);
        // SAFETY: _exit is async-signal-safe.
        let r = run_copies(1, Duration::from_secs(20), &stop, &|_copy, _fd| unsafe {
            libc::_exit(3)
        });
        match r {
            Err(PassFailure::Failed(msg)) => assert!(msg.contains("exit status 3"), "{msg}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn stop_flag_kills_and_reaps() {
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        // SAFETY: pause is async-signal-safe; the child waits to be killed.
        let r = run_copies(2, Duration::from_secs(20), &stop, &|_copy, _fd| loop {
            unsafe { libc::pause() };
        });
        assert!(matches!(r, Err(PassFailure::Interrupted)));
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
