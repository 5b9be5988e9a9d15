//! When a worker sleeps (either protocol): the ticker that bounds every sleep, and
//! naps that let responses gather so one wake-up reads a batch of them.
//!
//! Why naps: against a server on the same machine, a worker that waits for
//! the next event wakes once per response (the server answers one at a time),
//! and a wake-up (a context switch, and in a VM an idle exit) costs more than
//! the response's `recv` and the next request's `send` together
//! (`bench/http-peers.sh`, nginx `auto`, -c 50: 0.55 context switches and
//! 3.5 µs of CPU per request without naps, 0.05 and 2.6 µs with them). So
//! with at least [`MIN_IN_FLIGHT`] requests in flight, a worker about to wait
//! first sleeps a quarter of the latest request's latency (20–200 µs), then
//! reads everything that arrived: about a quarter of what is in flight per
//! wake-up. In the closed model this costs no throughput while the server has
//! a queue, and the mean latency stays `connections / throughput` (Little's
//! law): the time a response waits in the socket is time it would otherwise
//! have waited in the server's queue. A nap that finds nothing is followed by
//! a plain wait, so a stalled server is not polled. The open model (`--rate`)
//! and runs without keep-alive (ab's connect phase) never nap.
//!
//! Whether a worker naps at all is measured while it runs (the `trial`
//! module): naps pay where the client has a CPU to itself and the server
//! answers one at a time, and cost where client and server share busy CPUs.
//! Quiet machine, 2026-12-01, -c 50, 5 interleaved rounds of 3 s, client CPU
//! per request as a multiple of `wrk -t1`'s, always napping / never / trial:
//! nginx `worker_processes 1`, io_uring 0.752 / 0.798 / 0.742, epoll 0.752 /
//! 0.760 / 0.736; nginx `auto`, io_uring 0.630 / 0.555 / 0.543, epoll 0.770
//! / 0.700 / 0.694. Throughput follows the same order (nginx 1: naps 1.08x
//! wrk's req/s, none 0.93x; `auto`: naps 1.21x, none 1.31x, trial 1.37x).
//!
//! HTTP/2 naps by the same rule but without the trial. Its worker used to
//! pause on its own (200 ns per stream in flight, at most 100 µs, from 64
//! streams) because every response frame nginx writes to a blocked client
//! costs nginx the wake-up (`-c 50 --streams 10`, h2c: 0.06-0.07
//! rescheduling interrupts per request without a pause, 0.001-0.005 with
//! it; nginx 7.0 against 5.8 µs of CPU per request); with many streams in
//! flight a plain wait is always the dear arm, so a trial only spends its
//! plain epochs. Measured on one core for both protocols (2026-12-02, 2
//! CPUs at load 4-11 from other builds, nginx 1 worker, h2c, -c 50
//! --streams 10, 5 interleaved rounds of 4 s, client CPU µs per request,
//! medians): the old pause 3.67, these naps with the trial 4.29, the old
//! pause inside the shared core 4.05, these naps without the trial 3.63
//! (h2load 13.4 in the same rounds).
//!
//! Owns how long a wait may be put off. Must not read sockets or the clock:
//! the worker tells it what each wake-up brought.

use std::io;

use super::trial::Trial;
use crate::client::engine::sys;
use crate::client::shared::Shared;

/// Longest sleep between checks of Ctrl-C and the clock (the loop in
/// `turns` waits at most this long; pacing never naps longer).
pub(crate) const TICK_NS: u64 = 20_000_000;

/// Shortest and longest nap.
pub(crate) const NAP_MIN_NS: u64 = 20_000;
const NAP_MAX_NS: u64 = 200_000;
/// A nap lasts this fraction of the latest request's latency: with `n` in
/// flight, about `n / 4` responses arrive meanwhile, while the server still
/// has the other three quarters to work on.
const NAP_SHARE: u64 = 4;
/// Fewer requests in flight than this on a worker: no naps (a nap would
/// gather too few responses to pay for the server waiting on the rest).
const MIN_IN_FLIGHT: usize = 32;

/// A worker's waking rhythm.
pub(crate) struct Pace {
    /// Wakes the loop every `tick_ns` to check the stop flag, deadlines and progress.
    pub ticker: sys::Ticker,
    pub tick_ns: u64,
    /// This worker naps (see [`naps`]).
    naps: bool,
    /// Requests answered so far, and when the current wake-up began.
    answered: u64,
    wake_start: u64,
    /// The last wake-up began with a nap and answered nothing.
    idle_nap: bool,
    /// The current wake-up began with a nap.
    napping: bool,
    /// Latency of the latest answered request, ns.
    latency_ns: u64,
    /// Whether naps pay here, measured (see the `trial` module).
    trial: Trial,
    /// The trial decides whether to nap (else a napping worker always naps).
    tried: bool,
}

impl Pace {
    /// The rhythm of a worker with at most `in_flight` requests on its
    /// connections, kept alive between requests or not; `tried`: the nap
    /// trial decides whether its naps pay (HTTP/1.1), else it naps whenever
    /// it may (HTTP/2, see the module's header).
    pub fn new(sh: &Shared, in_flight: usize, keep_alive: bool, tried: bool) -> io::Result<Pace> {
        // Deadlines are checked every tick: within 5 % of the request timeout.
        let tick_ns = (sh.timeout_ns / 20).clamp(1_000_000, TICK_NS);
        let naps = naps(sh.load.arrival.is_open(), keep_alive, in_flight);
        let mut p = Pace::with(tick_ns, naps)?;
        p.tried = tried;
        Ok(p)
    }

    /// A worker ticking every `tick_ns` that naps or not.
    fn with(tick_ns: u64, naps: bool) -> io::Result<Pace> {
        Ok(Pace {
            ticker: sys::Ticker::new(tick_ns)?,
            tick_ns,
            naps,
            answered: 0,
            wake_start: 0,
            idle_nap: false,
            napping: false,
            latency_ns: 0,
            trial: Trial::new(),
            tried: true,
        })
    }

    /// Whether this worker ever naps.
    pub fn naps(&self) -> bool {
        self.naps
    }

    /// A request was answered `latency_ns` after it started.
    pub fn answered(&mut self, latency_ns: u64) {
        self.answered += 1;
        self.latency_ns = latency_ns;
    }

    /// How long to sleep before looking for events, when the next wait
    /// would block (None: wait for the next event at once).
    pub fn nap_ns(&self) -> Option<u64> {
        (self.naps && !self.idle_nap && (!self.tried || self.trial.naps()))
            .then(|| (self.latency_ns / NAP_SHARE).clamp(NAP_MIN_NS, NAP_MAX_NS))
    }

    /// A wake-up begins; `napping`: with a nap.
    pub fn wake_begins(&mut self, napping: bool) {
        self.wake_start = self.answered;
        self.napping = napping;
    }

    /// A wake-up ends at `now`; `cpu_ns()` reads the worker thread's CPU
    /// time (called once per trial epoch, see [`Trial::wake_ended`]).
    pub fn wake_ends(&mut self, now: u64, cpu_ns: impl FnOnce() -> u64) {
        self.idle_nap = self.napping && self.answered == self.wake_start;
        if self.naps && self.tried {
            self.trial.wake_ended(now, self.answered, cpu_ns);
        }
    }
}

/// Whether a worker with `in_flight` requests on its connections naps: not
/// in the open model, which sends on time, nor without keep-alive, where
/// ab's connect phase is read from the wake-up that sees a connection open.
fn naps(open_model: bool, keep_alive: bool, in_flight: usize) -> bool {
    !open_model && keep_alive && in_flight >= MIN_IN_FLIGHT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(naps: bool) -> Pace {
        Pace::with(TICK_NS, naps).unwrap()
    }

    #[test]
    fn only_closed_keep_alive_runs_with_many_in_flight_nap() {
        assert!(naps(false, true, 50));
        assert!(naps(false, true, 2 * 16));
        assert!(!naps(false, true, 20));
        assert!(!naps(true, true, 5000));
        assert!(!naps(false, false, 5000));
    }

    #[test]
    fn a_nap_lasts_a_quarter_of_the_latest_latency_within_bounds() {
        let mut p = pace(true);
        assert_eq!(p.nap_ns(), Some(NAP_MIN_NS), "no latency yet");
        p.answered(400_000);
        assert_eq!(p.nap_ns(), Some(100_000));
        p.answered(8_000_000);
        assert_eq!(p.nap_ns(), Some(NAP_MAX_NS), "capped");
        p.answered(1_000);
        assert_eq!(p.nap_ns(), Some(NAP_MIN_NS), "floored");
    }

    #[test]
    fn a_nap_that_answered_nothing_is_followed_by_a_plain_wait() {
        let mut p = pace(true);
        p.wake_begins(true);
        p.wake_ends(1, || 0);
        assert_eq!(
            p.nap_ns(),
            None,
            "nothing came: do not poll a stalled server"
        );
        p.wake_begins(false);
        p.answered(400_000);
        p.wake_ends(1, || 0);
        assert_eq!(p.nap_ns(), Some(100_000));
        p.wake_begins(true);
        p.answered(400_000);
        p.wake_ends(1, || 0);
        assert_eq!(p.nap_ns(), Some(100_000), "a nap that answered: nap again");
        p.wake_begins(false);
        p.wake_ends(1, || 0);
        assert_eq!(
            p.nap_ns(),
            Some(100_000),
            "a plain wait answering nothing (the ticker) changes nothing"
        );
    }

    #[test]
    fn a_worker_that_does_not_nap_never_does() {
        let mut p = pace(false);
        p.wake_begins(false);
        p.answered(400_000);
        p.wake_ends(1, || 0);
        assert!(!p.naps());
        assert_eq!(p.nap_ns(), None);
    }
}
