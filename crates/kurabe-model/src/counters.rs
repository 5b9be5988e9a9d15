//! The counters of one HTTP load (everything a run counts besides its
//! latency histograms), one type for all who hold them: the engine's
//! per-thread statistics count into it, a fleet worker stores it as is (JSON
//! in `fleet_results.counters`; rows written before it read the same), and
//! [`Counters::fill_report`] puts it into an [`HttpReport`] under the
//! report's field names.
//!
//! Owns the counters, their exact merge and their stored shape, the whole
//! run's and each request name's ([`NameCounts`], the per-request
//! breakdown). Must not hold histograms or read clocks: a count per
//! request is an add here.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::failures::Failures;
use crate::http::{ErrorBucket, HttpReport};

/// Highest status code counted on its own; larger ones count as this.
const MAX_STATUS: u16 = 999;

/// Counts of complete responses by status code, 0..=999: an array, so
/// counting a response is one add (stored as a map of the codes seen).
#[derive(Clone, PartialEq, Eq)]
pub struct StatusCounts(Box<[u64; MAX_STATUS as usize + 1]>);

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts(Box::new([0; MAX_STATUS as usize + 1]))
    }
}

impl StatusCounts {
    /// Count one response with status `code` (above 999: as 999).
    #[inline]
    pub fn count(&mut self, code: u16) {
        self.0[usize::from(code.min(MAX_STATUS))] += 1;
    }

    /// How many responses had status `code`.
    pub fn get(&self, code: u16) -> u64 {
        self.0.get(usize::from(code)).copied().unwrap_or(0)
    }

    /// Set the count of `code` (codes above 999 are ignored).
    pub fn set(&mut self, code: u16, n: u64) {
        if let Some(slot) = self.0.get_mut(usize::from(code)) {
            *slot = n;
        }
    }

    /// (code, count) of every code seen, in code order.
    pub fn seen(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        (0..=MAX_STATUS)
            .zip(self.0.iter().copied())
            .filter(|&(_, n)| n > 0)
    }

    fn merge(&mut self, o: &StatusCounts) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a += b;
        }
    }
}

impl std::fmt::Debug for StatusCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.seen()).finish()
    }
}

impl Serialize for StatusCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.seen())
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<u16, u64>::deserialize(d)?;
        let mut counts = StatusCounts::default();
        for (code, n) in map {
            counts.set(code, n);
        }
        Ok(counts)
    }
}

/// What an HTTP load counted. Merging two is exact: every count adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Responses received completely (any status).
    pub completed: u64,
    /// Failed requests by kind.
    pub failures: Failures,
    /// The first error text of each failure kind that occurred, by kind
    /// name (absent in fleet rows of older workers).
    #[serde(default)]
    pub first_errors: BTreeMap<String, String>,
    /// Complete responses whose status was not 2xx.
    pub non_2xx: u64,
    /// Complete responses by status code.
    pub status: StatusCounts,
    /// Bytes received, heads and bodies.
    pub transfer_bytes: u64,
    /// Response body bytes received.
    pub body_bytes: u64,
    /// Request body bytes sent.
    pub sent_body_bytes: u64,
    /// Requests written (open model: the achieved rate's numerator).
    pub sent_requests: u64,
    /// Open model: sends that left later than scheduled.
    pub late_sends: u64,
    /// Open model: sends given up unsent because no connection could take
    /// them within the request timeout of their intended time, or before
    /// the end of a timed run.
    #[serde(default)]
    pub dropped_sends: u64,
    /// Requests sent but unanswered when the run stopped.
    pub in_flight_at_end: u64,
    /// With keep-alive: connections reopened because the server ended one.
    pub reconnects: u64,
    /// Complete responses on a connection that had answered before (absent
    /// in fleet rows of older workers).
    #[serde(default)]
    pub keep_alive_requests: u64,
    /// HTTP/2: connections that ended with the server's GOAWAY (likewise).
    #[serde(default)]
    pub goaways: u64,
    /// HTTP/2: streams the server reset, by error code name (likewise).
    #[serde(default)]
    pub stream_resets: BTreeMap<String, u64>,
    /// HTTP/3: what QUIC measured over the run's connections (absent
    /// unless HTTP/3 ran).
    #[serde(default, skip_serializing_if = "QuicCounters::is_zero")]
    pub quic: QuicCounters,
    /// The per-request breakdown's counts, one entry per request name in
    /// the run's name order (indexed by the engine's name id); empty when
    /// the run had one name (absent in older rows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<NameCounts>,
}

/// What QUIC measured over an HTTP/3 run's connections, in sums that
/// merge exactly (means are made in [`Counters::fill_report`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicCounters {
    /// Handshakes completed.
    pub handshakes: u64,
    /// Their summed duration, µs.
    pub handshake_us: u64,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets declared lost.
    pub packets_lost: u64,
    /// Connections whose smoothed RTT is summed in `rtt_us`.
    pub rtt_samples: u64,
    /// Their smoothed RTTs, summed, µs.
    pub rtt_us: u64,
}

impl QuicCounters {
    /// Nothing counted (not an HTTP/3 run).
    pub fn is_zero(&self) -> bool {
        *self == QuicCounters::default()
    }

    /// Add `o` into `self`.
    pub fn merge(&mut self, o: &QuicCounters) {
        self.handshakes += o.handshakes;
        self.handshake_us += o.handshake_us;
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.rtt_samples += o.rtt_samples;
        self.rtt_us += o.rtt_us;
    }
}

/// `sum / n`, 0 when `n` is 0.
fn mean(sum: u64, n: u64) -> f64 {
    match n {
        0 => 0.0,
        n => sum as f64 / n as f64,
    }
}

/// What the requests of one name counted (a row of the breakdown).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NameCounts {
    /// The request name.
    pub name: String,
    /// Responses received completely that passed every check.
    pub completed: u64,
    /// Failed requests by kind.
    pub failures: Failures,
    /// Complete responses by status code: (code, count) of the codes seen,
    /// in first-seen order (a few codes: a scan is cheaper than a map).
    #[serde(with = "few_codes")]
    pub status: Vec<(u16, u64)>,
    /// Response body bytes received.
    pub body_bytes: u64,
}

impl NameCounts {
    /// Zero counts for `name`.
    pub fn new(name: &str) -> NameCounts {
        NameCounts {
            name: name.to_owned(),
            ..NameCounts::default()
        }
    }

    /// Count one complete response with status `code` and `body` bytes.
    #[inline]
    pub fn answered(&mut self, code: u16, body: u64) {
        self.completed += 1;
        self.body_bytes += body;
        self.count_status(code, 1);
    }

    #[inline]
    fn count_status(&mut self, code: u16, n: u64) {
        match self.status.iter_mut().find(|(c, _)| *c == code) {
            Some((_, k)) => *k += n,
            None => self.status.push((code, n)),
        }
    }

    /// Responses by status code as the report keys them ("200" → count).
    pub fn status_codes(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for &(code, n) in &self.status {
            *m.entry(code.to_string()).or_default() += n;
        }
        m
    }

    /// Add `o`'s counts (of the same name) into `self`.
    pub fn merge(&mut self, o: &NameCounts) {
        self.completed += o.completed;
        self.body_bytes += o.body_bytes;
        self.failures.merge(&o.failures);
        for &(code, n) in &o.status {
            self.count_status(code, n);
        }
    }
}

/// Merge `other`'s rows into `rows` by name: rows of a name `rows` lacks
/// are appended, so the first-seen order of names is kept.
fn merge_names(rows: &mut Vec<NameCounts>, other: &[NameCounts]) {
    for (i, o) in other.iter().enumerate() {
        // Workers of one run share one name table: the same index, mostly.
        let at = match rows.get(i) {
            Some(r) if r.name == o.name => Some(i),
            _ => rows.iter().position(|r| r.name == o.name),
        };
        match at {
            Some(i) => rows[i].merge(o),
            None => rows.push(o.clone()),
        }
    }
}

/// [`NameCounts::status`] stored as a map of the codes seen, like [`StatusCounts`].
mod few_codes {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(u16, u64)], s: S) -> Result<S::Ok, S::Error> {
        let m: BTreeMap<u16, u64> = v.iter().copied().collect();
        s.collect_map(m)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u16, u64)>, D::Error> {
        Ok(BTreeMap::<u16, u64>::deserialize(d)?.into_iter().collect())
    }
}

impl Counters {
    /// Add `o` into `self`; of two first errors of one kind, `self`'s stays.
    pub fn merge(&mut self, o: &Counters) {
        self.completed += o.completed;
        self.failures.merge(&o.failures);
        for (kind, text) in &o.first_errors {
            self.first_errors
                .entry(kind.clone())
                .or_insert_with(|| text.clone());
        }
        self.non_2xx += o.non_2xx;
        self.status.merge(&o.status);
        self.transfer_bytes += o.transfer_bytes;
        self.body_bytes += o.body_bytes;
        self.sent_body_bytes += o.sent_body_bytes;
        self.sent_requests += o.sent_requests;
        self.late_sends += o.late_sends;
        self.dropped_sends += o.dropped_sends;
        self.in_flight_at_end += o.in_flight_at_end;
        self.reconnects += o.reconnects;
        self.keep_alive_requests += o.keep_alive_requests;
        self.goaways += o.goaways;
        for (code, n) in &o.stream_resets {
            *self.stream_resets.entry(code.clone()).or_default() += n;
        }
        self.quic.merge(&o.quic);
        merge_names(&mut self.names, &o.names);
    }

    /// Responses by status code as the report keys them ("200" → count).
    pub fn status_codes(&self) -> BTreeMap<String, u64> {
        self.status
            .seen()
            .map(|(code, n)| (code.to_string(), n))
            .collect()
    }

    /// One bucket per failure kind with a count, in [`crate::failures::FailureKind::ALL`] order.
    pub fn error_buckets(&self) -> Vec<ErrorBucket> {
        self.failures
            .seen()
            .map(|(kind, count)| ErrorBucket {
                kind: kind.name().to_owned(),
                first_error: self
                    .first_errors
                    .get(kind.name())
                    .cloned()
                    .unwrap_or_else(|| "(no error text recorded)".to_owned()),
                count,
            })
            .collect()
    }

    /// Set the report's counter fields (under the report's names) from
    /// these counts, and the HTTP/2 block's when the report has one. The
    /// figures made from counts and the run's length (req/s, the achieved
    /// rate) are the caller's.
    pub fn fill_report(&self, report: &mut HttpReport) {
        report.complete_requests = self.completed;
        report.failed_requests = self.failures.total();
        report.failures = self.failures;
        report.errors = self.error_buckets();
        report.non_2xx_responses = self.non_2xx;
        report.keep_alive_requests = self.keep_alive_requests;
        report.reconnects = self.reconnects;
        report.status_codes = self.status_codes();
        report.in_flight_at_end = self.in_flight_at_end;
        report.transfer_bytes = self.transfer_bytes;
        report.body_bytes = self.body_bytes;
        report.sent_body_bytes = self.sent_body_bytes;
        if let Some(h) = &mut report.http2 {
            h.goaways = self.goaways;
            h.stream_resets = self.stream_resets.clone();
        }
        if let Some(h) = &mut report.http3 {
            let q = &self.quic;
            h.goaways = self.goaways;
            h.stream_resets = self.stream_resets.clone();
            h.handshakes = q.handshakes;
            h.handshake_mean_us = mean(q.handshake_us, q.handshakes);
            h.packets_sent = q.packets_sent;
            h.packets_lost = q.packets_lost;
            h.rtt_mean_us = mean(q.rtt_us, q.rtt_samples);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_counts_are_stored_as_a_map_of_the_codes_seen() {
        let mut c = Counters::default();
        c.status.count(200);
        c.status.count(200);
        c.status.count(404);
        c.status.count(1200);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json["status"],
            serde_json::json!({"200": 2, "404": 1, "999": 1})
        );
        let back: Counters = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }

    /// A `fleet_results.counters` row as workers before this type wrote it
    /// (kurabe-fleet's own `Counters`, before `write`, `client`,
    /// `first_errors`, `keep_alive_requests`, `goaways`, `stream_resets`).
    const OLD_ROW: &str = r#"{"completed":7,"failures":{"connect":1,"receive":0,"length":0,
        "exceptions":0,"timeout":2},"non_2xx":1,"status":{"200":6,"503":1},
        "transfer_bytes":900,"body_bytes":700,"sent_body_bytes":0,"sent_requests":9,
        "late_sends":0,"in_flight_at_end":0,"reconnects":3}"#;

    #[test]
    fn rows_of_older_fleet_workers_still_read() {
        let c: Counters = serde_json::from_str(OLD_ROW).unwrap();
        assert_eq!(
            (c.completed, c.status.get(200), c.status.get(503)),
            (7, 6, 1)
        );
        assert_eq!((c.failures.timeout, c.failures.write), (2, 0));
        assert_eq!((c.reconnects, c.keep_alive_requests, c.goaways), (3, 0, 0));
    }

    #[test]
    fn merge_adds_every_count_and_keeps_the_first_error() {
        let mut a: Counters = serde_json::from_str(OLD_ROW).unwrap();
        a.first_errors.insert("timeout".into(), "first".into());
        let mut b = a.clone();
        b.first_errors.insert("timeout".into(), "second".into());
        b.stream_resets.insert("CANCEL".into(), 2);
        a.merge(&b);
        assert_eq!(
            (a.completed, a.status.get(200), a.failures.total()),
            (14, 12, 6)
        );
        assert_eq!(a.first_errors["timeout"], "first");
        assert_eq!(a.stream_resets["CANCEL"], 2);
    }

    #[test]
    fn names_merge_by_name_and_keep_first_seen_order() {
        let row = |name: &str, code: u16, n: u64| {
            let mut r = NameCounts::new(name);
            for _ in 0..n {
                r.answered(code, 3);
            }
            r
        };
        let mut a = Counters {
            names: vec![row("a", 200, 2), row("b", 200, 1)],
            ..Counters::default()
        };
        let mut other = Counters {
            names: vec![row("b", 503, 4), row("c", 200, 1)],
            ..Counters::default()
        };
        other.names[0].failures.check = 2;
        a.merge(&other);
        let names: Vec<_> = a.names.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let b = &a.names[1];
        assert_eq!((b.completed, b.body_bytes, b.failures.check), (5, 15, 2));
        assert_eq!(
            b.status_codes(),
            BTreeMap::from([("200".into(), 1), ("503".into(), 4)])
        );
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(
            json["names"][1]["status"],
            serde_json::json!({"200": 1, "503": 4})
        );
        let back: Counters = serde_json::from_value(json).unwrap();
        assert_eq!(back, a);
        // One name: no rows stored, as before the breakdown.
        let plain = serde_json::to_value(Counters::default()).unwrap();
        assert!(plain.get("names").is_none());
    }

    #[test]
    fn the_report_gets_every_counter_under_its_own_name() {
        let c: Counters = serde_json::from_str(OLD_ROW).unwrap();
        let mut r = HttpReport::default();
        c.fill_report(&mut r);
        assert_eq!((r.complete_requests, r.failed_requests), (7, 3));
        assert_eq!((r.non_2xx_responses, r.reconnects), (1, 3));
        assert_eq!(r.status_codes.get("503"), Some(&1));
        assert_eq!((r.transfer_bytes, r.body_bytes), (900, 700));
        assert_eq!(r.errors.len(), 2);
    }

    #[test]
    fn quic_facts_merge_as_sums_and_report_as_means() {
        let one = |hs: u64, rtt: u64| Counters {
            quic: QuicCounters {
                handshakes: hs,
                handshake_us: hs * 1000,
                packets_sent: 100,
                packets_lost: 1,
                rtt_samples: 1,
                rtt_us: rtt,
            },
            ..Counters::default()
        };
        let mut c = one(2, 300);
        c.merge(&one(6, 100));
        let mut r = HttpReport {
            http3: Some(Default::default()),
            ..HttpReport::default()
        };
        c.fill_report(&mut r);
        let h = r.http3.unwrap();
        assert_eq!((h.handshakes, h.packets_sent, h.packets_lost), (8, 200, 2));
        assert_eq!((h.handshake_mean_us, h.rtt_mean_us), (1000.0, 200.0));
        // Not HTTP/3: nothing stored, and old rows read as zero.
        let plain = serde_json::to_value(Counters::default()).unwrap();
        assert!(plain.get("quic").is_none());
        let old: Counters = serde_json::from_str(OLD_ROW).unwrap();
        assert!(old.quic.is_zero());
    }
}
