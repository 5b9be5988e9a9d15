//! `kurabe run --dry-run PLAN`: the schedule a run would follow, as text.
//!
//! The order comes from [`crate::schedule`] (the runner's own seeded
//! interleaving); without a seed one is drawn here and shown, and
//! `--seed S` reproduces it in the real run.
//!
//! Owns the schedule's text. Must not run anything.

use std::fmt::Write as _;
use std::time::Duration;

use crate::schedule::{estimate, schedule};
use kurabe_model::plan::Plan;

/// The plan's schedule and estimated duration as lines of text.
pub fn render(plan: &Plan, rounds: u32, seed: Option<u64>) -> String {
    let seed = seed.unwrap_or_else(crate::runner::default_seed);
    let variants = plan.resolved_variants();
    let runs = schedule(plan, rounds, seed);
    let mut s = headline(plan, variants.len(), rounds, runs.len(), seed);
    let mut current = None;
    for r in &runs {
        if current != Some(r.round) {
            current = Some(r.round);
            let _ = write!(s, "\nround {}:", r.round + 1);
        }
        let _ = write!(s, "\n  {} / {}", r.variant, r.workload);
    }
    s.push('\n');
    let _ = writeln!(s, "\n{}", duration_line(plan, variants.len(), rounds));
    s
}

/// "plan `p` is valid: 2 variants × 1 workload × 3 rounds = 6 runs (seed …)".
fn headline(plan: &Plan, variants: usize, rounds: u32, runs: usize, seed: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "plan `{}` is valid: {} variant{} × {} workload{} × {rounds} round{} = {} runs (seed {seed}; pass --seed {seed} to run this order)",
        plan.name,
        variants,
        plural(variants),
        plan.workloads.len(),
        plural(plan.workloads.len()),
        plural(rounds as usize),
        runs
    );
    s
}

/// "estimated duration: 2m 10s …", saying which parts it cannot know.
fn duration_line(plan: &Plan, variants: usize, rounds: u32) -> String {
    let mut known = Duration::ZERO;
    let mut unknown = Vec::new();
    for w in &plan.workloads {
        match estimate(plan, w) {
            Some(d) => known += d * (variants as u32) * rounds,
            None => unknown.push(w.name.as_str()),
        }
    }
    let mut line = format!("estimated duration: at least {}", human(known));
    if !unknown.is_empty() {
        let _ = write!(
            line,
            ", plus the time of workload{} {} (a number of requests or executions)",
            plural(unknown.len()),
            unknown.join(", ")
        );
    }
    if plan.target.is_some() {
        line.push_str(", plus the target's start and stop for each run");
    }
    line
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, s % 3600 / 60),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_secs(130)), "2m 10s");
        assert_eq!(human(Duration::from_secs(7260)), "2h 1m");
    }
}
