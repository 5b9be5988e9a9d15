//! What a forced exit (a second signal, or a first past the grace) must
//! still do before the process ends: one registered action, run on a
//! thread of its own for at most [`WAIT`].
//!
//! Owns the registry and the bounded wait. Must not print nor exit: the
//! caller's forced-exit path runs [`run`] and then ends the process.

use std::sync::Mutex;
use std::time::Duration;

/// What a forced exit does last ([`on_forced_exit`]).
type LastWords = Box<dyn Fn() + Send>;
static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// How long a forced exit waits for its last words.
pub const WAIT: Duration = Duration::from_secs(1);

/// Have a forced exit run `f` before it exits, on a thread of its own and
/// for at most [`WAIT`]: what must not be left undone even then (a fleet
/// run marked cancelled, so that its workers stop).
pub fn on_forced_exit(f: impl Fn() + Send + Sync + 'static) {
    *LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
}

/// Run the last words, if any, waiting at most [`WAIT`].
pub fn run() {
    let Some(f) = LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().spawn(move || {
        f();
        let _ = tx.send(());
    });
    if spawned.is_ok() {
        let _ = rx.recv_timeout(WAIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// The registered words run once, and a second run finds none.
    #[test]
    fn last_words_run_once() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        on_forced_exit(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        run();
        run();
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }
}
