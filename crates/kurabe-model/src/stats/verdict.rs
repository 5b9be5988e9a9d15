//! What an interval says: the [`Verdict`] words (better, worse, within
//! noise, inconclusive, no interval), why there is no interval, and the
//! confidence level and fewest runs every comparison shares.
//!
//! Owns the verdict's JSON shape (tagged by `kind`, stable since schema
//! version 1) and its words. Must not compute intervals: the ratio scale
//! ([`super::compare()`]) and the difference scale ([`super::difference`])
//! both decide a verdict and both name it from here. Pure data, no I/O.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Confidence level of the interval.
pub const CONFIDENCE: f64 = 0.95;

/// Fewest runs per variant for which an interval is computed.
pub const MIN_RUNS: usize = 3;

/// What the interval says about the candidate.
///
/// Three answers in words — better, worse, within noise — and no interval.
/// "Within noise" has two shapes: [`Verdict::WithinNoise`] (settled: the
/// whole interval is inside the band) and [`Verdict::Inconclusive`] (the
/// interval straddles a band edge). In JSON both keep their own `kind`
/// (stable since schema version 1); an inconclusive verdict also carries
/// `"within_noise": true` so a reader need not know that rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(into = "VerdictJson", from = "VerdictJson")]
pub enum Verdict {
    /// The whole interval clears the noise band in the good direction.
    Better,
    /// The whole interval clears the noise band in the bad direction.
    Worse,
    /// Within noise, settled: the whole interval lies inside the noise band.
    WithinNoise,
    /// Within noise, inconclusive: the interval straddles an edge of the
    /// band, so neither a difference beyond it nor its absence is shown;
    /// more runs would settle it.
    Inconclusive {
        /// Estimated runs per variant needed (≈ 16·(CV/δ)², at least one more than now).
        runs_needed: u32,
    },
    /// No interval could be computed.
    NoInterval {
        /// Why not.
        reason: NoIntervalReason,
    },
}

impl Verdict {
    /// True for "within noise", settled or inconclusive.
    pub fn is_within_noise(self) -> bool {
        matches!(self, Verdict::WithinNoise | Verdict::Inconclusive { .. })
    }

    /// True when more runs would not change the answer's words: better,
    /// worse, or within noise with the whole interval inside the band.
    pub fn is_settled(self) -> bool {
        matches!(
            self,
            Verdict::Better | Verdict::Worse | Verdict::WithinNoise
        )
    }
}

/// The JSON shape of [`Verdict`]: tagged by `kind`; `inconclusive` adds
/// `within_noise: true` (additive to schema version 1, so older readers and
/// older files still work — a missing field reads as `true`).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum VerdictJson {
    Better,
    Worse,
    WithinNoise,
    Inconclusive {
        #[serde(default = "yes")]
        within_noise: bool,
        runs_needed: u32,
    },
    NoInterval {
        reason: NoIntervalReason,
    },
}

fn yes() -> bool {
    true
}

impl From<Verdict> for VerdictJson {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Better => VerdictJson::Better,
            Verdict::Worse => VerdictJson::Worse,
            Verdict::WithinNoise => VerdictJson::WithinNoise,
            Verdict::Inconclusive { runs_needed } => VerdictJson::Inconclusive {
                within_noise: true,
                runs_needed,
            },
            Verdict::NoInterval { reason } => VerdictJson::NoInterval { reason },
        }
    }
}

impl From<VerdictJson> for Verdict {
    fn from(v: VerdictJson) -> Self {
        match v {
            VerdictJson::Better => Verdict::Better,
            VerdictJson::Worse => Verdict::Worse,
            VerdictJson::WithinNoise => Verdict::WithinNoise,
            // `within_noise` is informative only: the interval straddling the
            // band is what makes a verdict inconclusive.
            VerdictJson::Inconclusive { runs_needed, .. } => Verdict::Inconclusive { runs_needed },
            VerdictJson::NoInterval { reason } => Verdict::NoInterval { reason },
        }
    }
}

/// Why a comparison has no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum NoIntervalReason {
    /// Fewer than [`MIN_RUNS`] runs on a side.
    TooFewRuns {
        /// Runs of the baseline.
        baseline_runs: usize,
        /// Runs of the candidate.
        candidate_runs: usize,
    },
    /// A value is zero or negative, so the log-scale interval is undefined.
    NonPositiveValue,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Better => f.write_str("better"),
            Verdict::Worse => f.write_str("worse"),
            Verdict::WithinNoise => f.write_str("within noise"),
            Verdict::Inconclusive { runs_needed } => {
                write!(
                    f,
                    "within noise (inconclusive: ≈{runs_needed} runs per variant needed)"
                )
            }
            Verdict::NoInterval { reason } => write!(f, "no interval: {reason}"),
        }
    }
}

impl fmt::Display for NoIntervalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoIntervalReason::TooFewRuns {
                baseline_runs,
                candidate_runs,
            } => write!(
                f,
                "needs at least {MIN_RUNS} runs per variant (baseline has {baseline_runs}, candidate {candidate_runs})"
            ),
            NoIntervalReason::NonPositiveValue => {
                f.write_str("a value is zero or negative, so no ratio of geometric means exists")
            }
        }
    }
}
