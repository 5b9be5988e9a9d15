//! The live look at a running load (issue 26): each worker's share of what
//! it measured so far, copied when it publishes its progress (every ~50 ms)
//! and only when an observer asked for snapshots; the entry's watch thread
//! merges the shares into one [`Snapshot`](crate::load::Snapshot).
//!
//! Owns the shares and their merge. Must not be touched per request, and
//! must never make a worker wait: a worker only `try_lock`s its share, and
//! a share the watch thread is reading is skipped until the next
//! publication (its figures are then ≤ 100 ms old instead of ≤ 50 ms).

use std::sync::Mutex;

use hdrhistogram::Histogram;
use kurabe_model::counters::Counters;

use kurabe_model::load_stats::Stats;

/// One worker's latest published figures.
struct Share {
    latency: Histogram<u64>,
    name_latency: Vec<Histogram<u64>>,
    counters: Counters,
    in_flight: u64,
}

/// The shares of every worker of one run, by worker index.
pub(crate) struct Live {
    shares: Box<[Mutex<Option<Share>>]>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("shares", &self.shares.len())
            .finish()
    }
}

impl Live {
    /// Room for `workers` shares (worker indexes `0..workers`).
    pub(crate) fn new(workers: u32) -> Live {
        Live {
            shares: (0..workers.max(1)).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Worker `index` publishes `stats` and its requests in flight; skipped
    /// (never waited for) while the watch thread reads that share, except
    /// the `last` publication, which must not be lost.
    pub(crate) fn publish(&self, index: u64, stats: &Stats, in_flight: u64, last: bool) {
        let Some(slot) = self.shares.get(index as usize) else {
            return;
        };
        let slot = match last {
            true => slot.lock().map_err(|_| ()),
            false => slot.try_lock().map_err(|_| ()),
        };
        let Ok(mut slot) = slot else {
            return;
        };
        match &mut *slot {
            Some(s) => {
                s.latency.reset();
                // Same bounds on both sides: adding cannot fail.
                let _ = s.latency.add(&stats.total);
                s.name_latency.clone_from(&stats.name_latency);
                s.counters.clone_from(&stats.counters);
                s.in_flight = in_flight;
            }
            None => {
                *slot = Some(Share {
                    latency: stats.total.clone(),
                    name_latency: stats.name_latency.clone(),
                    counters: stats.counters.clone(),
                    in_flight,
                })
            }
        }
    }

    /// Every share merged into `latency`, each name's latency into `names`
    /// (by the index of `counters.names`) and `counters` (all reset
    /// first); returns the requests in flight, summed.
    pub(crate) fn merge_into(
        &self,
        latency: &mut Histogram<u64>,
        names: &mut Vec<Histogram<u64>>,
        counters: &mut Counters,
    ) -> u64 {
        latency.reset();
        names.iter_mut().for_each(Histogram::reset);
        *counters = Counters::default();
        let mut in_flight = 0;
        for slot in self.shares.iter() {
            let Ok(slot) = slot.lock() else { continue };
            if let Some(s) = &*slot {
                let _ = latency.add(&s.latency);
                counters.merge(&s.counters);
                merge_names(names, counters, &s.name_latency, &s.counters);
                in_flight += s.in_flight;
            }
        }
        in_flight
    }
}

/// Add a share's per-name histograms into `into`, by name: `into` is
/// indexed by `merged.names` (which already counts the share's rows).
fn merge_names(
    into: &mut Vec<Histogram<u64>>,
    merged: &Counters,
    share: &[Histogram<u64>],
    share_counts: &Counters,
) {
    for (row, h) in share_counts.names.iter().zip(share) {
        let Some(j) = merged.names.iter().position(|r| r.name == row.name) else {
            continue;
        };
        while into.len() <= j {
            into.push(kurabe_model::load_stats::name_histogram());
        }
        // Auto-resizing histograms: adding cannot fail on bounds.
        let _ = into[j].add(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_merge_and_a_later_publication_replaces_the_earlier() {
        let live = Live::new(2);
        let mut a = Stats::new();
        a.total.record(100).unwrap();
        a.counters.completed = 1;
        live.publish(0, &a, 3, false);
        a.total.record(200).unwrap();
        a.counters.completed = 2;
        live.publish(0, &a, 1, false);
        let mut b = Stats::new();
        b.total.record(300).unwrap();
        b.counters.completed = 1;
        b.counters.status.count(503);
        live.publish(1, &b, 2, true);
        live.publish(7, &b, 2, false); // no such worker: ignored

        let mut h = Stats::new().total;
        let mut c = Counters::default();
        let in_flight = live.merge_into(&mut h, &mut Vec::new(), &mut c);
        assert_eq!((in_flight, h.len(), c.completed), (3, 3, 3));
        assert_eq!(c.status.get(503), 1);
        assert_eq!(h.max(), 300);
    }

    #[test]
    fn a_share_being_read_is_skipped_not_waited_for() {
        let live = Live::new(1);
        let mut a = Stats::new();
        a.counters.completed = 1;
        live.publish(0, &a, 0, false);
        let held = live.shares[0].lock().unwrap();
        a.counters.completed = 5;
        live.publish(0, &a, 0, false); // returns at once
        drop(held);
        let (mut h, mut c) = (Stats::new().total, Counters::default());
        live.merge_into(&mut h, &mut Vec::new(), &mut c);
        assert_eq!(c.completed, 1);
    }
}
