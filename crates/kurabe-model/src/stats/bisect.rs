//! `kurabe bisect`'s search: the first commit where a metric changes.
//!
//! Owns the decision rules, over any [`Measurer`] (the real one runs
//! experiments on cached worktrees, in `kurabe-lab`; unit tests hand in a
//! fake), and the report of a search ([`BisectReport`]): the endpoints must differ by a settled verdict, then
//! each step measures the middle commit interleaved with the current good
//! and bad ones and asks the same question `kurabe run` answers — is the
//! middle beyond the noise band from the good one? A step whose verdicts
//! are not settled gets more rounds (doubling, as Chromium's Pinpoint
//! adds repeats where a comparison is unclear) up to `max_rounds` per
//! commit; only then is it decided by the nearer geometric mean and marked
//! unsure. A commit that does not build is skipped, as `git bisect skip`
//! does, and the middle moves to its nearest neighbour.
//!
//! How sure: every settled decision is a 95 % interval, so the chance that
//! any of the k decisions of a search is wrong is at most k × 5 %
//! (Bonferroni); unsure steps void that bound and are reported.
//!
//! Must not run processes or print: measuring is the [`Measurer`]'s.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{compare_metric, Comparison, Direction, Verdict, CONFIDENCE};

/// What a search needs to know about its metric.
#[derive(Debug, Clone)]
pub struct BisectConfig {
    /// Catalogue name of the metric.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Relative noise band (0.02 = ±2 %).
    pub noise_band: f64,
    /// Rounds of each step's first experiment (at least 3 give an interval).
    pub rounds: u32,
    /// Most rounds one commit is measured in all, before a step is decided unsure.
    pub max_rounds: u32,
}

/// Why a commit could not be measured.
#[derive(Debug, Clone, PartialEq)]
pub enum MeasureError {
    /// It does not build (or its worktree cannot be made): skip it.
    Unbuildable {
        /// The commit.
        commit: String,
        /// Why, in one line.
        reason: String,
    },
    /// Measuring as such failed (the store, Ctrl-C): the search stops.
    Fatal(String),
}

/// Runs interleaved rounds of several commits and returns new samples.
pub trait Measurer {
    /// `rounds` more rounds of `commits`; per commit (same order), the metric's new samples.
    fn measure(&mut self, commits: &[&str], rounds: u32) -> Result<Vec<Vec<f64>>, MeasureError>;
}

/// How one middle commit was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Within noise of the good commit: the change comes later.
    Good,
    /// Beyond the noise band from the good commit: the change is here or earlier.
    Bad,
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// The middle commit measured.
    pub commit: String,
    /// How it was judged.
    pub side: Side,
    /// Decided by settled verdicts (false: by the nearer mean after `max_rounds`).
    pub settled: bool,
    /// Its samples.
    pub runs: usize,
    /// The middle against the good commit.
    pub vs_good: Comparison,
    /// The middle against the bad commit.
    pub vs_bad: Comparison,
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Found {
    /// The first commit where the metric changes.
    Commit {
        /// It.
        first_bad: String,
        /// The commit before it.
        last_good: String,
    },
    /// The change is in one of these; the ones before the last did not build.
    Range {
        /// The candidates, oldest first.
        candidates: Vec<String>,
    },
    /// The good and bad commits do not differ beyond the noise band.
    NoChange,
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bisection {
    /// What was found.
    pub found: Found,
    /// The bad commit against the good one, as measured.
    pub endpoints: Comparison,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Commits that did not build, with why.
    pub skipped: Vec<Skipped>,
    /// Lower bound of the chance the answer is right (Bonferroni over the
    /// settled decisions); `None` when a decision was unsure.
    #[schemars(required, transform = crate::schema::nullable)]
    pub confidence: Option<f64>,
}

/// A commit the search could not measure, as `git bisect skip`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Skipped {
    /// The commit.
    pub commit: String,
    /// Why (its build failed, every run failed), in one line.
    pub reason: String,
}

/// What `kurabe bisect` reports: the search and the commits it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "kurabe bisect report",
    description = "The first commit where a metric changes (`kurabe bisect --format json`): every step with its verdicts against the good and bad commits, the skipped (unbuildable) commits, the answer and a lower bound of the chance it is right."
)]
pub struct BisectReport {
    /// Version of this record's shape.
    #[schemars(range(min = 1, max = 1))]
    pub schema_version: u32,
    /// The plan's name.
    pub plan: String,
    /// The variant measured.
    pub variant: String,
    /// The workload measured.
    pub workload: String,
    /// The metric searched.
    pub metric: String,
    /// The good revision as given.
    pub good: String,
    /// The bad revision as given.
    pub bad: String,
    /// Commits searched (good first, bad last).
    pub commits: usize,
    /// The search.
    pub result: Bisection,
    /// One line per commit named in the result: short id and subject.
    pub subjects: BTreeMap<String, String>,
}

/// Current [`BisectReport::schema_version`].
pub const BISECT_SCHEMA_VERSION: u32 = 1;

/// Per-commit samples gathered so far.
struct Samples(Vec<Vec<f64>>);

/// One search over `commits` (oldest first: the good one, then every
/// commit up to the bad one).
pub fn bisect(
    commits: &[String],
    config: &BisectConfig,
    measurer: &mut dyn Measurer,
) -> Result<Bisection, MeasureError> {
    let n = commits.len();
    if n < 2 {
        return Err(MeasureError::Fatal(
            "need a good and a later bad commit".into(),
        ));
    }
    let mut s = Search {
        commits,
        config,
        samples: Samples(vec![Vec::new(); n]),
        skipped: Vec::new(),
        steps: Vec::new(),
        decisions: 0,
    };
    let endpoints = s.endpoints(measurer)?;
    if !differs(&endpoints.verdict) {
        return Ok(s.finish(Found::NoChange, endpoints));
    }
    let (mut lo, mut hi) = (0, n - 1);
    while let Some(mid) = s.pick(lo, hi) {
        match s.step(lo, mid, hi, measurer) {
            Ok(Side::Good) => lo = mid,
            Ok(Side::Bad) => hi = mid,
            Err(MeasureError::Unbuildable { commit, reason }) if commit == commits[mid] => {
                s.skipped.push(Skipped { commit, reason })
            }
            Err(e) => return Err(e),
        }
    }
    let found = if hi - lo == 1 {
        Found::Commit {
            first_bad: commits[hi].clone(),
            last_good: commits[lo].clone(),
        }
    } else {
        Found::Range {
            candidates: commits[lo + 1..=hi].to_vec(),
        }
    };
    Ok(s.finish(found, endpoints))
}

/// A search in progress.
struct Search<'a> {
    commits: &'a [String],
    config: &'a BisectConfig,
    samples: Samples,
    skipped: Vec<Skipped>,
    steps: Vec<Step>,
    /// Settled decisions taken (the endpoints' included).
    decisions: u32,
}

impl Search<'_> {
    fn compare(&self, base: usize, candidate: usize) -> Comparison {
        let c = self.config;
        let s = &self.samples.0;
        compare_metric(
            &c.metric,
            &s[base],
            &s[candidate],
            c.direction,
            c.noise_band,
        )
    }

    /// Measure `idx` for `rounds` more rounds and keep the samples.
    fn measure(
        &mut self,
        idx: &[usize],
        rounds: u32,
        m: &mut dyn Measurer,
    ) -> Result<(), MeasureError> {
        let commits: Vec<&str> = idx.iter().map(|&i| self.commits[i].as_str()).collect();
        let new = m.measure(&commits, rounds)?;
        for (&i, samples) in idx.iter().zip(new) {
            self.samples.0[i].extend(samples);
        }
        Ok(())
    }

    /// The bad commit against the good one, with rounds added until settled.
    fn endpoints(&mut self, m: &mut dyn Measurer) -> Result<Comparison, MeasureError> {
        let last = self.commits.len() - 1;
        let mut rounds = self.config.rounds;
        loop {
            self.measure(&[0, last], rounds, m)?;
            let c = self.compare(0, last);
            if c.verdict.is_settled() || self.samples.0[last].len() >= self.max_runs() {
                self.decisions += u32::from(c.verdict.is_settled());
                return Ok(c);
            }
            rounds = self.more_rounds(last);
        }
    }

    fn max_runs(&self) -> usize {
        self.config.max_rounds as usize
    }

    /// Rounds to add for commit `i`: as many as it has (doubling), within the cap.
    fn more_rounds(&self, i: usize) -> u32 {
        let have = self.samples.0[i].len() as u32;
        have.max(1)
            .min(self.config.max_rounds.saturating_sub(have).max(1))
    }

    /// The untried commit nearest the middle of (lo, hi), skipping unbuildable ones.
    fn pick(&self, lo: usize, hi: usize) -> Option<usize> {
        let mid = (lo + hi) / 2;
        let skipped = |i: usize| self.skipped.iter().any(|s| s.commit == self.commits[i]);
        (lo + 1..hi)
            .filter(|&i| !skipped(i))
            .min_by_key(|&i| (i.abs_diff(mid), i))
    }

    /// Measure `mid` beside `lo` and `hi` until it is judged.
    fn step(
        &mut self,
        lo: usize,
        mid: usize,
        hi: usize,
        m: &mut dyn Measurer,
    ) -> Result<Side, MeasureError> {
        let mut rounds = self.config.rounds;
        loop {
            self.measure(&[lo, mid, hi], rounds, m)?;
            let (vs_good, vs_bad) = (self.compare(lo, mid), self.compare(hi, mid));
            let judged = judge(&vs_good, &vs_bad);
            let out_of_rounds = self.samples.0[mid].len() >= self.max_runs();
            if judged.is_some() || out_of_rounds {
                let side = judged.unwrap_or_else(|| self.nearer(lo, mid, hi));
                self.decisions += u32::from(judged.is_some());
                self.steps.push(Step {
                    commit: self.commits[mid].clone(),
                    side,
                    settled: judged.is_some(),
                    runs: self.samples.0[mid].len(),
                    vs_good,
                    vs_bad,
                });
                return Ok(side);
            }
            rounds = self.more_rounds(mid);
        }
    }

    /// The side whose geometric mean is nearer the middle's (unsure steps).
    fn nearer(&self, lo: usize, mid: usize, hi: usize) -> Side {
        let gm = |i: usize| log_mean(&self.samples.0[i]);
        let (g, x, b) = (gm(lo), gm(mid), gm(hi));
        if (x - g).abs() <= (x - b).abs() {
            Side::Good
        } else {
            Side::Bad
        }
    }

    fn finish(self, found: Found, endpoints: Comparison) -> Bisection {
        let sure = self.steps.iter().all(|s| s.settled) && endpoints.verdict.is_settled();
        let confidence =
            sure.then(|| (1.0 - f64::from(self.decisions) * (1.0 - CONFIDENCE)).max(0.0));
        Bisection {
            found,
            endpoints,
            steps: self.steps,
            skipped: self.skipped,
            confidence,
        }
    }
}

/// Better or worse: beyond the noise band.
fn differs(v: &Verdict) -> bool {
    matches!(v, Verdict::Better | Verdict::Worse)
}

/// The side of the middle commit when the verdicts settle it: beyond the
/// band from the good commit is bad; settled within it is good; not shown
/// either way from the good one but beyond the band from the bad one is
/// good, and settled within the band of the bad one is bad.
fn judge(vs_good: &Comparison, vs_bad: &Comparison) -> Option<Side> {
    match (vs_good.verdict, vs_bad.verdict) {
        (g, _) if differs(&g) => Some(Side::Bad),
        (Verdict::WithinNoise, _) => Some(Side::Good),
        (_, b) if differs(&b) => Some(Side::Good),
        (_, Verdict::WithinNoise) => Some(Side::Bad),
        _ => None,
    }
}

/// Mean of the logs (log of the geometric mean); the plain mean when a value is not positive.
fn log_mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    if xs.iter().all(|x| *x > 0.0) {
        xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake history: commit i costs `level(i)` with deterministic ±`jitter` noise.
    struct Fake {
        commits: Vec<String>,
        change_at: usize,
        jitter: f64,
        broken: Vec<usize>,
        calls: usize,
        measured: Vec<String>,
    }

    impl Fake {
        fn new(n: usize, change_at: usize, jitter: f64) -> Fake {
            Fake {
                commits: (0..n).map(|i| format!("c{i}")).collect(),
                change_at,
                jitter,
                broken: Vec::new(),
                calls: 0,
                measured: Vec::new(),
            }
        }
    }

    impl Measurer for Fake {
        fn measure(
            &mut self,
            commits: &[&str],
            rounds: u32,
        ) -> Result<Vec<Vec<f64>>, MeasureError> {
            let mut out = Vec::new();
            for c in commits {
                let i: usize = c[1..].parse().unwrap();
                if self.broken.contains(&i) {
                    return Err(MeasureError::Unbuildable {
                        commit: c.to_string(),
                        reason: "build failed".into(),
                    });
                }
                self.measured.push(c.to_string());
                let level = if i >= self.change_at { 130.0 } else { 100.0 };
                let v = (0..rounds)
                    .map(|_| {
                        self.calls += 1;
                        let h = (self.calls as u64 ^ 0x9e37_79b9_7f4a_7c15)
                            .wrapping_mul(0xbf58_476d_1ce4_e5b9)
                            .rotate_left(31)
                            .wrapping_mul(0x94d0_49bb_1331_11eb);
                        let wobble = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        level * (1.0 + self.jitter * wobble)
                    })
                    .collect();
                out.push(v);
            }
            Ok(out)
        }
    }

    fn config() -> BisectConfig {
        BisectConfig {
            metric: "wall_time_s".into(),
            direction: Direction::LowerIsBetter,
            noise_band: 0.02,
            rounds: 3,
            max_rounds: 24,
        }
    }

    #[test]
    fn finds_the_first_changed_commit_at_every_position() {
        for change_at in 1..10 {
            let mut f = Fake::new(10, change_at, 0.04);
            let commits = f.commits.clone();
            let b = bisect(&commits, &config(), &mut f).unwrap();
            assert_eq!(
                b.found,
                Found::Commit {
                    first_bad: format!("c{change_at}"),
                    last_good: format!("c{}", change_at - 1)
                }
            );
            assert!(b.steps.len() <= 4, "log2(10) steps, got {}", b.steps.len());
            let sure = b.confidence.expect("every step settled");
            assert!((0.7..1.0).contains(&sure), "{sure}");
        }
    }

    #[test]
    fn no_change_between_the_endpoints_says_so() {
        let mut f = Fake::new(6, 99, 0.01);
        let commits = f.commits.clone();
        let b = bisect(&commits, &config(), &mut f).unwrap();
        assert_eq!(b.found, Found::NoChange);
        assert!(b.steps.is_empty());
    }

    #[test]
    fn unbuildable_commits_are_skipped_and_can_leave_a_range() {
        let mut f = Fake::new(8, 5, 0.02);
        f.broken = vec![3, 4];
        let commits = f.commits.clone();
        let b = bisect(&commits, &config(), &mut f).unwrap();
        assert_eq!(
            b.found,
            Found::Range {
                candidates: vec!["c3".into(), "c4".into(), "c5".into()]
            }
        );
        let skipped: Vec<&str> = b.skipped.iter().map(|s| s.commit.as_str()).collect();
        assert_eq!(skipped, ["c3", "c4"]);
    }

    #[test]
    fn noisy_steps_get_more_rounds_before_they_are_decided() {
        let mut f = Fake::new(3, 2, 0.9);
        let commits = f.commits.clone();
        let b = bisect(&commits, &config(), &mut f).unwrap();
        let runs_of_mid = f.measured.iter().filter(|c| *c == "c1").count();
        assert!(runs_of_mid > 1, "more than one experiment for the middle");
        assert!(b.steps[0].runs > 3, "{:?}", b.steps[0].runs);
    }

    #[test]
    fn judging_follows_the_verdicts() {
        let c = |verdict| Comparison {
            ratio: Some(1.0),
            ratio_low: None,
            ratio_high: None,
            degrees_of_freedom: None,
            noise_band: 0.02,
            verdict,
            detectable_change_pct: None,
            difference: None,
        };
        let inc = Verdict::Inconclusive { runs_needed: 9 };
        assert_eq!(judge(&c(Verdict::Worse), &c(inc)), Some(Side::Bad));
        assert_eq!(judge(&c(Verdict::WithinNoise), &c(inc)), Some(Side::Good));
        assert_eq!(judge(&c(inc), &c(Verdict::Better)), Some(Side::Good));
        assert_eq!(judge(&c(inc), &c(Verdict::WithinNoise)), Some(Side::Bad));
        assert_eq!(judge(&c(inc), &c(inc)), None);
    }
}
