//! The turn loop every worker runs, whatever the protocol: read the clock,
//! start the measured phase, stop, restart connections, send what is due,
//! scan deadlines, publish progress, wait for I/O (napping as the pace
//! says); then, once stopped, the drain and the close.
//!
//! Owns the order of those steps, how often the periodic ones run and the
//! stop path. Must not know about sockets or protocols: each worker
//! implements [`Connections`], and the loop is generic over it.

use std::io;

use super::connections::Connections;
use super::sys;
use crate::client::schedule::pace::{NAP_MIN_NS, TICK_NS};
use kurabe_model::load_stats::Stats;

/// How often the progress counters are published.
pub(crate) const PROGRESS_NS: u64 = 50_000_000;
/// Longest wait after the stop for answers to requests already sent.
const DRAIN_NS: u64 = 2_000_000_000;
/// The same wait when the caller stopped the run (a signal): kurabe must
/// be gone within a second of a Ctrl-C, report included (issue 38).
const STOPPED_DRAIN_NS: u64 = 300_000_000;

/// Drive `w`'s connections until the stop condition, drain, close; return
/// what was measured. `Err`: the worker could not start (before any request).
pub(crate) fn run<'a, P: Connections<'a>>(mut w: P) -> io::Result<Stats> {
    let open_model = w.core().sh.load.arrival.is_open();
    w.begin(open_model)?;
    if w.core().pace.naps() {
        // A nap of 20 µs must not last the default 50 µs of slack more.
        sys::timer_slack(NAP_MIN_NS / 4);
    }
    if open_model {
        sys::precise_timers();
    } else {
        let n = w.core().conns as u32;
        w.core_mut().restart.extend(0..n);
    }
    drive(&mut w);
    finish(&mut w);
    Ok(w.into_stats())
}

/// Run turns until the worker stops or finishes.
fn drive<'a, P: Connections<'a>>(w: &mut P) {
    let start = w.core_mut().read_clock();
    let mut next_scan = start + w.core().pace.tick_ns;
    let mut next_progress = start + PROGRESS_NS;
    loop {
        let now = w.core_mut().read_clock();
        w.core_mut().measure_if_due();
        if w.core().meter.due(now) {
            w.core_mut().cut_series();
        }
        if w.core().should_stop() {
            last_sends(w);
            break;
        }
        w.core_mut().wake_connections();
        w.do_restarts();
        w.core_mut().drop_stale();
        w.dispatch_until(now);
        if now >= next_scan {
            w.expire();
            next_scan = now + w.core().pace.tick_ns;
        }
        if now >= next_progress {
            publish(w);
            next_progress = now + PROGRESS_NS;
        }
        if finished(w) {
            break;
        }
        let timeout = w.core().timeout(w.can_take());
        wait(w, timeout);
    }
}

/// The run is stopping by the clock: open model, sends intended before the
/// end that a late wake-up left unsent go out now (late, and counted as
/// late), so the achieved rate is not short by however long the thread
/// overslept; those no connection can take count as dropped, unsent.
fn last_sends<'a, P: Connections<'a>>(w: &mut P) {
    let c = w.core();
    if c.stopped_early() || c.now < c.sh.end_ns || c.schedule.is_none() {
        return;
    }
    let end = c.sh.end_ns;
    w.dispatch_until(end - 1);
    w.core_mut().give_up_due();
}

/// A `-n` run has nothing left to do.
fn finished<'a, P: Connections<'a>>(w: &P) -> bool {
    let c = w.core();
    c.no_more_requests() && c.restart.is_empty() && w.idle()
}

/// Wait for I/O at most `timeout` (None: until the ticker, maybe after a
/// nap) and act on what happened; tell the pace what the wake-up brought.
fn wait<'a, P: Connections<'a>>(w: &mut P, timeout: Option<u64>) {
    let c = w.core_mut();
    let nap = match timeout {
        None if !c.draining => c.pace.nap_ns(),
        _ => None,
    };
    c.pace.wake_begins(nap.is_some());
    w.poll(timeout, nap);
    let c = w.core_mut();
    let now = c.now;
    c.pace.wake_ends(now, sys::thread_cpu_ns);
}

/// Publish the progress (and, for an observer's snapshots, the requests
/// in flight: counted only then, it walks the connections).
fn publish<'a, P: Connections<'a>>(w: &mut P) {
    let in_flight = match w.core().ctl.live {
        Some(_) => w.in_flight_measured(),
        None => 0,
    };
    w.core_mut().publish(in_flight, false);
}

/// Count requests written but unanswered, publish the last progress, let
/// the server answer what it was sent, close everything.
fn finish<'a, P: Connections<'a>>(w: &mut P) {
    let in_flight = w.in_flight_measured();
    let c = w.core_mut();
    c.stats.counters.in_flight_at_end = in_flight;
    c.close_series();
    c.publish(in_flight, true);
    drain(w);
    if let Some(g) = &mut w.core_mut().gnuplot {
        let _ = g.flush();
    }
    w.close_all();
}

/// After the stop: let the server answer what it was sent (responses are
/// read and discarded, nothing more is written), so closing our sockets
/// with unread data cannot reset connections under requests the server
/// has not processed yet, and its own count matches ours.
fn drain<'a, P: Connections<'a>>(w: &mut P) {
    let c = w.core_mut();
    c.draining = true;
    let start = c.now;
    while w.awaiting_answers() {
        let c = w.core_mut();
        let now = c.read_clock();
        // A stop that comes during the drain shortens it too.
        let most = match c.ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            true => STOPPED_DRAIN_NS,
            false => DRAIN_NS,
        };
        let deadline = start + c.sh.timeout_ns.min(most);
        if now >= deadline {
            return;
        }
        wait(w, Some((deadline - now).min(TICK_NS)));
    }
}
