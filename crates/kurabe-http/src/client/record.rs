//! Accounting of one complete response into a worker's [`Stats`]: the
//! `-l` length check, status counts, ab's phase histograms, the open model's
//! uncorrected latency and the `-g` line.
//!
//! Owns the arithmetic of "a request finished", whatever the protocol
//! (the HTTP/2 engine uses it). Must not read clocks or sockets: the caller
//! passes the times in.

use std::sync::atomic::Ordering;

use super::gnuplot::GnuplotWriter;
use super::stats::Stats;
use super::worker::{Shared, Slot};

/// What arrived for a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    /// Status code.
    pub status: u16,
    /// Response body bytes.
    pub body_bytes: u64,
    /// When the first byte of the response arrived.
    pub first_byte: u64,
}

/// Count `a` as a complete response to `slot` at `now`. `Err` (with the
/// reason) when `-l` is off and the body length differs from the first
/// response's: the caller counts a `length` failure instead.
pub(crate) fn record(
    sh: &Shared,
    st: &mut Stats,
    gnuplot: Option<&mut GnuplotWriter>,
    slot: &Slot,
    a: Answer,
    now: u64,
) -> Result<(), String> {
    check_length(sh, a.body_bytes)?;
    st.completed += 1;
    st.status[usize::from(a.status.min(999))] += 1;
    if !(200..300).contains(&a.status) {
        st.non_2xx += 1;
    }
    st.body_bytes += a.body_bytes;
    let origin = if slot.intended != 0 {
        slot.intended
    } else {
        slot.start
    };
    let total = (now.saturating_sub(origin) / 1000).max(1);
    let connect = slot.connect_ns / 1000;
    let sent = if slot.sent == 0 {
        slot.start
    } else {
        slot.sent
    };
    let wait = a.first_byte.max(sent).saturating_sub(sent) / 1000;
    let _ = st.total.record(total);
    let _ = st.connect.record(connect);
    let _ = st.processing.record(total.saturating_sub(connect));
    let _ = st.waiting.record(wait);
    if slot.intended != 0 {
        let _ = st
            .uncorrected
            .record((now.saturating_sub(sent) / 1000).max(1));
    }
    if let Some(g) = gnuplot {
        let start_us = sh.start_unix_us + origin.saturating_sub(sh.start_ns) / 1000;
        g.line(
            start_us,
            connect,
            total.saturating_sub(connect),
            total,
            wait,
        );
    }
    Ok(())
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
    if sh.check_length && doc != body {
        return Err(format!(
            "a body of {body} bytes where the first response had {doc} (-l accepts varying lengths)"
        ));
    }
    Ok(())
}
