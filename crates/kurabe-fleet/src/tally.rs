//! A run's [`Stats`] (HDR histograms and counters) to and from what a worker
//! stores: each histogram in the HdrHistogram V2 encoding (the format every
//! HdrHistogram implementation reads: bucket counts, not percentiles) and the
//! counters ([`Counters`]) as JSON, with several request names each name's
//! latency histogram beside them (V2, base64: [`StoredCounters`]).
//! Decoding then [`Stats::merge`] is lossless: the merged histogram holds
//! exactly the counts of the union of all recorded values, per name too.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use kurabe_model::load_stats::Stats;

use crate::FleetError;

/// The counters of a [`Stats`], stored as they are in `fleet_results.counters`
/// (kurabe-model's one counters type; rows of older workers read the same).
pub use kurabe_model::counters::Counters;

/// What a worker stores in `fleet_results.counters`: the [`Counters`]
/// and, with several request names, each name's latency histogram (V2,
/// base64, in the order of `counters.names`; absent in older rows, which
/// had one name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredCounters {
    /// The counters, their fields at the top level as before.
    pub counters: Counters,
    /// Per-name latency histograms, V2 then base64 (key `name_latency_v2`).
    pub name_latency_v2: Vec<String>,
}

/// The key of [`StoredCounters::name_latency_v2`] beside the counters' own.
const NAME_LATENCY: &str = "name_latency_v2";

impl StoredCounters {
    /// The stored JSON: the counters' object, plus the histograms' key when
    /// there are any. (Not serde's `flatten`: it cannot read the status
    /// maps' numeric keys back.)
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut v = serde_json::to_value(&self.counters)?;
        if let (Some(o), false) = (v.as_object_mut(), self.name_latency_v2.is_empty()) {
            o.insert(NAME_LATENCY.to_owned(), self.name_latency_v2.clone().into());
        }
        serde_json::to_string(&v)
    }

    /// Read what [`StoredCounters::to_json`] wrote (or an older row).
    pub fn from_json(text: &str) -> Result<StoredCounters, serde_json::Error> {
        let mut v: serde_json::Value = serde_json::from_str(text)?;
        let names = v.as_object_mut().and_then(|o| o.remove(NAME_LATENCY));
        Ok(StoredCounters {
            counters: serde_json::from_value(v)?,
            name_latency_v2: match names {
                Some(n) => serde_json::from_value(n)?,
                None => Vec::new(),
            },
        })
    }
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
pub fn encode(stats: &Stats) -> Result<(EncodedHistograms, StoredCounters), FleetError> {
    let hists = EncodedHistograms {
        total: encode_one(&stats.total)?,
        connect: encode_one(&stats.connect)?,
        processing: encode_one(&stats.processing)?,
        waiting: encode_one(&stats.waiting)?,
        uncorrected: encode_one(&stats.uncorrected)?,
    };
    let name_latency_v2 = stats
        .name_latency
        .iter()
        .map(|h| encode_one(h).map(|b| STANDARD.encode(b)))
        .collect::<Result<_, _>>()?;
    let stored = StoredCounters {
        counters: stats.counters.clone(),
        name_latency_v2,
    };
    Ok((hists, stored))
}

/// Rebuild a [`Stats`] from what a worker stored.
pub fn decode(hists: &EncodedHistograms, stored: &StoredCounters) -> Result<Stats, FleetError> {
    let mut s = Stats::new();
    s.total = decode_one(&hists.total)?;
    s.connect = decode_one(&hists.connect)?;
    s.processing = decode_one(&hists.processing)?;
    s.waiting = decode_one(&hists.waiting)?;
    s.uncorrected = decode_one(&hists.uncorrected)?;
    s.counters = stored.counters.clone();
    s.name_latency = stored
        .name_latency_v2
        .iter()
        .map(|b64| {
            let bytes = STANDARD
                .decode(b64)
                .map_err(|e| FleetError::Histogram(format!("a name's histogram: {e}")))?;
            let mut h = decode_one(&bytes)?;
            // Merging grows it to the other workers' largest value.
            h.auto(true);
            Ok(h)
        })
        .collect::<Result<_, FleetError>>()?;
    if s.name_latency.len() != s.counters.names.len() {
        return Err(FleetError::Histogram(format!(
            "{} name histograms for {} names",
            s.name_latency.len(),
            s.counters.names.len()
        )));
    }
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
        let mut json: serde_json::Value = serde_json::from_str(&c.to_json().unwrap()).unwrap();
        json["failures"].as_object_mut().unwrap().remove("write");
        let old = StoredCounters::from_json(&json.to_string()).unwrap();
        assert!(old.name_latency_v2.is_empty());
        let back = decode(&h, &old).unwrap();
        assert_eq!(
            (back.counters.failures.write, back.counters.failures.timeout),
            (0, 1)
        );
    }

    #[test]
    fn per_name_histograms_travel_and_merge_exactly() {
        let names = ["a".to_owned(), "b".to_owned()];
        let feed = |values: &[u64]| {
            let mut s = Stats::new();
            s.counters.names = names
                .iter()
                .map(|n| kurabe_model::counters::NameCounts::new(n))
                .collect();
            s.name_latency = names.iter().map(|_| Stats::new().total).collect();
            for (i, &v) in values.iter().enumerate() {
                s.counters.names[i % 2].answered(200, 1);
                s.name_latency[i % 2].record(v).unwrap();
            }
            s
        };
        let a: Vec<u64> = (1..3000).map(|i| i * 37 % 70_000 + 1).collect();
        let b: Vec<u64> = (1..900).map(|i| i * 911 % 5_000 + 1).collect();
        let mut merged = Stats::new();
        for part in [&a, &b] {
            let (h, c) = encode(&feed(part)).unwrap();
            let back = StoredCounters::from_json(&c.to_json().unwrap()).unwrap();
            merged.merge(&decode(&h, &back).unwrap());
        }
        let mut union = Stats::new();
        union.merge(&feed(&a));
        union.merge(&feed(&b));
        assert_eq!(merged.name_latency, union.name_latency);
        assert_eq!(merged.counters.names, union.counters.names);
        // Older coordinators read the row as plain counters.
        let (_, c) = encode(&feed(&a)).unwrap();
        let plain: Counters = serde_json::from_str(&c.to_json().unwrap()).unwrap();
        assert_eq!(plain.names.len(), 2);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_one(b"not a histogram").is_err());
    }
}
