//! Capacity under an SLO (`--find-rate`, a plan's `find_rate = { … }`): the
//! highest open-model arrival rate a server sustains while every SLO holds.
//!
//! One **search** brackets the knee with a coarse ramp (doubling from the
//! first rate while steps pass, halving while they fail) and then bisects
//! the bracket (geometric midpoints) until its ends are within
//! [`BRACKET_RATIO`] of each other; its estimate is the bracket's geometric
//! midpoint. A step is one steady load at a fixed rate; it **passes** when
//! every SLO holds *and* the server kept up: completed responses per second
//! at least [`KEPT_UP`] of the target. (A server that falls behind fails the
//! step even if the latency of what it did answer looks fine.)
//!
//! One URL is searched again and again ([`find`]) until the 95 % interval of
//! the searches' geometric mean is within ±`precision` (default ±5 %): a
//! Student-t interval on the logs of the estimates, as every kurabe interval
//! is. Each later search starts at a different point below the estimate so
//! far (a golden-ratio sequence, [`offset`]), so the searches do not test
//! the same lattice of rates and their spread includes the bisection's
//! resolution instead of hiding it.
//!
//! Owns the search rules, the stopping rule, the spec's grammar
//! ([`FindRate`]) and the record ([`CapacityReport`]). Must not run a load
//! or print: the caller runs each step ([`find`]'s closure, kurabe-lab) and
//! renders the record (kurabe-report).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::quantity::HumanDuration;
use crate::stats::student_t;
use crate::threshold::{Measure, Threshold, ThresholdError};

/// A search stops bisecting once its bracket's high end is within this
/// factor of its low end (±2.5 % around the midpoint, at most).
pub const BRACKET_RATIO: f64 = 1.05;
/// A step passes only when completed responses per second reach this share of the target.
pub const KEPT_UP: f64 = 0.95;
/// Default measured length of one step.
pub const DEFAULT_STEP: std::time::Duration = std::time::Duration::from_secs(5);
/// Default unmeasured load before each step's measured part.
pub const DEFAULT_STEP_WARMUP: std::time::Duration = std::time::Duration::from_secs(1);
/// Default lowest (and first) rate searched, requests per second.
pub const DEFAULT_START_RATE: f64 = 10.0;
/// Default highest rate searched, requests per second.
pub const DEFAULT_MAX_RATE: f64 = 100_000.0;
/// Default most searches of one URL.
pub const DEFAULT_MAX_SEARCHES: u32 = 8;
/// Fewest searches of one URL: fewer give no interval.
pub const MIN_SEARCHES: u32 = 3;
/// Default half-width of the interval asked for (±5 %).
pub const DEFAULT_PRECISION: f64 = 0.05;

/// What a capacity search is asked (the flags, or a plan's
/// `find_rate = { slo = ["p(99)<50ms"], step = "5s" }` inside `http`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct FindRate {
    /// The SLOs, k6's threshold notation (`p(99)<50ms`, `failed<0.1%`):
    /// a rate is sustained only while every one holds. At least one.
    pub slo: Vec<String>,
    /// Measured length of each step (default 5 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<HumanDuration>,
    /// Unmeasured load at the step's rate before its measured part (default 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_warmup: Option<HumanDuration>,
    /// Lowest rate searched and the first step, requests per second (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_rate: Option<f64>,
    /// Highest rate searched, requests per second (default 100 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// One URL: most searches before giving up on the precision (default 8, at least 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_searches: Option<u32>,
    /// One URL: the 95 % interval's half-width to reach, a fraction (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
}

/// A [`FindRate`] with its defaults filled in and its SLOs parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The SLOs, parsed.
    pub slos: Vec<Threshold>,
    /// Measured length of each step.
    pub step: std::time::Duration,
    /// Warm-up of each step.
    pub step_warmup: std::time::Duration,
    /// Lowest rate searched.
    pub start_rate: f64,
    /// Highest rate searched.
    pub max_rate: f64,
    /// Most searches of one URL.
    pub max_searches: u32,
    /// Half-width of the interval to reach.
    pub precision: f64,
}

/// What is wrong with a [`FindRate`], naming the setting.
#[derive(Debug, Clone, PartialEq)]
pub enum FindRateError {
    /// No SLO given (the switch's name, the SLO's).
    NoSlo(&'static str, &'static str),
    /// An SLO that does not parse.
    Slo(&'static str, ThresholdError),
    /// An SLO on something a search does not measure.
    Unmeasured(&'static str, String, &'static str),
    /// A setting out of range.
    Range(String),
}

impl std::fmt::Display for FindRateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindRateError::NoSlo(switch, slo) => {
                write!(
                    f,
                    "{switch}: give at least one SLO, e.g. {slo} 'p(99)<50ms'"
                )
            }
            FindRateError::Slo(slo, e) => write!(f, "{slo} {e}"),
            FindRateError::Unmeasured(slo, text, why) => write!(f, "{slo} '{text}': {why}"),
            FindRateError::Range(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FindRateError {}

/// What each setting is called where the user wrote it (flags or plan keys).
#[derive(Debug, Clone, Copy)]
pub struct FindRateNames {
    /// The switch itself (`--find-rate`, `find_rate`).
    pub find_rate: &'static str,
    /// `--slo`, `slo`.
    pub slo: &'static str,
    /// `--step`, `step`.
    pub step: &'static str,
    /// `--start-rate`, `start_rate`.
    pub start_rate: &'static str,
    /// `--max-rate`, `max_rate`.
    pub max_rate: &'static str,
    /// `--max-searches`, `max_searches`.
    pub max_searches: &'static str,
    /// `--precision`, `precision`.
    pub precision: &'static str,
}

impl FindRateNames {
    /// The command line's names.
    pub const FLAGS: FindRateNames = FindRateNames {
        find_rate: "--find-rate",
        slo: "--slo",
        step: "--step",
        start_rate: "--start-rate",
        max_rate: "--max-rate",
        max_searches: "--max-searches",
        precision: "--precision",
    };
    /// A plan's keys.
    pub const PLAN: FindRateNames = FindRateNames {
        find_rate: "find_rate",
        slo: "find_rate.slo",
        step: "find_rate.step",
        start_rate: "find_rate.start_rate",
        max_rate: "find_rate.max_rate",
        max_searches: "find_rate.max_searches",
        precision: "find_rate.precision",
    };
}

impl FindRate {
    /// Parse the SLOs and fill in the defaults; refuse what cannot be searched.
    pub fn settings(&self, n: &FindRateNames) -> Result<Settings, FindRateError> {
        if self.slo.is_empty() {
            return Err(FindRateError::NoSlo(n.find_rate, n.slo));
        }
        let slos = self
            .slo
            .iter()
            .map(|s| slo(s, n))
            .collect::<Result<Vec<_>, _>>()?;
        let s = Settings {
            slos,
            step: self.step.map_or(DEFAULT_STEP, |d| d.0),
            step_warmup: self.step_warmup.map_or(DEFAULT_STEP_WARMUP, |d| d.0),
            start_rate: self.start_rate.unwrap_or(DEFAULT_START_RATE),
            max_rate: self.max_rate.unwrap_or(DEFAULT_MAX_RATE),
            max_searches: self.max_searches.unwrap_or(DEFAULT_MAX_SEARCHES),
            precision: self.precision.unwrap_or(DEFAULT_PRECISION),
        };
        s.check(n)?;
        Ok(s)
    }
}

/// One SLO: it parses, and it is on something every step measures.
fn slo(text: &str, n: &FindRateNames) -> Result<Threshold, FindRateError> {
    let t: Threshold = text.parse().map_err(|e| FindRateError::Slo(n.slo, e))?;
    let refuse = |why| Err(FindRateError::Unmeasured(n.slo, text.to_owned(), why));
    if t.measure == Measure::Checks {
        return refuse(
            "a search measures no response checks: use p(N), avg, min, max, med, failed or rate",
        );
    }
    if t.name.is_some() {
        return refuse(
            "a search measures the whole load, not one request name: drop the {name:…} scope",
        );
    }
    if t.abort || t.after.is_some() {
        return refuse("abort and after= end a run; a search judges every step whole: drop them");
    }
    Ok(t)
}

impl Settings {
    fn check(&self, n: &FindRateNames) -> Result<(), FindRateError> {
        let range = |m: String| Err(FindRateError::Range(m));
        if self.step.is_zero() {
            return range(format!(
                "{} 0: a step needs a positive length, e.g. 5s",
                n.step
            ));
        }
        let positive = |r: f64| r.is_finite() && r > 0.0;
        if !positive(self.start_rate) {
            return range(format!(
                "{} {}: give a positive rate",
                n.start_rate, self.start_rate
            ));
        }
        if !positive(self.max_rate) || self.max_rate < self.start_rate {
            return range(format!(
                "{} {}: give a rate at least {} ({})",
                n.max_rate, self.max_rate, n.start_rate, self.start_rate
            ));
        }
        if self.max_searches < MIN_SEARCHES {
            return range(format!(
                "{} {}: at least {MIN_SEARCHES} searches give an interval",
                n.max_searches, self.max_searches
            ));
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return range(format!(
                "{} {}: a fraction between 0 and 1, e.g. 0.05 for ±5 %",
                n.precision, self.precision
            ));
        }
        Ok(())
    }
}

/// How one search ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SearchEnd {
    /// The knee lies between the highest passing and the lowest failing rate.
    Found {
        /// Highest rate that passed, requests per second.
        low_per_s: f64,
        /// Lowest rate that failed, requests per second.
        high_per_s: f64,
    },
    /// The lowest rate searched already broke an SLO.
    BelowLowest {
        /// That rate, requests per second.
        rate_per_s: f64,
    },
    /// The highest rate searched still passed.
    AtMax {
        /// That rate, requests per second.
        rate_per_s: f64,
    },
}

impl SearchEnd {
    /// The search's estimate: the bracket's geometric midpoint (`Found` only).
    pub fn estimate(&self) -> Option<f64> {
        match *self {
            SearchEnd::Found {
                low_per_s,
                high_per_s,
            } => Some((low_per_s * high_per_s).sqrt()),
            _ => None,
        }
    }
}

/// One search's state: the bracket so far and the next rate to try.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    floor: f64,
    max: f64,
    low: Option<f64>,
    high: Option<f64>,
    next: Result<f64, SearchEnd>,
}

impl Search {
    /// A search of rates in `[floor, max]` whose first step is `first` (clamped).
    pub fn new(floor: f64, max: f64, first: f64) -> Search {
        Search {
            floor,
            max,
            low: None,
            high: None,
            next: Ok(first.clamp(floor, max)),
        }
    }

    /// The rate of the next step, or how the search ended.
    pub fn next(&self) -> Result<f64, SearchEnd> {
        self.next
    }

    /// What the step at `rate` said.
    pub fn record(&mut self, rate: f64, pass: bool) {
        if pass {
            self.low = Some(self.low.map_or(rate, |l| l.max(rate)));
        } else {
            self.high = Some(self.high.map_or(rate, |h| h.min(rate)));
        }
        self.next = match (self.low, self.high) {
            (Some(low_per_s), Some(high_per_s)) if high_per_s <= low_per_s * BRACKET_RATIO => {
                Err(SearchEnd::Found {
                    low_per_s,
                    high_per_s,
                })
            }
            (Some(l), Some(h)) => Ok((l * h).sqrt()),
            (Some(l), None) if l >= self.max => Err(SearchEnd::AtMax { rate_per_s: l }),
            (Some(l), None) => Ok((l * 2.0).min(self.max)),
            (None, Some(h)) if h <= self.floor => Err(SearchEnd::BelowLowest { rate_per_s: h }),
            (None, Some(h)) => Ok((h / 2.0).max(self.floor)),
            (None, None) => self.next,
        };
    }
}

/// Where search `k` (from 0) starts, as a fraction of an octave below the
/// estimate so far: 0 for the first, then the golden-ratio sequence
/// (0.618, 0.236, 0.854, …), spread evenly over `[0, 1)` without a seed.
pub fn offset(k: u32) -> f64 {
    (f64::from(k) * 0.618_033_988_749_895).fract()
}

/// The first rate of search `k`: the start rate for the first; later ones
/// start between half the estimate so far and the estimate.
pub fn first_rate(k: u32, start_rate: f64, estimate: Option<f64>) -> f64 {
    match estimate {
        Some(e) if k > 0 => e * 2f64.powf(offset(k) - 1.0),
        _ => start_rate,
    }
}

/// Geometric mean of `estimates` with its 95 % Student-t interval on the
/// logs: `(mean, low, high)`; the interval only with [`MIN_SEARCHES`] or more.
pub fn interval(estimates: &[f64]) -> Option<(f64, Option<(f64, f64)>)> {
    if estimates.is_empty() || estimates.iter().any(|e| !(e.is_finite() && *e > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = estimates.iter().map(|e| e.ln()).collect();
    let n = logs.len() as f64;
    let m = logs.iter().sum::<f64>() / n;
    if logs.len() < MIN_SEARCHES as usize {
        return Some((m.exp(), None));
    }
    let var = logs.iter().map(|l| (l - m).powi(2)).sum::<f64>() / (n - 1.0);
    let half = student_t::quantile(0.975, n - 1.0) * (var / n).sqrt();
    Some((m.exp(), Some(((m - half).exp(), (m + half).exp()))))
}

/// One SLO judged on one step: a threshold's result, one shape for both.
pub type SloResult = crate::threshold::ThresholdResult;

/// One steady step of a search: its rate, what it measured, and the judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct CapacityStep {
    /// The search it belongs to, from 0.
    pub search: u32,
    /// The arrival rate asked for, requests per second.
    pub target_per_s: f64,
    /// Requests sent per second (the client's side of keeping up).
    pub sent_per_s: f64,
    /// Complete responses per second (the server's side).
    pub achieved_per_s: f64,
    /// Median latency, from the intended send time (coordinated-omission corrected), µs.
    pub latency_p50_us: u64,
    /// 99th percentile latency, likewise, µs.
    pub latency_p99_us: u64,
    /// Failed requests, percent of those that ended.
    pub failed_percent: f64,
    /// Every SLO on this step.
    pub slos: Vec<SloResult>,
    /// Completed responses per second reached [`KEPT_UP`] of the target.
    pub kept_up: bool,
    /// Every SLO held and the server kept up.
    pub pass: bool,
    /// The step's measured phase second by second, as every http run
    /// records it (`HttpReport::series`); empty in records written before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<crate::series::Interval>,
}

impl CapacityStep {
    /// Why the step failed, in words (`p(99)<50ms: 73.1ms`, `fell behind: 812/s of 1000/s`).
    pub fn why_failed(&self) -> Option<String> {
        if self.pass {
            return None;
        }
        let mut why: Vec<String> = self
            .slos
            .iter()
            .filter(|s| !s.pass)
            .map(|s| format!("{} was {}", s.text, s.shown))
            .collect();
        if !self.kept_up {
            why.push(format!(
                "fell behind: {:.0}/s of {:.0}/s",
                self.achieved_per_s, self.target_per_s
            ));
        }
        Some(why.join("; "))
    }
}

/// One search: its steps in the order run, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct CapacitySearch {
    /// Search number, from 0.
    pub index: u32,
    /// The steps in the order run.
    pub steps: Vec<CapacityStep>,
    /// How it ended; null when it was interrupted.
    #[schemars(required, transform = crate::schema::nullable)]
    pub end: Option<SearchEnd>,
}

/// A plan's capacity run (`RunDetail::Capacity`): the SLOs and settings
/// searched under, and the one search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct CapacitySearchDetail {
    /// The URL searched.
    pub url: String,
    /// The SLOs, as given.
    pub slos: Vec<String>,
    /// Measured length of each step, seconds.
    pub step_s: f64,
    /// Warm-up of each step, seconds.
    pub step_warmup_s: f64,
    /// The search.
    pub search: CapacitySearch,
}

/// How a capacity search of one URL ended, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// Found, with an interval within the precision asked for.
    Found,
    /// Found, but the interval is wider than asked after the most searches.
    Imprecise,
    /// Even the lowest rate searched broke an SLO.
    BelowLowest,
    /// Even the highest rate searched held every SLO.
    AtMax,
    /// Stopped (Ctrl-C) before an answer.
    Interrupted,
}

/// `kurabe http URL --find-rate`: the capacity under the SLOs and the
/// latency curve it was found on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe http --find-rate report",
    description = "The highest open-model rate a URL sustains within SLOs (kurabe_model::capacity::CapacityReport): the searches' geometric mean with its 95 % interval, and every step (target and achieved rate, p50, p99, failed %, pass/fail)."
)]
pub struct CapacityReport {
    /// [`crate::SCHEMA_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe version that produced the record.
    pub tool_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// The URL searched.
    pub url: String,
    /// The SLOs, as given.
    pub slos: Vec<String>,
    /// Measured length of each step, seconds.
    pub step_s: f64,
    /// Warm-up of each step, seconds.
    pub step_warmup_s: f64,
    /// Lowest rate searched, requests per second.
    pub start_rate_per_s: f64,
    /// Highest rate searched, requests per second.
    pub max_rate_per_s: f64,
    /// Connections available to the open model (`-c`).
    pub concurrency: u32,
    /// The interval's half-width asked for (0.05 = ±5 %).
    pub precision: f64,
    /// How the search ended.
    pub verdict: CapacityVerdict,
    /// The capacity: geometric mean of the searches' estimates, requests per second.
    #[schemars(required, transform = crate::schema::nullable)]
    pub rate_per_s: Option<f64>,
    /// Low end of its 95 % interval.
    #[schemars(required, transform = crate::schema::nullable)]
    pub rate_low_per_s: Option<f64>,
    /// High end of its 95 % interval.
    #[schemars(required, transform = crate::schema::nullable)]
    pub rate_high_per_s: Option<f64>,
    /// Every search, in the order run.
    pub searches: Vec<CapacitySearch>,
}

impl CapacityReport {
    /// Every step of every search, in the order run.
    pub fn steps(&self) -> impl Iterator<Item = &CapacityStep> {
        self.searches.iter().flat_map(|s| s.steps.iter())
    }
}

/// What [`find`] returns: the searches, and the answer with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Every search, in the order run.
    pub searches: Vec<CapacitySearch>,
    /// How it ended.
    pub verdict: CapacityVerdict,
    /// The geometric mean of the estimates and its interval.
    pub rate: Option<(f64, Option<(f64, f64)>)>,
}

/// Search one URL until the interval is within `s.precision` (at least
/// [`MIN_SEARCHES`], at most `s.max_searches`), running each step with
/// `step(search, rate)`; `None` from it means stopped (Ctrl-C).
pub fn find<E>(
    s: &Settings,
    mut step: impl FnMut(u32, f64) -> Result<Option<CapacityStep>, E>,
) -> Result<Found, E> {
    let mut searches = Vec::new();
    let mut estimates = Vec::new();
    for k in 0..s.max_searches {
        let first = first_rate(k, s.start_rate, interval(&estimates).map(|r| r.0));
        let (search, stopped) = search(s, k, first, &mut step)?;
        let end = search.end;
        searches.push(search);
        let verdict = match end {
            None => Some(CapacityVerdict::Interrupted),
            Some(SearchEnd::BelowLowest { .. }) => Some(CapacityVerdict::BelowLowest),
            Some(SearchEnd::AtMax { .. }) => Some(CapacityVerdict::AtMax),
            Some(found) => {
                estimates.extend(found.estimate());
                precise(&estimates, s.precision).then_some(CapacityVerdict::Found)
            }
        };
        if let Some(verdict) = verdict {
            let verdict = if stopped {
                CapacityVerdict::Interrupted
            } else {
                verdict
            };
            let rate = interval(&estimates);
            return Ok(Found {
                searches,
                verdict,
                rate,
            });
        }
    }
    Ok(Found {
        searches,
        verdict: CapacityVerdict::Imprecise,
        rate: interval(&estimates),
    })
}

/// Enough searches, and the interval within ±`precision` of the mean.
fn precise(estimates: &[f64], precision: f64) -> bool {
    match interval(estimates) {
        Some((m, Some((low, high)))) => high / m - 1.0 <= precision && 1.0 - low / m <= precision,
        _ => false,
    }
}

/// Run one search (number `k`) from `first`, each step with `step`; true
/// when it was stopped (then the search has no end). A plan's run is one
/// search: the plan's rounds are its repeats.
pub fn search<E>(
    s: &Settings,
    k: u32,
    first: f64,
    step: &mut impl FnMut(u32, f64) -> Result<Option<CapacityStep>, E>,
) -> Result<(CapacitySearch, bool), E> {
    let mut search = Search::new(s.start_rate, s.max_rate, first);
    let mut steps = Vec::new();
    loop {
        let rate = match search.next() {
            Ok(rate) => rate,
            Err(end) => {
                let done = CapacitySearch {
                    index: k,
                    steps,
                    end: Some(end),
                };
                return Ok((done, false));
            }
        };
        let Some(result) = step(k, rate)? else {
            let stopped = CapacitySearch {
                index: k,
                steps,
                end: None,
            };
            return Ok((stopped, true));
        };
        search.record(rate, result.pass);
        steps.push(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        FindRate {
            slo: vec!["p(99)<50ms".into()],
            start_rate: Some(100.0),
            max_rate: Some(10_000.0),
            ..FindRate::default()
        }
        .settings(&FindRateNames::FLAGS)
        .unwrap()
    }

    fn step(k: u32, rate: f64, capacity: f64) -> CapacityStep {
        let pass = rate <= capacity;
        CapacityStep {
            search: k,
            target_per_s: rate,
            sent_per_s: rate,
            achieved_per_s: rate.min(capacity),
            latency_p50_us: 1000,
            latency_p99_us: if pass { 2000 } else { 90_000 },
            failed_percent: 0.0,
            slos: Vec::new(),
            kept_up: pass,
            pass,
            series: Vec::new(),
        }
    }

    #[test]
    fn a_search_ramps_then_bisects_to_the_bracket_ratio() {
        let mut s = Search::new(100.0, 10_000.0, 100.0);
        let mut tried = Vec::new();
        while let Ok(rate) = s.next() {
            tried.push(rate);
            s.record(rate, rate <= 1234.0);
        }
        assert_eq!(&tried[..5], &[100.0, 200.0, 400.0, 800.0, 1600.0]);
        let Err(SearchEnd::Found {
            low_per_s,
            high_per_s,
        }) = s.next()
        else {
            panic!("{s:?}");
        };
        assert!(low_per_s <= 1234.0 && 1234.0 < high_per_s);
        assert!(high_per_s / low_per_s <= BRACKET_RATIO);
        assert_eq!(
            tried.len(),
            5 + 4,
            "2× bracket to ≤ 1.05 takes four bisections"
        );
    }

    #[test]
    fn a_search_starting_too_high_halves_down_and_the_floor_failing_ends_it() {
        let mut s = Search::new(100.0, 10_000.0, 900.0);
        s.record(900.0, false);
        assert_eq!(s.next(), Ok(450.0));
        s.record(450.0, true);
        assert!((s.next().unwrap() - (450.0f64 * 900.0).sqrt()).abs() < 1e-9);
        let mut low = Search::new(100.0, 10_000.0, 100.0);
        low.record(100.0, false);
        assert_eq!(
            low.next(),
            Err(SearchEnd::BelowLowest { rate_per_s: 100.0 })
        );
        let mut high = Search::new(100.0, 300.0, 100.0);
        for _ in 0..3 {
            let r = high.next().unwrap();
            high.record(r, true);
        }
        assert_eq!(high.next(), Err(SearchEnd::AtMax { rate_per_s: 300.0 }));
    }

    #[test]
    fn one_url_is_searched_until_the_interval_is_within_the_precision() {
        let found = find(&settings(), |k, r| Ok::<_, ()>(Some(step(k, r, 1234.0)))).unwrap();
        assert_eq!(found.verdict, CapacityVerdict::Found);
        let (m, Some((low, high))) = found.rate.unwrap() else {
            panic!("an interval");
        };
        assert!(found.searches.len() >= MIN_SEARCHES as usize);
        assert!((m / 1234.0 - 1.0).abs() < 0.03, "{m}");
        assert!(low <= 1234.0 * 1.01 && high >= 1234.0 * 0.99 && high / m - 1.0 <= 0.05);
        // Later searches start below the estimate, not at the start rate.
        assert!(found.searches[1].steps[0].target_per_s > 600.0);
    }

    #[test]
    fn the_lowest_step_failing_and_the_highest_passing_end_at_once() {
        let below = find(&settings(), |k, r| Ok::<_, ()>(Some(step(k, r, 50.0)))).unwrap();
        assert_eq!(below.verdict, CapacityVerdict::BelowLowest);
        assert_eq!(below.searches.len(), 1);
        assert_eq!(below.searches[0].steps.len(), 1);
        let above = find(&settings(), |k, r| Ok::<_, ()>(Some(step(k, r, 1e9)))).unwrap();
        assert_eq!(above.verdict, CapacityVerdict::AtMax);
        let stopped = find(&settings(), |_, _| Ok::<_, ()>(None)).unwrap();
        assert_eq!(stopped.verdict, CapacityVerdict::Interrupted);
    }

    #[test]
    fn noisy_steps_that_never_settle_end_imprecise_after_the_most_searches() {
        let found = find(&settings(), |k, r| {
            // The knee jumps between 600 and 2400 from search to search.
            let cap = if k % 2 == 0 { 600.0 } else { 2400.0 };
            Ok::<_, ()>(Some(step(k, r, cap)))
        })
        .unwrap();
        assert_eq!(found.verdict, CapacityVerdict::Imprecise);
        assert_eq!(found.searches.len(), DEFAULT_MAX_SEARCHES as usize);
    }

    #[test]
    fn slos_that_do_not_parse_or_measure_nothing_are_refused_naming_the_flag() {
        let with = |slo: &[&str]| {
            FindRate {
                slo: slo.iter().map(|s| s.to_string()).collect(),
                ..FindRate::default()
            }
            .settings(&FindRateNames::FLAGS)
            .unwrap_err()
            .to_string()
        };
        assert!(with(&[]).contains("--slo"));
        let bad = with(&["p99<50ms"]);
        assert!(
            bad.starts_with("--slo threshold 'p99<50ms': unknown metric 'p'"),
            "{bad}"
        );
        assert!(bad.contains("expected METRIC"), "{bad}");
        assert!(with(&["checks>99%"]).contains("no response checks"));
        assert!(with(&["p(99){name:x}<1s"]).contains("{name:"));
        let plan = FindRate {
            slo: vec!["p(99)<1s".into()],
            max_searches: Some(2),
            ..FindRate::default()
        }
        .settings(&FindRateNames::PLAN)
        .unwrap_err()
        .to_string();
        assert!(plan.starts_with("find_rate.max_searches 2"), "{plan}");
    }

    #[test]
    fn offsets_spread_over_the_octave() {
        assert_eq!(offset(0), 0.0);
        let mut o: Vec<f64> = (1..8).map(offset).collect();
        o.sort_by(f64::total_cmp);
        assert!(o.windows(2).all(|w| w[1] - w[0] > 0.05), "{o:?}");
        assert!(interval(&[100.0, 100.0]).unwrap().1.is_none());
    }
}

#[cfg(test)]
mod plan_tests {
    use crate::load::LoadSpec;

    #[test]
    fn a_plans_http_table_takes_find_rate() {
        let spec: LoadSpec = toml::from_str(
            "path = \"/\"\nconcurrency = 64\nfind_rate = { slo = [\"p(99)<50ms\", \"failed<0.1%\"], step = \"2s\", start_rate = 100 }",
        )
        .unwrap();
        let f = spec.find_rate.unwrap();
        let s = f.settings(&super::FindRateNames::PLAN).unwrap();
        assert_eq!(s.slos.len(), 2);
        assert_eq!(s.step, std::time::Duration::from_secs(2));
        assert_eq!(s.start_rate, 100.0);
        let bad = toml::from_str::<LoadSpec>("find_rate = { slo = [\"p(99)<1s\"], stp = \"1s\" }");
        assert!(bad.unwrap_err().to_string().contains("stp"));
    }
}
