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

use super::metric::Direction;

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

/// A verdict as one word, the shape `kurabe system compare` has always
/// printed: the same verdict, without the runs an inconclusive one needs
/// or why there is no interval (that record says both in its `reason`).
//
// Written through `as_word` on a `Verdict` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictWord {
    /// The whole interval clears the noise band in the good direction.
    Better,
    /// The whole interval clears the noise band in the bad direction.
    Worse,
    /// The whole interval lies inside the noise band.
    WithinNoise,
    /// The interval straddles the band: more runs (passes) are needed.
    Inconclusive,
    /// No interval can be computed (single numbers, too few runs, a missing or failed value).
    NoVerdict,
}

impl From<Verdict> for VerdictWord {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Better => VerdictWord::Better,
            Verdict::Worse => VerdictWord::Worse,
            Verdict::WithinNoise => VerdictWord::WithinNoise,
            Verdict::Inconclusive { .. } => VerdictWord::Inconclusive,
            Verdict::NoInterval { .. } => VerdictWord::NoVerdict,
        }
    }
}

impl From<VerdictWord> for Verdict {
    /// The word read back: what it does not keep reads as zero runs.
    fn from(w: VerdictWord) -> Self {
        match w {
            VerdictWord::Better => Verdict::Better,
            VerdictWord::Worse => Verdict::Worse,
            VerdictWord::WithinNoise => Verdict::WithinNoise,
            VerdictWord::Inconclusive => Verdict::Inconclusive { runs_needed: 0 },
            VerdictWord::NoVerdict => Verdict::NoInterval {
                reason: NoIntervalReason::TooFewRuns {
                    baseline_runs: 0,
                    candidate_runs: 0,
                },
            },
        }
    }
}

/// `#[serde(with = "as_word")]`: a [`Verdict`] field written as its
/// [`VerdictWord`] (pair it with `#[schemars(with = "VerdictWord")]`).
pub mod as_word {
    use super::{Verdict, VerdictWord};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Write the verdict's word.
    pub fn serialize<S: Serializer>(v: &Verdict, s: S) -> Result<S::Ok, S::Error> {
        VerdictWord::from(*v).serialize(s)
    }

    /// Read a word back as a verdict.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
        VerdictWord::deserialize(d).map(Verdict::from)
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

/// Read an interval `[low, high]` of a difference against the noise band
/// `[band.0, band.1]` on the same scale (around 1 for a ratio, around 0
/// for a difference): the one rule every verdict follows.
///
/// **Better / worse** only when the whole interval lies beyond the band on
/// one side (`direction` says which word); **within noise** when it lies
/// inside (edges belong to the band); otherwise **inconclusive**, with
/// `runs_needed()` runs per variant.
pub fn read_interval(
    low: f64,
    high: f64,
    band: (f64, f64),
    direction: Direction,
    runs_needed: impl FnOnce() -> u32,
) -> Verdict {
    let (up, down) = match direction {
        Direction::HigherIsBetter => (Verdict::Better, Verdict::Worse),
        Direction::LowerIsBetter => (Verdict::Worse, Verdict::Better),
    };
    if low > band.1 {
        up
    } else if high < band.0 {
        down
    } else if low >= band.0 && high <= band.1 {
        Verdict::WithinNoise
    } else {
        Verdict::Inconclusive {
            runs_needed: runs_needed(),
        }
    }
}

/// Lehr's rule, 16·(spread/δ)² runs per variant (80 % power at α = 0.05
/// for a difference of δ), never fewer than one more than `runs`.
pub(crate) fn runs_needed(spread: f64, band: f64, runs: usize) -> u32 {
    let more = u32::try_from(runs).unwrap_or(u32::MAX).saturating_add(1);
    if band <= 0.0 {
        return more;
    }
    let lehr = (16.0 * (spread / band).powi(2)).ceil();
    // `as` saturates for huge or NaN floats (NaN → 0), which max() then fixes.
    (lehr as u32).max(more)
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
