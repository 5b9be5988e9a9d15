//! A run's [`Stats`] (HDR histograms and counters) to and from what a worker
//! stores: each histogram in the HdrHistogram V2 encoding (the format every
//! HdrHistogram implementation reads: bucket counts, not percentiles) and the
//! counters ([`Counters`]) as JSON. Decoding then [`Stats::merge`] is lossless: the merged
//! histogram holds exactly the counts of the union of all recorded values.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use kurabe_http::client::Stats;

use crate::FleetError;

/// The counters of a [`Stats`], stored as they are in `fleet_results.counters`
/// (kurabe-model's one counters type; rows of older workers read the same).
pub use kurabe_model::counters::Counters;

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
    Ok((hists, stats.counters.clone()))
}

/// Rebuild a [`Stats`] from what a worker stored.
pub fn decode(hists: &EncodedHistograms, counters: &Counters) -> Result<Stats, FleetError> {
    let mut s = Stats::new();
    s.total = decode_one(&hists.total)?;
    s.connect = decode_one(&hists.connect)?;
    s.processing = decode_one(&hists.processing)?;
    s.waiting = decode_one(&hists.waiting)?;
    s.uncorrected = decode_one(&hists.uncorrected)?;
    s.counters = counters.clone();
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
        s.counters.completed = completed;
        s.counters.status.set(200, completed);
        s.counters.failures.timeout = 1;
        s.counters.failures.write = 4;
        s.counters.goaways = 2;
        s.counters.stream_resets.insert("REFUSED_STREAM".into(), 3);
        s.counters.first_errors.insert(
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
        assert_eq!(back.counters.completed, 5);
        assert_eq!(back.counters.status.get(200), 5);
        assert_eq!(back.counters.failures.timeout, 1);
        assert_eq!(back.counters.failures.write, 4);
        assert_eq!(back.counters.first_errors, s.counters.first_errors);
        assert_eq!(back.counters.goaways, 2);
        assert_eq!(back.counters.stream_resets, s.counters.stream_resets);
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
        assert_eq!(merged.counters.completed, (a.len() + b.len()) as u64);
        assert_eq!(merged.counters.failures.timeout, 2);
        assert_eq!(merged.counters.failures.write, 8);
        assert_eq!(merged.counters.failures.total(), 10);
    }

    #[test]
    fn rows_of_workers_older_than_the_write_count_decode_with_none() {
        let (h, c) = encode(&sample(&[5], 1)).unwrap();
        let mut json = serde_json::to_value(&c).unwrap();
        json["failures"].as_object_mut().unwrap().remove("write");
        let old: Counters = serde_json::from_value(json).unwrap();
        let back = decode(&h, &old).unwrap();
        assert_eq!(
            (back.counters.failures.write, back.counters.failures.timeout),
            (0, 1)
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_one(b"not a histogram").is_err());
    }
}
