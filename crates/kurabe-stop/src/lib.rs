//! kurabe's stop request, which waiting code blocks on instead of polling.
//!
//! Owns [`Stop`]: a flag, the signal that set it (if any), and a condition
//! variable so a loop that waits between samples wakes at once when the stop
//! comes, and costs nothing while idle (mini-redis's `Shutdown` idea, without
//! an async runtime). It lives in its own crate, below every crate that runs
//! work, because it holds a mutex and a condition variable and so cannot sit
//! in the I/O- and thread-free `kurabe-model`. Must not install signal
//! handlers or spawn threads: the binary forwards signals into
//! [`Stop::trigger`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
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
    /// Stops that this one triggers too ([`Stop::child`]).
    children: Mutex<Vec<Weak<Stop>>>,
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
        drop(_guard);
        let children =
            std::mem::take(&mut *self.children.lock().unwrap_or_else(|p| p.into_inner()));
        children
            .iter()
            .filter_map(Weak::upgrade)
            .for_each(|c| c.trigger(signal));
    }

    /// A stop that this one triggers, and that can also be triggered on
    /// its own: one thing to wait on for "interrupted, or my work is done".
    pub fn child(self: &Arc<Self>) -> Arc<Stop> {
        let child = Arc::new(Stop::new());
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&child));
        // Set before the link existed: pass it on now.
        if self.is_set() {
            child.trigger(self.signal());
        }
        child
    }

    /// Make `child` a stop that this one triggers too (as [`Stop::child`]
    /// does, for a stop the caller already holds).
    pub fn link(&self, child: &Arc<Stop>) {
        self.children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(child));
        if self.is_set() {
            child.trigger(self.signal());
        }
    }

    /// Block until the stop is requested.
    pub fn wait(&self) {
        while !self.wait_timeout(Duration::from_secs(3600)) {}
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

    #[test]
    fn a_child_is_stopped_by_its_parent_or_on_its_own() {
        let parent = Arc::new(Stop::new());
        let own = parent.child();
        own.trigger(None);
        assert!(own.is_set() && !parent.is_set());
        let linked = parent.child();
        let waiter = {
            let linked = linked.clone();
            std::thread::spawn(move || linked.wait())
        };
        parent.trigger(Some(2));
        waiter.join().unwrap();
        assert_eq!(linked.signal(), Some(2));
        assert!(
            parent.child().is_set(),
            "a late child of a stopped parent is stopped"
        );
    }
}
