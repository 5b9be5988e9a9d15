//! Capacity under an SLO on the real engine: each step of a search
//! (`kurabe_model::capacity`) is one steady open-model load
//! (`kurabe_http::load::run` with `rate`, `warmup` and `duration` set to
//! the step's), judged on the step's exact latency histogram.
//!
//! Owns turning a load into a step record: the SLOs judged on what the
//! step measured (latency from the intended send time, so a server that
//! falls behind shows it in its percentiles) and whether the server kept
//! up. Must not decide where to search (the model's rules) or print:
//! every finished step goes to the caller's `on_step`.

use kurabe_http::load::LoadError;
use kurabe_http::load::{self, Quiet};
use kurabe_model::capacity::{
    self, CapacityReport, CapacitySearch, CapacityStep, CapacityVerdict, Settings, SloResult,
    KEPT_UP,
};
use kurabe_model::ending::Ending;
use kurabe_model::http::HttpReport;
use kurabe_model::load::LoadSpec;
use kurabe_model::plan::HumanDuration;
use kurabe_stop::Stop;

/// Connections of the open model when the load names none (`-c`):
/// enough for a rate times the latency the usual SLOs allow (e.g. 1000/s
/// × 50 ms).
pub const DEFAULT_CONNECTIONS: u32 = 64;

/// How a search that ended with `verdict` ends: interrupted, failed when
/// even the lowest rate broke an SLO, else done (with an answer).
pub fn ending(verdict: CapacityVerdict) -> Ending {
    match verdict {
        CapacityVerdict::Interrupted => Ending::Signalled(None),
        CapacityVerdict::BelowLowest => Ending::Failed(None),
        _ => Ending::Done,
    }
}

/// A search's load checked whole as its first step will run it (at the
/// start rate, for one step; errors name the settings as `names` says),
/// its inputs read: the load every step runs, with no rate or length of
/// its own (each step sets them).
pub fn check_search(
    spec: LoadSpec,
    s: &Settings,
    names: &load::Names,
) -> Result<LoadSpec, load::SpecError> {
    let first = LoadSpec {
        rate: Some(s.start_rate),
        duration: Some(HumanDuration(s.step)),
        ..spec
    };
    let read = load::check_spec(first, names, 1)?.read()?;
    Ok(LoadSpec {
        rate: None,
        duration: None,
        ..read.spec
    })
}

/// The load of one step: `spec` at `rate` for the step's length, after
/// its warm-up, with the SLOs as its thresholds (the load judges them on
/// its exact histograms, as `--threshold` is judged: one grammar, one
/// judge).
fn step_spec(spec: &LoadSpec, s: &Settings, rate: f64) -> LoadSpec {
    LoadSpec {
        rate: Some(rate),
        thresholds: s.slos.iter().map(|t| t.text.clone()).collect(),
        requests: None,
        duration: Some(HumanDuration(s.step)),
        warmup: (!s.step_warmup.is_zero()).then_some(HumanDuration(s.step_warmup)),
        find_rate: None,
        ..spec.clone()
    }
}

/// Run one step of search `search` at `rate`; `None` when `stop` ended it.
pub fn step(
    spec: &LoadSpec,
    s: &Settings,
    search: u32,
    rate: f64,
    stop: &Stop,
) -> Result<Option<CapacityStep>, LoadError> {
    let run = match load::run(&step_spec(spec, s, rate), stop, &Quiet) {
        Err(LoadError::Interrupted) => return Ok(None),
        run => run?,
    };
    if run.report.interrupted || stop.is_set() {
        return Ok(None);
    }
    Ok(Some(record(search, rate, &run.report)))
}

/// The step record of a finished load, its SLOs as the load judged them.
fn record(search: u32, rate: f64, report: &HttpReport) -> CapacityStep {
    let slos: Vec<SloResult> = report.thresholds.clone();
    let achieved = report.requests_per_second;
    let kept_up = achieved >= KEPT_UP * rate;
    CapacityStep {
        search,
        target_per_s: rate,
        sent_per_s: report.rate.map_or(achieved, |r| r.achieved_per_s),
        achieved_per_s: achieved,
        latency_p50_us: report.latency_us.p50,
        latency_p99_us: report.latency_us.p99,
        failed_percent: report.error_rate() * 100.0,
        pass: kept_up && slos.iter().all(|j| j.pass),
        slos,
        kept_up,
        series: report.series.clone(),
    }
}

/// Search `spec`'s URL until the interval is within the precision asked
/// for (`kurabe http URL --find-rate`), handing every step to `on_step`.
pub fn find_rate(
    spec: &LoadSpec,
    s: &Settings,
    stop: &Stop,
    on_step: &mut dyn FnMut(&CapacityStep),
) -> Result<CapacityReport, LoadError> {
    let started = std::time::SystemTime::now();
    let found = capacity::find(s, |k, rate| {
        let done = step(spec, s, k, rate, stop)?;
        if let Some(st) = &done {
            on_step(st);
        }
        Ok::<_, LoadError>(done)
    })?;
    let (rate, interval) = match found.rate {
        Some((m, i)) => (Some(m), i),
        None => (None, None),
    };
    Ok(CapacityReport {
        schema_version: kurabe_model::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: kurabe_model::time::rfc3339(started),
        url: spec.url.clone().unwrap_or_default(),
        slos: s.slos.iter().map(|t| t.text.clone()).collect(),
        step_s: s.step.as_secs_f64(),
        step_warmup_s: s.step_warmup.as_secs_f64(),
        start_rate_per_s: s.start_rate,
        max_rate_per_s: s.max_rate,
        concurrency: spec.concurrency,
        precision: s.precision,
        verdict: found.verdict,
        rate_per_s: rate,
        rate_low_per_s: interval.map(|i| i.0),
        rate_high_per_s: interval.map(|i| i.1),
        searches: found.searches,
    })
}

/// One search from `first` (a plan's run: the plan's rounds are its
/// repeats); `None` when `stop` ended it.
pub fn one_search(
    spec: &LoadSpec,
    s: &Settings,
    index: u32,
    first: f64,
    stop: &Stop,
    on_step: &mut dyn FnMut(&CapacityStep),
) -> Result<Option<CapacitySearch>, LoadError> {
    let (search, stopped) = capacity::search(s, index, first, &mut |k, rate| {
        let done = step(spec, s, k, rate, stop)?;
        if let Some(st) = &done {
            on_step(st);
        }
        Ok::<_, LoadError>(done)
    })?;
    Ok((!stopped).then_some(search))
}

/// Searches run by plans in this process so far: each starts at the next
/// golden-ratio offset above the start rate, so a variant's rounds do not
/// test one lattice of rates (their spread then includes the bisection's
/// resolution).
static PLAN_SEARCHES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A plan's capacity run (an `http` workload with `find_rate`): one search
/// of `spec`'s URL; its estimate is the run's `capacity_per_second`, its steps
/// the run's record. A search without an estimate (even the start rate
/// breaks an SLO, or even the max rate holds) is a failed run saying so.
pub(crate) fn plan_run(
    find: &kurabe_model::capacity::FindRate,
    spec: &LoadSpec,
    stop: &Stop,
) -> Result<crate::measured::Measured, crate::target::RunFailure> {
    use crate::target::RunFailure;
    use kurabe_model::capacity::{CapacitySearchDetail, FindRateNames};
    let s = find
        .settings(&FindRateNames::PLAN)
        .map_err(|e| RunFailure::new(e.to_string()))?;
    let k = PLAN_SEARCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let first = s.start_rate * 2f64.powf(capacity::offset(k));
    let search = one_search(spec, &s, 0, first, stop, &mut |_| {})
        .map_err(|e| RunFailure::new(format!("load generator: {e}")))?
        .ok_or_else(|| RunFailure::new("interrupted"))?;
    let estimate = estimate(&search, &s, &FindRateNames::PLAN).map_err(RunFailure::new)?;
    let record = kurabe_model::run_detail::RunDetail::Capacity(Box::new(CapacitySearchDetail {
        url: spec.url.clone().unwrap_or_default(),
        slos: s.slos.iter().map(|t| t.text.clone()).collect(),
        step_s: s.step.as_secs_f64(),
        step_warmup_s: s.step_warmup.as_secs_f64(),
        search,
    }));
    let metrics = std::collections::BTreeMap::from([("capacity_per_second", estimate)]);
    Ok(crate::measured::Measured { metrics, record })
}

/// A finished search's estimate, or why it has none: even the lowest rate
/// broke an SLO, or even the highest held (`names` says which setting to
/// change).
pub(crate) fn estimate(
    search: &CapacitySearch,
    s: &Settings,
    names: &kurabe_model::capacity::FindRateNames,
) -> Result<f64, String> {
    use kurabe_model::capacity::SearchEnd;
    let slos = s
        .slos
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    match search.end {
        Some(SearchEnd::BelowLowest { rate_per_s }) => Err(format!(
            "even the lowest rate searched, {rate_per_s}/s, breaks {slos}: lower {}",
            names.start_rate
        )),
        Some(SearchEnd::AtMax { rate_per_s }) => Err(format!(
            "even the highest rate searched, {rate_per_s}/s, holds {slos}: raise {}",
            names.max_rate
        )),
        end => Ok(end.and_then(|e| e.estimate()).unwrap_or_default()),
    }
}
