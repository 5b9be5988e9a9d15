//! What each request costs the built-in server, whichever protocol carried
//! it: the count, CPU burnt (`work_us`), memory churned (`alloc_kb`) and
//! kept (`leak_bytes`), a turn at the one simulated serial resource
//! (`service_us`) and the delay (`latency_ms`): [`Work::pay`] pays them
//! and says when the response may go out.
//!
//! Owns these costs and the resource's queue, shared by the HTTP/1.1
//! workers and the HTTP/3 loop so that both protocols cost the same and
//! queue at the same resource. Must not touch sockets or wait: a response
//! held back is the caller's to send when its time comes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{ServeConfig, ServeStats};

/// The costs every worker of one server pays, and the resource they share.
pub(super) struct Work<'a> {
    cfg: &'a ServeConfig,
    stats: &'a ServeStats,
    shutdown: &'a AtomicBool,
    /// When the simulated serial resource (`service_us`) is next free.
    resource_free_at: Mutex<Option<Instant>>,
}

impl<'a> Work<'a> {
    pub(super) fn new(
        cfg: &'a ServeConfig,
        stats: &'a ServeStats,
        shutdown: &'a AtomicBool,
    ) -> Work<'a> {
        Work {
            cfg,
            stats,
            shutdown,
            resource_free_at: Mutex::new(None),
        }
    }

    /// The configuration whose costs these are.
    pub(super) fn config(&self) -> &'a ServeConfig {
        self.cfg
    }

    /// The server is stopping.
    pub(super) fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    /// Count one request (of `body_bytes` body) and pay its costs, keeping
    /// what `leak_bytes` keeps in `leaks`: `None` when the response may go
    /// out now, else when it may (its turn at the resource over, its
    /// latency passed). The instants come in the order requests were paid
    /// (every delay is the same length and turns end in the order taken),
    /// so a FIFO holds them.
    pub(super) fn pay(&self, body_bytes: u64, leaks: &mut Vec<Box<[u8]>>) -> Option<Instant> {
        let (cfg, stats) = (self.cfg, self.stats);
        stats.note_served();
        if body_bytes > 0 {
            stats.requests_with_body.fetch_add(1, Ordering::Relaxed);
            (stats.body_bytes_received).fetch_add(body_bytes, Ordering::Relaxed);
        }
        spin(Duration::from_micros(cfg.work_us), self.shutdown);
        churn(cfg.alloc_kb * 1024);
        if cfg.leak_bytes > 0 {
            // Filled with a non-zero byte so every page is really resident.
            leaks.push(vec![0xa5; cfg.leak_bytes].into_boxed_slice());
            (stats.leaked_bytes).fetch_add(cfg.leak_bytes as u64, Ordering::Relaxed);
        }
        let now = Instant::now();
        let served_at = (cfg.service_us > 0)
            .then(|| self.take_turn(now, Duration::from_micros(cfg.service_us)));
        (served_at.is_some() || cfg.latency_ms > 0)
            .then(|| served_at.unwrap_or(now) + Duration::from_millis(cfg.latency_ms))
    }

    /// Queue a request that arrived at `now` for the serial resource: when
    /// its turn ends. Turns follow each other exactly, from the end of the
    /// previous turn (not from when a worker woke up late), so the server's
    /// capacity is 1e6 / `service_us` per second however late the timers fire.
    fn take_turn(&self, now: Instant, service: Duration) -> Instant {
        let mut free_at = self
            .resource_free_at
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let start = free_at.map_or(now, |t| t.max(now));
        let end = start + service;
        *free_at = Some(end);
        end
    }
}

/// Burn `d` of this thread's CPU time (a busy loop, not a sleep: it is meant to cost CPU).
///
/// The loop watches the thread's own CPU clock, not the wall clock, so every request
/// costs the same CPU however often the scheduler preempts the worker: on a loaded
/// machine a wall-clock spin would cost less CPU per request, and a 10 % difference in
/// `--work-us` would no longer be a 10 % difference in work. A shutdown ends it early:
/// SIGTERM must not wait for seconds of configured work.
fn spin(d: Duration, shutdown: &AtomicBool) {
    if d.is_zero() {
        return;
    }
    let end = thread_cpu_time() + d;
    while thread_cpu_time() < end && !shutdown.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
}

/// CPU time consumed by the calling thread so far.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on
    // every Linux kernel kurabe supports, and the call has no other side effects.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Allocate `bytes`, touch every byte and free it again.
fn churn(bytes: usize) {
    if bytes == 0 {
        return;
    }
    // A non-zero fill defeats calloc's untouched zero pages.
    let buf = vec![0x5au8; bytes];
    std::hint::black_box(&buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_costs_at_least_the_requested_cpu_time() {
        let start = thread_cpu_time();
        let wall = Instant::now();
        spin(Duration::from_micros(2000), &AtomicBool::new(false));
        assert!(thread_cpu_time() - start >= Duration::from_micros(2000));
        assert!(wall.elapsed() >= Duration::from_micros(2000));
    }

    #[test]
    fn spin_stops_at_shutdown() {
        let start = thread_cpu_time();
        spin(Duration::from_secs(600), &AtomicBool::new(true));
        assert!(thread_cpu_time() - start < Duration::from_secs(1));
    }

    #[test]
    fn turns_at_the_resource_follow_each_other_and_latency_adds() {
        // Turns of a second: back to back unless the machine stalls that long.
        let cfg = ServeConfig {
            service_us: 1_000_000,
            latency_ms: 2,
            leak_bytes: 10,
            ..ServeConfig::default()
        };
        let (stats, stop) = (ServeStats::default(), AtomicBool::new(false));
        let work = Work::new(&cfg, &stats, &stop);
        let mut leaks = Vec::new();
        let before = Instant::now();
        let a = work.pay(5, &mut leaks).unwrap();
        let b = work.pay(0, &mut leaks).unwrap();
        assert!(a >= before + Duration::from_millis(1002), "{a:?}");
        assert_eq!(b - a, Duration::from_secs(1), "back to back");
        assert_eq!(stats.requests_served.load(Ordering::Relaxed), 2);
        assert_eq!(stats.body_bytes_received.load(Ordering::Relaxed), 5);
        assert_eq!(stats.leaked_bytes.load(Ordering::Relaxed), 20);
        assert_eq!(leaks.len(), 2);
        let plain = ServeConfig::default();
        assert_eq!(Work::new(&plain, &stats, &stop).pay(0, &mut leaks), None);
    }
}
