//! A streamed request set's feeder: one thread reads the set's file pass
//! after pass (its [`Stream`]), renders each target's HTTP/1.1 bytes into
//! chunks of at most [`CHUNK_BYTES`] (or [`CHUNK_TARGETS`] targets) and
//! hands them through a queue [`AHEAD`] chunks deep to the workers, which
//! take a chunk each, in file order. So a set costs a few chunks of
//! memory whatever its file's size, and its first request goes out as
//! soon as the first chunk is rendered.
//!
//! Names and checks grow as the file is read: every chunk carries the
//! run's labels as of its last target, which its tags index (ids never
//! change, so a later chunk's labels serve every earlier tag).
//!
//! Owns the feeder thread, the chunks and the workers' shared end
//! ([`Feed`]). Must not read files itself (the [`Stream`] does), nor parse
//! anything.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{SetTarget, Span, Stream};
use crate::request::Body;
use crate::tags::Labels;

/// Request bytes per chunk (a chunk ends with the target that reaches it).
const CHUNK_BYTES: usize = 64 * 1024;
/// Targets per chunk, at most.
const CHUNK_TARGETS: usize = 1024;
/// Chunks rendered ahead of the workers.
const AHEAD: usize = 4;
/// How often a worker waiting for a chunk looks whether the run is over
/// (the feeder may wait on a file or a pipe that never ends: standard
/// input kept open and silent).
const LOOK: Duration = Duration::from_millis(50);

/// The rendered requests of consecutive targets of the set.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// Their HTTP/1.1 bytes, one after another.
    pub bytes: Vec<u8>,
    /// Where each one is, in file order.
    pub spans: Vec<Span>,
    /// Per span: its body when it is sent apart, shared rather than
    /// copied into `bytes` (a body over `super::SPLIT_BODY`: a body
    /// file is held once, not once per chunk and per connection).
    pub split: Vec<Option<Body>>,
    /// The run's names and checks as of the chunk's last target.
    pub labels: Arc<Labels>,
}

/// What the feeder tells the report.
#[derive(Debug, Default)]
struct Progress {
    /// Targets in a pass over the file (so far, during the first).
    targets: AtomicU64,
    /// Some target's method differs from the first one's.
    mixed: AtomicBool,
    /// The labels of the last chunk sent.
    labels: Mutex<Option<Arc<Labels>>>,
}

/// What the feeder thread starts from.
pub(crate) struct Start {
    /// The set's file.
    pub stream: Arc<dyn Stream>,
    /// The labels after the targets read before the run.
    pub labels: Labels,
    /// One pass, then the end (a set without `-n` or `-t` is sent once).
    pub once: bool,
    /// What the workers keep of responses, decided from the labels
    /// before the run: (some request is checked, a check reads bodies).
    pub keeps: (bool, bool),
    /// The set's name in errors.
    pub source: String,
    /// Appends a target's request bytes to the buffer; returns its span.
    pub render: Render,
}

/// Appends a target's request bytes to a chunk's; returns where they are
/// and its body when that is sent apart rather than appended.
pub(crate) type Render = Box<dyn FnMut(&SetTarget, &mut Vec<u8>) -> (Span, Option<Body>) + Send>;

type Item = Result<Arc<Chunk>, String>;

/// The workers' end of the feeder.
#[derive(Debug)]
pub(crate) struct Feed {
    rx: Mutex<Receiver<Item>>,
    /// Set when the workers give up (the run is over or stopped) or the
    /// feed is dropped: the feeder's reads fail, so a feeder waiting on
    /// its input (standard input kept open and silent) ends too.
    gone: Arc<AtomicBool>,
    once: bool,
    done: AtomicBool,
    error: Mutex<Option<String>>,
    progress: Arc<Progress>,
}

impl Feed {
    /// Start the feeder thread.
    pub fn start(start: Start) -> std::io::Result<Feed> {
        let (tx, rx) = sync_channel(AHEAD);
        let progress = Arc::new(Progress::default());
        if let Some(n) = start.stream.targets() {
            progress.targets.store(n, Ordering::Relaxed);
        }
        let once = start.once;
        let p = Arc::clone(&progress);
        let gone = Arc::new(AtomicBool::new(false));
        let g = Arc::clone(&gone);
        std::thread::Builder::new()
            .name("kurabe-feed".to_owned())
            .spawn(move || {
                Feeder {
                    start,
                    tx,
                    p,
                    gone: g,
                }
                .run()
            })?;
        Ok(Feed {
            rx: Mutex::new(rx),
            gone,
            once,
            done: AtomicBool::new(false),
            error: Mutex::new(None),
            progress,
        })
    }

    /// The next chunk in file order, waiting for the feeder if need be;
    /// `None` once the set is done (its one pass ended, or an error), or
    /// when `give_up()` (the run is over or stopped) while it waits.
    pub fn next(&self, give_up: &dyn Fn() -> bool) -> Option<Arc<Chunk>> {
        if self.done() {
            return None;
        }
        let Ok(rx) = self.rx.lock() else {
            return self.ended(None);
        };
        let got = loop {
            match rx.recv_timeout(LOOK) {
                Ok(item) => break Some(item),
                Err(RecvTimeoutError::Disconnected) => break None,
                Err(RecvTimeoutError::Timeout) if give_up() => {
                    self.gone.store(true, Ordering::Relaxed);
                    return None;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        drop(rx);
        self.ended(got)
    }

    /// What the feeder sent (`None`: it is gone): the chunk, or the set
    /// is done.
    fn ended(&self, got: Option<Item>) -> Option<Arc<Chunk>> {
        match got {
            Some(Ok(chunk)) => return Some(chunk),
            Some(Err(e)) => self.fail(e),
            None if !self.once => self.fail("the set's file ended or its reader stopped".into()),
            None => {}
        }
        self.done.store(true, Ordering::Release);
        None
    }

    fn fail(&self, e: String) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }

    /// No chunk is left to take.
    pub fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Why the set ended before its time (a line that does not parse).
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }

    /// Targets in a pass over the file (so far, if the first is not over).
    pub fn targets(&self) -> u64 {
        self.progress.targets.load(Ordering::Relaxed)
    }

    /// Some target's method differs from the first one's.
    pub fn mixed(&self) -> bool {
        self.progress.mixed.load(Ordering::Relaxed)
    }

    /// The labels as of the last chunk sent (`None` before the first).
    pub fn labels(&self) -> Option<Arc<Labels>> {
        self.progress.labels.lock().ok().and_then(|l| l.clone())
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::Relaxed);
    }
}

/// The feeder thread's state.
struct Feeder {
    start: Start,
    tx: SyncSender<Item>,
    p: Arc<Progress>,
    /// The workers are gone ([`Feed`]'s): the passes' reads fail.
    gone: Arc<AtomicBool>,
}

impl Feeder {
    /// Pass after pass until the workers are gone (or one pass, `once`).
    fn run(mut self) {
        let mut snapshot = Arc::new(self.start.labels.clone());
        let mut first_method: Option<String> = None;
        let mut first_pass = self.start.stream.targets().is_none();
        loop {
            let mut pass = match self.start.stream.pass(&self.gone) {
                Ok(p) => p,
                Err(e) => return self.send_err(e),
            };
            let mut chunk = empty(&snapshot);
            let (mut n, mut apart) = (0u64, 0);
            while let Some(t) = pass.next_target(&mut self.start.labels) {
                let t = match t {
                    Ok(t) => t,
                    Err(e) => {
                        let _ = self.send(chunk, &mut snapshot);
                        return self.send_err(e);
                    }
                };
                n += 1;
                let first = first_method.get_or_insert_with(|| t.method.clone());
                if *first != t.method {
                    self.p.mixed.store(true, Ordering::Relaxed);
                }
                let (span, split) = (self.start.render)(&t, &mut chunk.bytes);
                // A body sent apart counts as if it were in the chunk's
                // bytes: a chunk holds one such body at most (each of a
                // set's targets may name a body file of its own).
                apart += split.as_ref().map_or(0, |b| b.len());
                chunk.spans.push(span);
                chunk.split.push(split);
                let size = chunk.bytes.len() + apart;
                if size >= CHUNK_BYTES || chunk.spans.len() >= CHUNK_TARGETS {
                    apart = 0;
                    if first_pass {
                        self.p.targets.store(n, Ordering::Relaxed);
                    }
                    let full = std::mem::replace(&mut chunk, empty(&snapshot));
                    if !self.send(full, &mut snapshot) {
                        return;
                    }
                }
            }
            if first_pass {
                self.p.targets.store(n, Ordering::Relaxed);
            }
            if !self.send(chunk, &mut snapshot) || self.start.once || n == 0 {
                return;
            }
            first_pass = false;
        }
    }

    /// Send `chunk` (unless empty) with the labels as they are now; false
    /// when the workers are gone or the labels need what the workers do
    /// not keep (an error is sent instead).
    fn send(&self, mut chunk: Chunk, snapshot: &mut Arc<Labels>) -> bool {
        if chunk.spans.is_empty() {
            return true;
        }
        if self.start.labels.size() != snapshot.size() {
            if let Err(e) = self.keeps_enough() {
                self.send_err(e);
                return false;
            }
            *snapshot = Arc::new(self.start.labels.clone());
            if let Ok(mut l) = self.p.labels.lock() {
                *l = Some(Arc::clone(snapshot));
            }
        }
        chunk.labels = Arc::clone(snapshot);
        self.tx.send(Ok(Arc::new(chunk))).is_ok()
    }

    /// Checks met later in the file must read no more than the workers
    /// keep of responses, decided before the run.
    fn keeps_enough(&self) -> Result<(), String> {
        let l = &self.start.labels;
        let (checking, bodies) = self.start.keeps;
        let late = if !checking && l.any_checks() {
            "a # @check"
        } else if !bodies && l.needs().body {
            "a body check (body~)"
        } else {
            return Ok(());
        };
        Err(format!(
            "{}: {late} first appears after the targets read before the run: a large (streamed) set keeps of each response what those targets' checks read; give it with --check, or put one such target among the file's first",
            self.start.source
        ))
    }

    /// Send why the set ended (not when the workers are gone: a read
    /// given up then is no error of the set's).
    fn send_err(&self, e: String) {
        if !self.gone.load(Ordering::Relaxed) {
            let _ = self.tx.send(Err(e));
        }
    }
}

fn empty(labels: &Arc<Labels>) -> Chunk {
    Chunk {
        bytes: Vec::with_capacity(CHUNK_BYTES + 1024),
        spans: Vec::with_capacity(64),
        split: Vec::with_capacity(64),
        labels: Arc::clone(labels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::set::Pass;
    use crate::target::Target;

    /// A set of `n` targets a pass (`/0`, `/1`, `/2` in turn), failing at `bad`.
    #[derive(Debug)]
    struct Fake {
        n: usize,
        bad: Option<usize>,
    }

    struct FakePass(usize, usize, Option<usize>);

    impl Stream for Fake {
        fn pass(&self, _: &Arc<AtomicBool>) -> Result<Box<dyn Pass>, String> {
            Ok(Box::new(FakePass(0, self.n, self.bad)))
        }
    }

    impl Pass for FakePass {
        fn next_target(&mut self, labels: &mut Labels) -> Option<Result<SetTarget, String>> {
            let i = self.0;
            if i >= self.1 {
                return None;
            }
            self.0 += 1;
            if self.2 == Some(i) {
                return Some(Err(format!("f:{i}: bad")));
            }
            let url = format!("http://h/{}", i % 3);
            let none: &[&str] = &[];
            let tag = labels.tag("GET", &url, None, none).unwrap();
            Some(Ok(SetTarget {
                method: "GET".into(),
                target: Target::parse(&url).unwrap(),
                headers: vec![],
                body: None,
                tag,
                weight: 1,
                checks: vec![],
            }))
        }
    }

    fn feed(n: usize, bad: Option<usize>, once: bool) -> Feed {
        Feed::start(Start {
            stream: Arc::new(Fake { n, bad }),
            labels: Labels::default(),
            once,
            keeps: (false, false),
            source: "f".into(),
            render: Box::new(|t, bytes| {
                let off = bytes.len();
                bytes.extend_from_slice(t.target.path.as_bytes());
                let span = Span {
                    off,
                    len: bytes.len() - off,
                    body_len: 0,
                    head: false,
                    tag: t.tag,
                };
                (span, None)
            }),
        })
        .unwrap()
    }

    /// The paths of the next `k` requests (fewer when the feed ends).
    fn paths(f: &Feed, k: usize) -> Vec<String> {
        let mut out = vec![];
        while out.len() < k {
            let Some(c) = f.next(&|| false) else { break };
            for s in &c.spans {
                out.push(String::from_utf8_lossy(&c.bytes[s.off..s.off + s.len]).into_owned());
            }
        }
        out
    }

    #[test]
    fn once_is_every_target_in_file_order_then_the_end() {
        let f = feed(2500, None, true);
        let got = paths(&f, usize::MAX);
        assert_eq!(got.len(), 2500);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, p)| *p == format!("/{}", i % 3)));
        assert!(f.done() && f.error().is_none());
        assert_eq!(f.targets(), 2500);
        assert_eq!(f.labels().unwrap().names().len(), 3);
    }

    #[test]
    fn passes_repeat_until_the_workers_stop_asking() {
        let f = feed(10, None, false);
        let got = paths(&f, 25);
        assert!(got.len() >= 25);
        assert_eq!(got[10..20], got[..10]);
        assert_eq!(f.targets(), 10);
        assert!(!f.done());
    }

    #[test]
    fn a_bad_target_ends_the_feed_with_its_error() {
        let f = feed(3000, Some(1500), false);
        let got = paths(&f, usize::MAX);
        assert_eq!(got.len(), 1500);
        assert_eq!(f.error().as_deref(), Some("f:1500: bad"));
        assert!(f.done());
    }
}
