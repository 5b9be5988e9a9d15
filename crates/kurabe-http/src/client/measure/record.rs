//! Accounting of one complete response into a worker's [`Stats`]: the
//! `-l` length check, status and keep-alive counts, ab's phase histograms, the open model's
//! uncorrected latency, the request name's row of the breakdown and the
//! `-g` line.
//!
//! Owns the arithmetic of "a request finished", whatever the protocol
//! (every protocol's worker counts through it). Must not read clocks or sockets: the caller
//! passes the times in.

use std::sync::atomic::Ordering;

use super::gnuplot::GnuplotWriter;
use crate::client::engine::slot::Slot;
use crate::client::shared::Shared;
use kurabe_model::load_stats::Stats;

/// What arrived for a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    /// Status code.
    pub status: u16,
    /// Response body bytes.
    pub body_bytes: u64,
    /// When the first byte of the response arrived.
    pub first_byte: u64,
    /// The request was not the first on its connection (a keep-alive
    /// request, whatever the protocol).
    pub reused: bool,
}

/// Count `a` as a complete response to `slot` at `now`; its latency, µs.
/// `Err` (with the
/// reason) when `-l` is off and the body length differs from the first
/// response's: the caller counts a `length` failure instead.
pub(crate) fn record(
    sh: &Shared,
    st: &mut Stats,
    gnuplot: Option<&mut GnuplotWriter>,
    slot: &Slot,
    a: Answer,
    now: u64,
) -> Result<u64, String> {
    check_length(sh, a.body_bytes)?;
    st.counters.completed += 1;
    st.counters.keep_alive_requests += u64::from(a.reused);
    st.counters.status.count(a.status);
    if !(200..300).contains(&a.status) {
        st.counters.non_2xx += 1;
    }
    st.counters.body_bytes += a.body_bytes;
    let t = Times::of(slot, a.first_byte, now);
    let _ = st.total.record(t.total);
    let name = usize::from(slot.tag.name);
    if let Some(row) = st.counters.names.get_mut(name) {
        // More than one name: the breakdown's row (an index, no lookup).
        row.answered(a.status, a.body_bytes);
        let _ = st.name_latency[name].record(t.total);
    }
    // 0 is a real value here (no connect on a reused connection, as ab reports it).
    let _ = st.connect.record(t.connect);
    let _ = st.processing.record(t.total.saturating_sub(t.connect));
    let _ = st.waiting.record(t.wait);
    if slot.intended != 0 {
        let _ = st
            .uncorrected
            .record((now.saturating_sub(t.sent) / 1000).max(1));
    }
    if let Some(g) = gnuplot {
        let start_us = sh.start_unix_us + t.origin.saturating_sub(sh.start_ns) / 1000;
        let processing = t.total.saturating_sub(t.connect);
        g.line(start_us, t.connect, processing, t.total, t.wait);
    }
    Ok(t.total)
}

/// One request's times: clock readings (ns) and ab's phases (µs).
struct Times {
    /// Where latency runs from: the intended send (open model) or the start.
    origin: u64,
    /// When the request was written (its start if it never was).
    sent: u64,
    /// µs from `origin` to the complete response, at least 1.
    total: u64,
    /// µs of connecting attributed to this request.
    connect: u64,
    /// µs from the write to the response's first byte.
    wait: u64,
}

impl Times {
    fn of(slot: &Slot, first_byte: u64, now: u64) -> Times {
        let origin = if slot.intended != 0 {
            slot.intended
        } else {
            slot.start
        };
        let sent = if slot.sent == 0 {
            slot.start
        } else {
            slot.sent
        };
        Times {
            origin,
            sent,
            total: (now.saturating_sub(origin) / 1000).max(1),
            connect: slot.connect_ns / 1000,
            wait: first_byte.saturating_sub(sent) / 1000,
        }
    }
}

/// The first body length wins; later ones must match it unless `-l`.
fn check_length(sh: &Shared, body: u64) -> Result<(), String> {
    // A plain load once the first length is known: no locked instruction per response.
    let mut doc = sh.doc_len.load(Ordering::Relaxed);
    if doc == u64::MAX {
        doc =
            match sh
                .doc_len
                .compare_exchange(u64::MAX, body, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => body,
                Err(v) => v,
            };
    }
    if sh.load.check_length && doc != body {
        return Err(format!(
            "a body of {body} bytes where the first response had {doc} (-l accepts varying lengths)"
        ));
    }
    Ok(())
}
