//! `kurabe run --dry-run PLAN`: the schedule a run would follow, as data
//! (`kurabe_report::progress::dry_run_text` words it).
//!
//! The order comes from [`crate::schedule`] (the runner's own seeded
//! interleaving); without a seed one is drawn here, and `--seed S`
//! reproduces it in the real run.
//!
//! Owns the schedule and its estimated duration. Must not run anything.

use std::time::Duration;

use crate::schedule::{estimate, schedule};
use kurabe_model::plan::Plan;
use kurabe_model::progress::DryRun;

/// The plan's schedule and what its duration is known to be; `repeat`
/// and `seed` (`--repeat`, `--seed`) override the plan's, as in a run.
pub fn dry_run(plan: &Plan, repeat: Option<u32>, seed: Option<u64>) -> DryRun {
    let rounds = repeat.unwrap_or(plan.repeat).max(1);
    let seed = seed
        .or(plan.seed)
        .unwrap_or_else(crate::runner::default_seed);
    let variants = plan.resolved_variants().len();
    let mut known = Duration::ZERO;
    let mut unknown = Vec::new();
    for w in &plan.workloads {
        match estimate(plan, w) {
            Some(d) => known += d * (variants as u32) * rounds,
            None => unknown.push(w.name.clone()),
        }
    }
    DryRun {
        plan: plan.name.clone(),
        variants,
        workloads: plan.workloads.len(),
        rounds,
        seed,
        runs: schedule(plan, rounds, seed),
        known,
        unknown,
        has_target: plan.target.is_some(),
    }
}
