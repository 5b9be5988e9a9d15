//! A stop request that waiting code blocks on instead of polling.
//!
//! Owns [`Stop`]: a flag, the signal that set it (if any), and a condition
//! variable so a loop that waits between samples wakes at once when the stop
//! comes, and costs nothing while idle (mini-redis's `Shutdown` idea, without
//! an async runtime). Must not install signal handlers or spawn threads: the
//! binary forwards signals into [`Stop::trigger`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A shared stop request: set once, seen by every waiter.
#[derive(Debug, Default)]
pub struct Stop {
    /// The flag itself, shared with code that only polls an `AtomicBool`.
    flag: Arc<AtomicBool>,
    /// The signal number that caused the stop (0: none, or stopped by code).
    signal: AtomicI32,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Stop {
    /// A stop that has not been requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Request the stop; `signal` is the signal number behind it, if any.
    /// The first request's signal is kept. Wakes every waiter.
    pub fn trigger(&self, signal: Option<i32>) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if !self.flag.swap(true, Ordering::SeqCst) {
            self.signal.store(signal.unwrap_or(0), Ordering::SeqCst);
        }
        self.cv.notify_all();
    }

    /// True once a stop was requested.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The signal that requested the stop, if a signal did.
    pub fn signal(&self) -> Option<i32> {
        Some(self.signal.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// The flag as an `AtomicBool` for code that polls (set together with the stop).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }

    /// Block until the stop is requested or `timeout` passes; true when stopped.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.wait_until(Instant::now() + timeout)
    }

    /// Block until the stop is requested or `deadline`; true when stopped.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            // The flag may also be set directly through `flag()`: checked here too.
            if self.is_set() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            guard = self
                .cv
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_times_out_without_a_stop() {
        let s = Stop::new();
        assert!(!s.wait_timeout(Duration::from_millis(5)));
        assert!(!s.is_set());
        assert_eq!(s.signal(), None);
    }

    #[test]
    fn trigger_wakes_a_waiter_at_once_and_keeps_the_first_signal() {
        let s = Arc::new(Stop::new());
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (s.wait_timeout(Duration::from_secs(60)), t.elapsed())
            })
        };
        s.trigger(Some(15));
        s.trigger(Some(2));
        let (stopped, waited) = waiter.join().unwrap();
        assert!(stopped);
        assert!(waited < Duration::from_secs(30));
        assert_eq!(s.signal(), Some(15));
        assert!(s.flag().load(Ordering::SeqCst));
    }
}
