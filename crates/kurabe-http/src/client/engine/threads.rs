//! Running the workers of one load test on their own threads.
//!
//! Owns the threads' life cycle: spawn one per worker, merge what they
//! measured, and turn a worker's panic into [`LoadError::WorkerPanic`] (a
//! worker's setup error into its own error) after stopping the others, so a bug in the engine ends the run with an error
//! instead of leaving the caller (and its progress thread) waiting. Must not
//! know what a worker does inside its loop.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{h1, h2, h3, turns};
use crate::client::LoadError;
use kurabe_model::load_stats::Stats;

/// One worker thread of any protocol.
pub(crate) enum ProtocolWorker<'a> {
    H1(h1::Worker<'a>),
    H2(h2::worker::Worker<'a>),
    H3(h3::worker::Worker<'a>),
}

impl ProtocolWorker<'_> {
    fn run(self) -> Result<Stats, LoadError> {
        let r = match self {
            ProtocolWorker::H1(w) => turns::run(w),
            ProtocolWorker::H2(w) => turns::run(w),
            ProtocolWorker::H3(w) => turns::run(w),
        };
        // The one setup failure a worker meets on its own thread: the
        // kernel refused to enable the HTTP/1.1 worker's io_uring.
        r.map_err(|e| LoadError::Config(crate::client::uring_refused(&e)))
    }
}

/// Sets `stop` when the thread holding it unwinds: the other workers see it
/// as an abort at their next turn (≤ 20 ms) and end their loops.
struct StopOthersOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOthersOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Run every worker on its own thread and merge what they measured. A
/// worker that panics sets `stop` (the run's abort flag) so the rest finish
/// promptly; the run then fails with the first panic's message.
pub(crate) fn run_workers(
    workers: Vec<ProtocolWorker<'_>>,
    stop: &AtomicBool,
) -> Result<Stats, LoadError> {
    let mut total = Stats::new();
    let mut failure: Option<LoadError> = None;
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(workers.len());
        for (i, w) in workers.into_iter().enumerate() {
            match spawn(s, i, w, stop) {
                Ok(h) => handles.push((i, h)),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(LoadError::Resources(e));
                }
            }
        }
        for (worker, h) in handles {
            let outcome = h.join().unwrap_or_else(|payload| {
                let message = panic_text(payload.as_ref());
                Err(LoadError::WorkerPanic { worker, message })
            });
            match outcome {
                Ok(st) => total.merge(&st),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
    });
    failure.map_or(Ok(total), Err)
}

/// Start worker `i` on a thread of scope `s`; it sets `stop` if it fails or panics.
fn spawn<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    i: usize,
    w: ProtocolWorker<'scope>,
    stop: &'scope AtomicBool,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, Result<Stats, LoadError>>> {
    std::thread::Builder::new()
        .name(format!("{THREAD_PREFIX}{i}"))
        .spawn_scoped(s, move || {
            let _guard = StopOthersOnPanic(stop);
            let r = w.run();
            if r.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            r
        })
}

/// Worker threads are named `kurabe-load-N`: a panic hook can tell them apart.
pub const THREAD_PREFIX: &str = "kurabe-load-";

/// The text of a panic payload (`panic!("...")` carries a `&str` or a `String`).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
