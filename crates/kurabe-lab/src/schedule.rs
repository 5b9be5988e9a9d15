//! What `kurabe run --dry-run` shows: the runs a plan would make, in the
//! runner's order, and how long their fixed-length parts take.
//!
//! Owns [`schedule`] (the same seeded interleaving [`crate::run_experiment`]
//! follows, so a dry run shows exactly the order a real run with the same
//! seed takes) and [`estimate`] (the part of a run's length the plan fixes:
//! an http workload's `duration` and warm-up, a watch's `duration`, an idle
//! settle time). Must not run anything or print.

use std::time::Duration;

use kurabe_model::plan::{Plan, Workload, WorkloadKind};
use kurabe_model::stats::randomized_blocks;

use crate::measure::{DEFAULT_HTTP_DURATION, DEFAULT_SETTLE};

pub use kurabe_model::progress::ScheduledRun;

/// The runs of `rounds` rounds of `plan` with run-order `seed`, in order.
pub fn schedule(plan: &Plan, rounds: u32, seed: u64) -> Vec<ScheduledRun> {
    let variants = plan.resolved_variants();
    let orders = randomized_blocks(variants.len(), rounds as usize, seed);
    let mut out = Vec::new();
    for (round, order) in orders.iter().enumerate() {
        for w in &plan.workloads {
            for &vi in order {
                out.push(ScheduledRun {
                    round: round as u32,
                    variant: variants[vi].name.clone(),
                    workload: w.name.clone(),
                });
            }
        }
    }
    out
}

/// The fixed-length part of one run of `w` (`None` when its length depends
/// on the system under test: a number of requests, a command, a benchmark).
pub fn estimate(plan: &Plan, w: &Workload) -> Option<Duration> {
    match &w.kind {
        WorkloadKind::Http(h) => {
            let warmup = h.warmup.or(plan.warmup).map_or(Duration::ZERO, |d| d.0);
            let measured = match (h.soak, h.duration, h.requests) {
                (Some(s), _, _) => s.0,
                (None, Some(d), _) => d.0,
                (None, None, Some(_)) => return None,
                (None, None, None) => DEFAULT_HTTP_DURATION,
            };
            Some(warmup + measured)
        }
        WorkloadKind::Watch(wt) => Some(wt.duration.0 + wt.warmup.map_or(Duration::ZERO, |d| d.0)),
        WorkloadKind::Idle(i) => Some(i.settle.map_or(DEFAULT_SETTLE, |d| d.0)),
        WorkloadKind::Command(_) | WorkloadKind::System(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        crate::parse_plan(
            r#"
name = "p"
[[variant]]
name = "a"
url = "http://127.0.0.2:1"
[[variant]]
name = "b"
url = "https://example.com"
[[workload]]
name = "w"
http = { duration = "10s", warmup = "2s" }
[[workload]]
name = "n"
http = { requests = 100 }
"#,
            "p.toml",
        )
        .unwrap()
    }

    #[test]
    fn schedule_follows_the_runners_rounds() {
        let p = plan();
        let s = schedule(&p, 3, 7);
        assert_eq!(s.len(), 2 * 2 * 3);
        let orders = randomized_blocks(2, 3, 7);
        for (round, order) in orders.iter().enumerate() {
            let first = &s[round * 4];
            assert_eq!(first.round, round as u32);
            assert_eq!(first.workload, "w");
            assert_eq!(first.variant, ["a", "b"][order[0]]);
        }
    }

    #[test]
    fn only_fixed_lengths_are_estimated() {
        let p = plan();
        assert_eq!(estimate(&p, &p.workloads[0]), Some(Duration::from_secs(12)));
        assert_eq!(estimate(&p, &p.workloads[1]), None);
    }
}
