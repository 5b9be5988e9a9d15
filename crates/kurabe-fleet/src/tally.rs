//! A run's [`Stats`] (HDR histograms and counters) to and from what a worker
//! stores: each histogram in the HdrHistogram V2 encoding (the format every
//! HdrHistogram implementation reads: bucket counts, not percentiles) and the
//! counters as JSON. Decoding then [`Stats::merge`] is lossless: the merged
//! histogram holds exactly the counts of the union of all recorded values.

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use kurabe_http::client::Stats;
use kurabe_model::http::Failures;
use serde::{Deserialize, Serialize};

use crate::FleetError;

/// The counters of a [`Stats`], as stored in `fleet_results.counters`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Completed responses.
    pub completed: u64,
    /// Failures by kind.
    pub failures: Failures,
    /// The first error text of each failure kind (absent in rows of older workers).
    #[serde(default)]
    pub first_errors: BTreeMap<String, String>,
    /// Non-2xx responses.
    pub non_2xx: u64,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    /// Bytes received.
    pub transfer_bytes: u64,
    /// Response body bytes.
    pub body_bytes: u64,
    /// Request body bytes sent.
    pub sent_body_bytes: u64,
    /// Requests written.
    pub sent_requests: u64,
    /// Late sends (open model).
    pub late_sends: u64,
    /// Unanswered at the end.
    pub in_flight_at_end: u64,
    /// Replaced connections.
    pub reconnects: u64,
    /// Responses on reused connections (absent in rows of older workers).
    #[serde(default)]
    pub keep_alive_requests: u64,
    /// HTTP/2 connections ended by GOAWAY (absent in rows of older workers).
    #[serde(default)]
    pub goaways: u64,
    /// HTTP/2 streams reset by the server, by error code (likewise).
    #[serde(default)]
    pub stream_resets: BTreeMap<String, u64>,
}

/// The five histograms of a [`Stats`], V2-encoded, in a fixed order.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedHistograms {
    /// Request latency.
    pub total: Vec<u8>,
    /// Connect phase.
    pub connect: Vec<u8>,
    /// Processing phase.
    pub processing: Vec<u8>,
    /// Waiting phase.
    pub waiting: Vec<u8>,
    /// Uncorrected latency (open model).
    pub uncorrected: Vec<u8>,
}

fn encode_one(h: &Histogram<u64>) -> Result<Vec<u8>, FleetError> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .map_err(|e| FleetError::Histogram(format!("{e:?}")))?;
    Ok(out)
}

fn decode_one(bytes: &[u8]) -> Result<Histogram<u64>, FleetError> {
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| FleetError::Histogram(format!("{e:?}")))
}

/// Split `stats` into what a worker stores.
pub fn encode(stats: &Stats) -> Result<(EncodedHistograms, Counters), FleetError> {
    let hists = EncodedHistograms {
        total: encode_one(&stats.total)?,
        connect: encode_one(&stats.connect)?,
        processing: encode_one(&stats.processing)?,
        waiting: encode_one(&stats.waiting)?,
        uncorrected: encode_one(&stats.uncorrected)?,
    };
    let counters = Counters {
        completed: stats.completed,
        failures: stats.failures,
        first_errors: stats.first_errors.clone(),
        non_2xx: stats.non_2xx,
        status: stats
            .status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
            .collect(),
        transfer_bytes: stats.transfer_bytes,
        body_bytes: stats.body_bytes,
        sent_body_bytes: stats.sent_body_bytes,
        sent_requests: stats.sent_requests,
        late_sends: stats.late_sends,
        in_flight_at_end: stats.in_flight_at_end,
        reconnects: stats.reconnects,
        keep_alive_requests: stats.keep_alive_requests,
        goaways: stats.goaways,
        stream_resets: stats.stream_resets.clone(),
    };
    Ok((hists, counters))
}

/// Rebuild a [`Stats`] from what a worker stored.
pub fn decode(hists: &EncodedHistograms, counters: &Counters) -> Result<Stats, FleetError> {
    let mut s = Stats::new();
    s.total = decode_one(&hists.total)?;
    s.connect = decode_one(&hists.connect)?;
    s.processing = decode_one(&hists.processing)?;
    s.waiting = decode_one(&hists.waiting)?;
    s.uncorrected = decode_one(&hists.uncorrected)?;
    s.completed = counters.completed;
    s.failures = counters.failures;
    s.first_errors = counters.first_errors.clone();
    s.non_2xx = counters.non_2xx;
    for (&code, &n) in &counters.status {
        if let Some(slot) = s.status.get_mut(usize::from(code)) {
            *slot = n;
        }
    }
    s.transfer_bytes = counters.transfer_bytes;
    s.body_bytes = counters.body_bytes;
    s.sent_body_bytes = counters.sent_body_bytes;
    s.sent_requests = counters.sent_requests;
    s.late_sends = counters.late_sends;
    s.in_flight_at_end = counters.in_flight_at_end;
    s.reconnects = counters.reconnects;
    s.keep_alive_requests = counters.keep_alive_requests;
    s.goaways = counters.goaways;
    s.stream_resets = counters.stream_resets.clone();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values: &[u64], completed: u64) -> Stats {
        let mut s = Stats::new();
        for &v in values {
            s.total.record(v).unwrap();
            s.connect.record(v / 10 + 1).unwrap();
        }
        s.completed = completed;
        s.status[200] = completed;
        s.failures.timeout = 1;
        s.failures.write = 4;
        s.goaways = 2;
        s.stream_resets.insert("REFUSED_STREAM".into(), 3);
        s.first_errors.insert(
            "timeout".into(),
            "no complete response within 1s (-s)".into(),
        );
        s
    }

    #[test]
    fn round_trip_keeps_every_count() {
        let s = sample(&[1, 7, 1000, 123_456, 3_000_000], 5);
        let (h, c) = encode(&s).unwrap();
        let back = decode(&h, &c).unwrap();
        assert_eq!(back.total, s.total);
        assert_eq!(back.connect, s.connect);
        assert_eq!(back.completed, 5);
        assert_eq!(back.status[200], 5);
        assert_eq!(back.failures.timeout, 1);
        assert_eq!(back.failures.write, 4);
        assert_eq!(back.first_errors, s.first_errors);
        assert_eq!(back.goaways, 2);
        assert_eq!(back.stream_resets, s.stream_resets);
    }

    #[test]
    fn merge_of_decoded_equals_histogram_of_the_union() {
        let a: Vec<u64> = (1..2000).map(|i| i * 37 % 5000 + 1).collect();
        let b: Vec<u64> = (1..500).map(|i| i * 911 % 90_000 + 1).collect();
        let mut merged = Stats::new();
        for part in [&a, &b] {
            let (h, c) = encode(&sample(part, part.len() as u64)).unwrap();
            merged.merge(&decode(&h, &c).unwrap());
        }
        let union = sample(&[a.clone(), b.clone()].concat(), 0).total;
        assert_eq!(merged.total, union);
        for q in [0.5, 0.99, 0.999] {
            assert_eq!(
                merged.total.value_at_quantile(q),
                union.value_at_quantile(q)
            );
        }
        assert_eq!(merged.completed, (a.len() + b.len()) as u64);
        assert_eq!(merged.failures.timeout, 2);
        assert_eq!(merged.failures.write, 8);
        assert_eq!(merged.failures.total(), 10);
    }

    #[test]
    fn rows_of_workers_older_than_the_write_count_decode_with_none() {
        let (h, c) = encode(&sample(&[5], 1)).unwrap();
        let mut json = serde_json::to_value(&c).unwrap();
        json["failures"].as_object_mut().unwrap().remove("write");
        let old: Counters = serde_json::from_value(json).unwrap();
        let back = decode(&h, &old).unwrap();
        assert_eq!((back.failures.write, back.failures.timeout), (0, 1));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_one(b"not a histogram").is_err());
    }
}
