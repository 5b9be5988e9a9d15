//! The precision stopping rule: how precise each test's and the score's 95 %
//! intervals are, which test the next pass goes to, and when to stop.
//!
//! Owns the allocator of a precision-driven run (`kurabe system --precision
//! 2% --max-time 9m`). Every test first gets `min_passes` passes, round
//! robin; after that, while the score's interval is wider than the target,
//! the next pass goes to the test whose next kept pass shrinks the score's
//! interval most per second of pass; once the score is within the target,
//! passes go to tests whose own interval is still wider than the target.
//! A test stops getting passes when its own interval is within the target
//! or its share of the time is spent; the run stops when no test qualifies
//! or the time is up.
//!
//! The interval maths is the scoring's: a test's spread is the variance of
//! its mean log rate over the kept passes ([`score::combine`]), the score's
//! is their mean ([`score::mean_of_logs_spread`]: var(log score) =
//! Σ var(log test)/n², Welch–Satterthwaite degrees of freedom), and the
//! half-width is reported as the report does: (high − low) / 2 / value.
//!
//! Must not: run passes, read clocks or print. Elapsed times are inputs, so
//! the unit tests drive it with fake pass results, exactly and instantly.

use crate::score::{self, LogSpread};

/// Passes every test gets before the allocator chooses: 4, so 3 are kept
/// after the lowest third is dropped — the fewest `kurabe system compare`
/// needs for an interval.
pub const MIN_PASSES: u32 = 4;

/// What the allocator knows about one test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestState {
    /// Passes run so far.
    pub passes: u32,
    /// Spread of the test's mean log rate over its kept passes (`None` below 2 kept).
    pub spread: Option<LogSpread>,
    /// Wall seconds one more pass is expected to take.
    pub pass_cost_s: f64,
    /// Wall seconds this test's passes took so far.
    pub spent_s: f64,
    /// A pass failed: the test gets no more passes and is not in the score.
    pub failed: bool,
}

/// The rule a run follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Target half-width, as a fraction (0.02 = ±2 %).
    pub target: f64,
    /// Time budget of the whole copy count, seconds.
    pub max_time_s: f64,
    /// Time budget of one test, seconds (see [`test_budget_s`]).
    pub test_budget_s: f64,
    /// Passes every test gets before the allocator chooses.
    pub min_passes: u32,
}

/// Why a test got no more passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Its own interval is within the target.
    Target,
    /// Its share of the time is spent.
    Budget,
    /// The run's time is up (or the run stopped before the test got there).
    Time,
}

impl StopReason {
    /// The report's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Target => "target",
            StopReason::Budget => "budget",
            StopReason::Time => "time",
        }
    }
}

/// No test may take more than three times its even share of the time (all
/// of it with three tests or fewer): the noisiest test cannot starve the
/// rest, and time the quiet tests leave unused goes to the noisy ones (a
/// context-switching test whose passes fall in two placements needs ~45
/// kept passes for its part of a ±2 % score).
pub fn test_budget_s(max_time_s: f64, tests: usize) -> f64 {
    max_time_s * (3.0 / tests.max(1) as f64).min(1.0)
}

/// Kept passes out of `n`: the lowest third is dropped, as UnixBench does.
pub fn kept_after(n: u32) -> u32 {
    n - n / 3
}

/// Half-width of the 95 % interval as a fraction of the value:
/// (e^h − e^−h) / 2 with h = t · √var, the report's ±%.
pub fn half_width(s: LogSpread) -> f64 {
    (score::t975(s.df) * s.var_of_mean.sqrt()).sinh()
}

/// The score's spread from the tests that did not fail; `None` while one of
/// them has no spread yet, or when none is left.
pub fn score_spread(tests: &[TestState]) -> Option<LogSpread> {
    let parts: Option<Vec<LogSpread>> = tests
        .iter()
        .filter(|t| !t.failed)
        .map(|t| t.spread)
        .collect();
    score::mean_of_logs_spread(&parts?)
}

/// Each test's share of var(log score), given the spreads of the tests in
/// the score; all `None` while one of them has no spread or all are exact.
pub fn variance_shares(spreads: &[Option<LogSpread>]) -> Vec<Option<f64>> {
    let total: Option<f64> = spreads.iter().map(|s| s.map(|s| s.var_of_mean)).sum();
    spreads
        .iter()
        .map(|s| Some(s.as_ref()?.var_of_mean / total.filter(|&v| v > 0.0)?))
        .collect()
}

/// The tests that limited the score: largest variance shares first, until
/// together they hold at least half of it (at most three).
pub fn limited_by(shares: &[Option<f64>]) -> Vec<usize> {
    let mut order: Vec<(usize, f64)> = shares
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, (*s)?)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    let mut sum = 0.0;
    for (i, s) in order.into_iter().take(3) {
        if sum >= 0.5 {
            break;
        }
        out.push(i);
        sum += s;
    }
    out
}

/// The spread after the next kept pass, and how many passes that takes
/// (1 or 2: a pass that only moves the dropped third adds no kept pass).
fn after_next_kept(t: &TestState) -> Option<(LogSpread, u32)> {
    let s = t.spread?;
    let kept = f64::from(kept_after(t.passes));
    let steps = if kept_after(t.passes + 1) > kept_after(t.passes) {
        1
    } else {
        2
    };
    let var_one = s.var_of_mean * kept; // the sample variance of the log rates
    Some((
        LogSpread {
            var_of_mean: var_one / (kept + 1.0),
            df: kept,
        },
        steps,
    ))
}

/// The next thing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run one pass of the test at this position.
    Pass(usize),
    /// Nothing left worth a pass.
    Stop,
}

fn can_run(t: &TestState, rule: &Rule, elapsed_s: f64) -> bool {
    !t.failed
        && t.spent_s + t.pass_cost_s <= rule.test_budget_s
        && elapsed_s + t.pass_cost_s <= rule.max_time_s
}

/// Choose the next pass. `elapsed_s` is the copy count's wall time so far.
pub fn next(tests: &[TestState], rule: &Rule, elapsed_s: f64) -> Next {
    let open: Vec<usize> = (0..tests.len())
        .filter(|&i| can_run(&tests[i], rule, elapsed_s))
        .collect();
    // Start-up: every test its minimum, round robin (fewest passes first).
    if let Some(&i) = open
        .iter()
        .filter(|&&i| tests[i].passes < rule.min_passes || tests[i].spread.is_none())
        .min_by_key(|&&i| (tests[i].passes, i))
    {
        return Next::Pass(i);
    }
    let score_hw = score_spread(tests).map(half_width);
    let pick = if score_hw.is_some_and(|h| h > rule.target) {
        best(&open, tests, |i, s| {
            let mut with = tests.to_vec();
            with[i].spread = Some(s);
            score_hw.unwrap_or(0.0) - score_spread(&with).map_or(0.0, half_width)
        })
    } else {
        let unsettled: Vec<usize> = open
            .into_iter()
            .filter(|&i| tests[i].spread.is_some_and(|s| half_width(s) > rule.target))
            .collect();
        best(&unsettled, tests, |i, s| {
            tests[i].spread.map_or(0.0, half_width) - half_width(s)
        })
    };
    pick.map_or(Next::Stop, Next::Pass)
}

/// The candidate whose next kept pass gains most per second.
fn best(
    candidates: &[usize],
    tests: &[TestState],
    gain: impl Fn(usize, LogSpread) -> f64,
) -> Option<usize> {
    candidates
        .iter()
        .filter_map(|&i| {
            let (s, steps) = after_next_kept(&tests[i])?;
            let per_s = gain(i, s) / (f64::from(steps) * tests[i].pass_cost_s.max(1e-3));
            Some((i, per_s))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

/// Why a test stopped (for the report); `None` for a failed test.
pub fn stop_reason(t: &TestState, rule: &Rule) -> Option<StopReason> {
    if t.failed {
        return None;
    }
    if t.spread.is_some_and(|s| half_width(s) <= rule.target) {
        return Some(StopReason::Target);
    }
    if t.spent_s + t.pass_cost_s > rule.test_budget_s {
        return Some(StopReason::Budget);
    }
    Some(StopReason::Time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Timebase;
    use crate::score::{combine, PassSample};

    /// A test whose passes alternate around 1000 by ±`rel`, each `cost` s.
    struct Fake {
        rel: f64,
        cost: f64,
        rates: Vec<f64>,
    }

    impl Fake {
        fn new(rel: f64, cost: f64) -> Fake {
            Fake {
                rel,
                cost,
                rates: Vec::new(),
            }
        }
        fn pass(&mut self) {
            // Deterministic spread: +rel, −rel, 0, +rel, … (mean 1000).
            let k = self.rates.len() % 3;
            let f = [1.0 + self.rel, 1.0 - self.rel, 1.0][k];
            self.rates.push(1000.0 * f);
        }
        fn state(&self) -> TestState {
            let passes: Vec<PassSample> = self
                .rates
                .iter()
                .map(|&r| PassSample {
                    count: r,
                    time_s: 1.0,
                })
                .collect();
            TestState {
                passes: self.rates.len() as u32,
                spread: combine(&passes, Timebase::PerSeconds(1)).log_spread,
                pass_cost_s: self.cost,
                spent_s: self.cost * self.rates.len() as f64,
                failed: false,
            }
        }
    }

    fn rule(target: f64, max: f64, n: usize) -> Rule {
        Rule {
            target,
            max_time_s: max,
            test_budget_s: test_budget_s(max, n),
            min_passes: 3,
        }
    }

    /// Drive `next` to the end; returns (passes per test, elapsed).
    fn drive(fakes: &mut [Fake], rule: &Rule) -> (Vec<u32>, f64) {
        let mut elapsed = 0.0;
        loop {
            let states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
            match next(&states, rule, elapsed) {
                Next::Pass(i) => {
                    fakes[i].pass();
                    elapsed += fakes[i].cost;
                }
                Next::Stop => break,
            }
        }
        (
            fakes.iter().map(|f| f.rates.len() as u32).collect(),
            elapsed,
        )
    }

    #[test]
    fn kept_passes_drop_the_lowest_third() {
        assert_eq!(
            (1..=9).map(kept_after).collect::<Vec<_>>(),
            [1, 2, 2, 3, 4, 4, 5, 6, 6]
        );
    }

    #[test]
    fn half_width_matches_the_reports_interval() {
        let s = LogSpread {
            var_of_mean: 0.0004,
            df: 9.0,
        };
        let (lo, hi) = s.ci95(100.0);
        assert!((half_width(s) - (hi - lo) / 2.0 / 100.0).abs() < 1e-12);
    }

    #[test]
    fn startup_is_round_robin_to_the_minimum() {
        let mut fakes = [Fake::new(0.01, 1.0), Fake::new(0.01, 1.0)];
        let r = rule(0.02, 1000.0, 2);
        let mut order = Vec::new();
        for _ in 0..6 {
            let states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
            let Next::Pass(i) = next(&states, &r, 0.0) else {
                panic!("stopped during start-up")
            };
            order.push(i);
            fakes[i].pass();
        }
        assert_eq!(order, [0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn time_goes_to_the_noisy_test_and_both_reach_the_target() {
        // A quiet test (±0.5 %) and a noisy one (±8 %), same cost.
        let mut fakes = [Fake::new(0.005, 1.0), Fake::new(0.08, 1.0)];
        let r = rule(0.02, 10_000.0, 2);
        let (passes, _) = drive(&mut fakes, &r);
        assert!(
            passes[1] > 3 * passes[0],
            "noisy gets the passes: {passes:?}"
        );
        let states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
        for s in &states {
            assert_eq!(stop_reason(s, &r), Some(StopReason::Target));
            assert!(half_width(s.spread.unwrap()) <= 0.02);
        }
        assert!(half_width(score_spread(&states).unwrap()) <= 0.02);
    }

    #[test]
    fn cheap_passes_are_preferred_for_the_same_gain() {
        // Same noise, one test's passes cost 10× more: the score's interval
        // is narrowed mostly through the cheap one.
        let mut fakes = [Fake::new(0.05, 10.0), Fake::new(0.05, 1.0)];
        let r = Rule {
            target: 0.01,
            max_time_s: 10_000.0,
            test_budget_s: 10_000.0,
            min_passes: 3,
        };
        let mut elapsed = 0.0;
        // Run only until the score is within the target.
        loop {
            let states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
            if score_spread(&states).is_some_and(|s| half_width(s) <= r.target) {
                break;
            }
            let Next::Pass(i) = next(&states, &r, elapsed) else {
                panic!("stopped before the score reached its target")
            };
            fakes[i].pass();
            elapsed += fakes[i].cost;
        }
        assert!(
            fakes[1].rates.len() > 2 * fakes[0].rates.len(),
            "{} vs {}",
            fakes[1].rates.len(),
            fakes[0].rates.len()
        );
    }

    #[test]
    fn budgets_and_the_time_cap_bound_the_run() {
        // ±30 % noise never reaches ±1 %: the test stops at its budget, the
        // run at its time.
        let mut fakes = [
            Fake::new(0.3, 2.0),
            Fake::new(0.001, 2.0),
            Fake::new(0.3, 2.0),
            Fake::new(0.001, 2.0),
            Fake::new(0.001, 2.0),
            Fake::new(0.001, 2.0),
        ];
        let r = rule(0.01, 100.0, 6);
        assert!((r.test_budget_s - 50.0).abs() < 1e-9);
        let (passes, elapsed) = drive(&mut fakes, &r);
        assert!(elapsed <= 100.0, "{elapsed}");
        assert!(
            passes.iter().all(|&p| f64::from(p) * 2.0 <= 50.0),
            "{passes:?}"
        );
        let states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
        assert_eq!(stop_reason(&states[1], &r), Some(StopReason::Target));
        assert_ne!(stop_reason(&states[0], &r), Some(StopReason::Target));
        // The noisy tests limited the score; the quiet one did not.
        let spreads: Vec<_> = states.iter().map(|s| s.spread).collect();
        let limits = limited_by(&variance_shares(&spreads));
        assert!(!limits.contains(&1) && !limits.is_empty(), "{limits:?}");
    }

    #[test]
    fn failed_tests_get_no_passes_and_leave_the_score() {
        let mut fakes = [Fake::new(0.01, 1.0), Fake::new(0.01, 1.0)];
        let r = rule(0.02, 100.0, 2);
        for f in fakes.iter_mut() {
            for _ in 0..3 {
                f.pass();
            }
        }
        let mut states: Vec<TestState> = fakes.iter().map(Fake::state).collect();
        states[0].failed = true;
        states[0].passes = 0;
        assert_ne!(next(&states, &r, 0.0), Next::Pass(0));
        let alone = score_spread(&states[1..]).unwrap();
        assert_eq!(score_spread(&states), Some(alone));
        assert_eq!(stop_reason(&states[0], &r), None);
    }

    #[test]
    fn shares_need_every_spread() {
        let s = |v| {
            Some(LogSpread {
                var_of_mean: v,
                df: 3.0,
            })
        };
        assert_eq!(variance_shares(&[s(1.0), s(3.0)]), [Some(0.25), Some(0.75)]);
        assert_eq!(variance_shares(&[s(1.0), None]), [None, None]);
        assert_eq!(variance_shares(&[s(0.0), s(0.0)]), [None, None]);
    }

    #[test]
    fn limited_by_takes_the_largest_shares_up_to_half() {
        assert_eq!(limited_by(&[Some(0.1), Some(0.6), Some(0.3)]), [1]);
        assert_eq!(limited_by(&[Some(0.3), Some(0.25), Some(0.45)]), [2, 0]);
        assert_eq!(limited_by(&[None, None]), Vec::<usize>::new());
    }
}
