//! A request set on standard input (`--targets -`) too large to hold:
//! spooled, as it is read, to an unlinked file in the temporary
//! directory, which the set's passes read like a targets file. A pass
//! that catches up with the copy waits for more (so the first requests go
//! out while standard input is still being read), and later passes (a
//! second time through in the file's orders, or the draws of the
//! weighted and random orders, which need the whole set indexed first)
//! read the spool from the disk, never standard input again. Memory is a
//! copy buffer; the disk holds the set. A reader's wait for the copy is
//! given up once its stop flag is set (the run is over or stopped):
//! standard input may stay open and silent for ever.
//!
//! Owns the spool and its copier thread. Must not parse targets.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// A targets file larger than this (or of more than [`HELD_LINES`]
/// lines) is streamed in the sequential and round-robin orders (read as
/// it is sent, never held); standard input is spooled when it holds
/// more than this (or as many lines).
pub(crate) const STREAM_BYTES: u64 = 16 << 20;

/// A set of more lines than this is streamed (or spooled) however few
/// its bytes: every target is at least a line, and a held target costs a
/// few hundred bytes once resolved (its method, URL, headers and request
/// bytes), so a held set stays within about 128 MiB even when its lines
/// are the shortest URLs.
pub(crate) const HELD_LINES: usize = 256 << 10;

/// Whether `text` has more lines than a held set may ([`HELD_LINES`]).
pub(crate) fn too_many_lines(text: &[u8]) -> bool {
    text.iter().filter(|b| **b == b'\n').count() > HELD_LINES
}

/// Standard input as the CLI read it.
pub enum StdinSet {
    /// All of it, at most 16 MiB (held and checked as text).
    Text(Vec<u8>),
    /// More: spooled; the set's path is `-`.
    Spooled,
}

/// How often a reader waiting for the copy looks at its stop flag.
const LOOK: Duration = Duration::from_millis(50);

/// The spool of this process's standard input, once started.
static SPOOL: OnceLock<Arc<Spool>> = OnceLock::new();

/// Read standard input: whole if it ends within the size a set is held
/// at (16 MiB), else spool it (the rest by a thread, so the set's first
/// requests need not wait for its end) and return [`StdinSet::Spooled`].
/// Either way it goes through the spool file, never a buffer as large
/// as the limit (unless no spool file can be made: then it is read
/// whole up to that size, and a larger one is refused).
pub fn read_stdin() -> std::io::Result<StdinSet> {
    let limit = STREAM_BYTES;
    let mut stdin = std::io::stdin();
    let spool = match Spool::create() {
        Ok(spool) => Arc::new(spool),
        Err(e) => return held_without_spool(stdin, e),
    };
    let at = spool.copy_until(&mut stdin, limit + 1)?;
    if at <= limit {
        let mut text = vec![0u8; at as usize];
        spool.file.read_exact_at(&mut text, 0)?;
        if !too_many_lines(&text) {
            return Ok(StdinSet::Text(text));
        }
    }
    let copier = Arc::clone(&spool);
    std::thread::Builder::new()
        .name("kurabe-stdin".to_owned())
        .spawn(move || copier.copy(stdin, at))?;
    let _ = SPOOL.set(spool);
    Ok(StdinSet::Spooled)
}

/// Standard input held whole as a small set when no spool file could be
/// made (`why`): at most [`STREAM_BYTES`], a larger one refused.
fn held_without_spool(stdin: std::io::Stdin, why: std::io::Error) -> std::io::Result<StdinSet> {
    let mut text = Vec::new();
    stdin.take(STREAM_BYTES + 1).read_to_end(&mut text)?;
    if text.len() as u64 > STREAM_BYTES || too_many_lines(&text) {
        return Err(std::io::Error::other(format!(
            "standard input holds more than a set held in memory may ({} MiB or {HELD_LINES} lines), and it cannot be spooled to the temporary directory ({why}): set TMPDIR to a writable directory, or give the set as a file",
            STREAM_BYTES >> 20
        )));
    }
    Ok(StdinSet::Text(text))
}

/// A reader of the spooled standard input from its start, if spooled.
pub(crate) fn open() -> Option<SpoolReader> {
    SPOOL.get().map(|s| SpoolReader {
        spool: Arc::clone(s),
        pos: 0,
        stop: None,
    })
}

/// The spooled standard input as a file of its own (its own offset),
/// once all of it is spooled: what a draw seeks in. The wait is given up
/// ([`kurabe_input::is_stopped`]) once `stop` is set.
pub(crate) fn complete_file(stop: Option<&Arc<AtomicBool>>) -> Option<std::io::Result<File>> {
    let s = SPOOL.get()?;
    Some(s.wait_all(stop).and_then(|()| {
        use std::os::fd::AsRawFd;
        File::open(format!("/proc/self/fd/{}", s.file.as_raw_fd()))
    }))
}

/// The spool file and how far the copy got.
#[derive(Debug)]
struct Spool {
    file: File,
    /// (bytes spooled, the copy's end: `Some(Ok)` at the end of input).
    state: Mutex<(u64, Option<Result<(), String>>)>,
    grown: Condvar,
}

impl Spool {
    /// An unlinked file in the temporary directory.
    fn create() -> std::io::Result<Spool> {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "kurabe-stdin-{}-{}",
            std::process::id(),
            t.as_nanos()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(Spool {
            file,
            state: Mutex::new((0, None)),
            grown: Condvar::new(),
        })
    }

    /// Copy `input` to the spool until at least `upto` bytes are in it,
    /// or its end; the bytes spooled.
    fn copy_until(&self, mut input: impl Read, upto: u64) -> std::io::Result<u64> {
        let mut buf = vec![0u8; 1 << 20];
        let mut at = self.state.lock().map_or(0, |s| s.0);
        while at < upto {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.file.write_all_at(&buf[..n], at)?;
            at += n as u64;
            self.grew(at, None);
        }
        Ok(at)
    }

    /// Copy the rest of `input` after the first `at` bytes: to its end
    /// or an error, which readers then get.
    fn copy(&self, input: impl Read, at: u64) {
        let end = self
            .copy_until(input, u64::MAX)
            .map(|_| ())
            .map_err(|e| format!("cannot spool standard input (from byte {at}): {e}"));
        let len = self.state.lock().map_or(at, |s| s.0);
        self.grew(len, Some(end));
    }

    fn grew(&self, len: u64, end: Option<Result<(), String>>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = len;
        if end.is_some() {
            s.1 = end;
        }
        self.grown.notify_all();
    }

    /// Wait until more than `pos` bytes are spooled or the copy ended:
    /// the bytes spooled, or the copy's error; given up
    /// ([`kurabe_input::stopped`]) once `stop` is set.
    fn wait_past(&self, pos: u64, stop: Option<&Arc<AtomicBool>>) -> std::io::Result<u64> {
        let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while s.0 <= pos && s.1.is_none() {
            if stopped() {
                return Err(kurabe_input::stopped());
            }
            s = match self.grown.wait_timeout(s, LOOK) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        match &s.1 {
            Some(Err(e)) if s.0 <= pos => Err(std::io::Error::other(e.clone())),
            _ => Ok(s.0),
        }
    }

    /// Wait for the copy's end (given up once `stop` is set).
    fn wait_all(&self, stop: Option<&Arc<AtomicBool>>) -> std::io::Result<()> {
        let mut pos = 0;
        loop {
            let len = self.wait_past(pos, stop)?;
            let done = self.state.lock().map(|s| s.1.is_some()).unwrap_or(true);
            if done && len == pos {
                return Ok(());
            }
            pos = len;
        }
    }
}

/// Reads the spool front to back, waiting for the copy where it catches
/// up (a clone reads on from where it was cloned), until its stop flag
/// is set.
#[derive(Debug, Clone)]
pub(crate) struct SpoolReader {
    spool: Arc<Spool>,
    pos: u64,
    /// Once set, a read fails ([`kurabe_input::is_stopped`]) rather than
    /// wait for the copy.
    stop: Option<Arc<AtomicBool>>,
}

impl SpoolReader {
    /// The same reader, giving up once `stop` is set (as
    /// [`kurabe_input::Shared::stopping_on`]).
    pub(crate) fn stopping_on(&self, stop: &Arc<AtomicBool>) -> SpoolReader {
        SpoolReader {
            stop: Some(Arc::clone(stop)),
            ..self.clone()
        }
    }
}

impl Read for SpoolReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let len = self.spool.wait_past(self.pos, self.stop.as_ref())?;
        let want = buf
            .len()
            .min(usize::try_from(len - self.pos).unwrap_or(usize::MAX));
        let n = self.spool.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard input as a test drives it: each message is one read's
    /// bytes; the channel's end is the input's end.
    struct Chan(std::sync::mpsc::Receiver<Vec<u8>>);

    impl Read for Chan {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Ok(b) = self.0.recv() else { return Ok(0) };
            buf[..b.len()].copy_from_slice(&b);
            Ok(b.len())
        }
    }

    /// A thread copying what `rx` sends into `spool`, as `read_stdin`'s does.
    fn copying(
        spool: &Arc<Spool>,
        rx: std::sync::mpsc::Receiver<Vec<u8>>,
    ) -> std::thread::JoinHandle<()> {
        let c = Arc::clone(spool);
        std::thread::spawn(move || c.copy(Chan(rx), 0))
    }

    #[test]
    fn a_set_of_more_lines_than_a_held_one_may_have_is_not_held() {
        let lines = |n: usize| "h\n".repeat(n).into_bytes();
        assert!(!too_many_lines(&lines(HELD_LINES)));
        assert!(too_many_lines(&lines(HELD_LINES + 1)));
        // A last line without its newline is not counted: a bound, not a count.
        assert!(!too_many_lines(b"a\nb"));
    }

    #[test]
    fn a_reader_waits_for_the_copy_and_reads_all_of_it() {
        let spool = Arc::new(Spool::create().unwrap());
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let copier = copying(&spool, rx);
        let mut r = SpoolReader {
            spool: Arc::clone(&spool),
            pos: 0,
            stop: None,
        };
        tx.send(b"abc".to_vec()).unwrap();
        let mut got = [0u8; 8];
        assert_eq!(r.read(&mut got).unwrap(), 3, "what is spooled so far");
        tx.send(b"defg".to_vec()).unwrap();
        drop(tx);
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"defg");
        copier.join().unwrap();
        spool.wait_all(None).unwrap();
    }

    /// Standard input kept open and silent: a reader (and a wait for the
    /// whole copy) gives up once its stop flag is set.
    #[test]
    fn a_wait_for_a_silent_input_ends_on_its_stop() {
        let spool = Arc::new(Spool::create().unwrap());
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let copier = copying(&spool, rx);
        tx.send(b"abc".to_vec()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = SpoolReader {
            spool: Arc::clone(&spool),
            pos: 0,
            stop: None,
        }
        .stopping_on(&stop);
        let (s, sp) = (Arc::clone(&stop), Arc::clone(&spool));
        let waiter = std::thread::spawn(move || {
            let mut r = reader;
            let mut got = Vec::new();
            let read = r.read_to_end(&mut got);
            (got, read, sp.wait_all(Some(&s)))
        });
        // The reader has what was spooled and waits for more, which never
        // comes; the stop ends its wait and the whole-copy wait.
        stop.store(true, Ordering::Relaxed);
        let (got, read, all) = waiter.join().unwrap();
        assert!(b"abc".starts_with(&got), "{got:?}");
        assert!(kurabe_input::is_stopped(&read.unwrap_err()));
        assert!(kurabe_input::is_stopped(&all.unwrap_err()));
        drop(tx);
        copier.join().unwrap();
    }
}
