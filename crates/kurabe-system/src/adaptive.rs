//! A precision-driven run at one copy count: passes go where
//! [`precision::next`] says until it says stop.
//!
//! Owns the bookkeeping between the pure allocator and the real passes:
//! each test's samples, wall time spent and failure, and the stop reason
//! written into the report. Must not: decide anything itself (that is
//! [`precision`]) or print.

use std::time::Instant;

use kurabe_model::system::{PrecisionRule, SystemRun};

use crate::precision::{self, Next, TestState};
use crate::score::{self, PassSample};
use crate::{run_pass, test_result, PassCtx, PassOutcome, Progress, TestId};

/// One test's passes so far.
struct Track {
    id: TestId,
    samples: Vec<PassSample>,
    spent_s: f64,
    error: Option<String>,
    /// Wall seconds a pass is expected to take before one has run.
    first_guess_s: f64,
}

impl Track {
    fn state(&self) -> TestState {
        let c = score::combine(&self.samples, self.id.spec().timebase);
        let n = self.samples.len() as u32;
        TestState {
            passes: n,
            spread: c.log_spread,
            pass_cost_s: if n == 0 {
                self.first_guess_s
            } else {
                self.spent_s / f64::from(n)
            },
            spent_s: self.spent_s,
            failed: self.error.is_some() || (n > 0 && c.failed()),
        }
    }
}

/// Run passes until the rule is met or the time is up. False when
/// interrupted (tests with at least one pass are kept).
pub(crate) fn run(
    ctx: &PassCtx<'_>,
    rule: PrecisionRule,
    progress: &mut dyn FnMut(Progress<'_>),
) -> (SystemRun, bool) {
    let prule = rule_for(rule, ctx.jobs.len());
    let mut tracks = new_tracks(ctx);
    let start = Instant::now();
    let mut finished = true;
    loop {
        let states: Vec<TestState> = tracks.iter().map(Track::state).collect();
        let Next::Pass(k) = precision::next(&states, &prule, start.elapsed().as_secs_f64()) else {
            break;
        };
        let pass = tracks[k].samples.len() as u32 + 1;
        match run_pass(ctx, k, pass, 0, progress) {
            PassOutcome::Done(s, wall) => {
                tracks[k].samples.push(s);
                tracks[k].spent_s += wall;
            }
            PassOutcome::Failed(m) => tracks[k].error = Some(m),
            PassOutcome::Interrupted => {
                finished = false;
                break;
            }
        }
    }
    (to_run(ctx.copies, &tracks, &prule, finished), finished)
}

/// The precision rule as the scheduler reads it, for `tests` tests.
fn rule_for(rule: PrecisionRule, tests: usize) -> precision::Rule {
    precision::Rule {
        target: rule.target,
        max_time_s: rule.max_time_s,
        test_budget_s: precision::test_budget_s(rule.max_time_s, tests),
        min_passes: precision::MIN_PASSES,
    }
}

/// One empty track per test of the pass context.
fn new_tracks(ctx: &PassCtx<'_>) -> Vec<Track> {
    ctx.jobs
        .iter()
        .map(|(id, _)| Track {
            id: *id,
            samples: Vec::new(),
            spent_s: 0.0,
            error: None,
            first_guess_s: first_guess_s(ctx, *id),
        })
        .collect()
}

fn first_guess_s(ctx: &PassCtx<'_>, id: TestId) -> f64 {
    let secs = ctx.profile.secs(id.spec());
    match id {
        TestId::Fstime | TestId::Fsbuffer | TestId::Fsdisk => secs + 2.0 * ctx.profile.fs_rw_s,
        _ => secs,
    }
}

fn to_run(copies: u32, tracks: &[Track], rule: &precision::Rule, finished: bool) -> SystemRun {
    let mut run = crate::empty_run(copies);
    for t in tracks {
        if !finished && t.samples.is_empty() && t.error.is_none() {
            continue; // never started before Ctrl-C
        }
        let mut r = test_result(t.id.spec(), &t.samples, t.error.clone());
        r.stop = precision::stop_reason(&t.state(), rule).map(|s| s.as_str().to_string());
        run.tests.push(r);
    }
    run
}
