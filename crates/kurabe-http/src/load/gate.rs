//! Thresholds on a load (`--threshold`, a plan's `thresholds`): checked
//! before the run against what it will send, watched during the run when
//! one of them aborts (`,abort`, k6's `abortOnFail`), and judged on the
//! finished run's exact figures into the report's `thresholds`.
//!
//! Owns the refusals (text that does not parse, checked before a set or
//! a log is read; then `checks` without a check and a request name the
//! run does not send, which need the run's names), [`Figures`] (what a
//! threshold reads of a run's histograms and counters) and [`Gate`], the
//! observer that ends a run at an aborting threshold's first failure. Must not
//! parse the grammar (`kurabe_model::threshold` does) or print.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use kurabe_model::counters::Counters;
use kurabe_model::load::LoadSpec;
use kurabe_model::probe::WatchPoint;
use kurabe_model::threshold::{Measure, Measured, Threshold, ThresholdResult, THRESHOLD_EXPECTED};
use kurabe_stop::Stop;

use super::{Observer, Progress, Snapshot, SpecError, Taps};
use crate::request::Names;
use crate::tags::Labels;
use kurabe_model::load_stats::Stats;

/// How often an aborting threshold is judged during the run.
pub(crate) const GATE_INTERVAL: Duration = Duration::from_millis(100);

/// `spec`'s thresholds, each parsed: the refusals that need nothing of
/// the run, so they come before a set or a log is read.
pub(crate) fn parsed(spec: &LoadSpec, n: &Names) -> Result<Vec<Threshold>, SpecError> {
    spec.thresholds.iter().map(|text| parse(text, n)).collect()
}

/// `spec`'s thresholds, parsed and checked against the run's `labels`
/// (its request names, once known, and whether anything is checked).
pub(crate) fn thresholds(
    spec: &LoadSpec,
    n: &Names,
    labels: &Labels,
) -> Result<Vec<Threshold>, SpecError> {
    spec.thresholds
        .iter()
        .map(|text| measured(parse(text, n)?, text, n, labels))
        .collect()
}

/// One threshold's text parsed.
fn parse(text: &str, n: &Names) -> Result<Threshold, SpecError> {
    text.parse()
        .map_err(|e: kurabe_model::threshold::ThresholdError| {
            SpecError::Invalid(format!(
                "{} '{}': {}; expected {THRESHOLD_EXPECTED}",
                n.thresholds, e.text, e.problem
            ))
        })
}

/// One threshold (`text`, parsed as `t`) on something the run measures:
/// its checks, a name it sends.
fn measured(t: Threshold, text: &str, n: &Names, labels: &Labels) -> Result<Threshold, SpecError> {
    let flag = n.thresholds;
    if t.measure == Measure::Checks && !labels.any_checks() {
        return Err(SpecError::Invalid(format!(
            "{flag} '{text}': the run checks no response: add {} (e.g. 'status==200') or drop the threshold",
            n.checks
        )));
    }
    let names = labels.names();
    match &t.name {
        Some(name) if !names.is_empty() && !names.contains(name) => {
            Err(SpecError::Invalid(format!(
                "{flag} '{text}': the run sends no request named '{name}'; its names: {}",
                names.join(", ")
            )))
        }
        _ => Ok(t),
    }
}

/// What a threshold reads of a run, running or finished: the latency
/// histograms (the whole and by name), the counters and the measured time.
pub(crate) struct Figures<'a> {
    /// Latency of the whole run, µs.
    pub(crate) latency: &'a Histogram<u64>,
    /// Latency by the index of `counters.names` (empty with one name).
    pub(crate) name_latency: &'a [Histogram<u64>],
    /// Everything counted.
    pub(crate) counters: &'a Counters,
    /// The run's request names (one: the whole is its row).
    pub(crate) names: &'a [String],
    /// Length of the measured phase so far, seconds.
    pub(crate) seconds: f64,
}

/// Counts of one scope (the whole run, or one name).
struct Counts {
    completed: u64,
    failed: u64,
    check_failed: u64,
}

impl<'a> Figures<'a> {
    /// The latency and counts of `name` (`None`: the whole run).
    fn scope(&self, name: Option<&str>) -> Option<(&'a Histogram<u64>, Counts)> {
        let whole = |c: &Counters| Counts {
            completed: c.completed,
            failed: c.failures.total(),
            check_failed: c.failures.check,
        };
        let Some(name) = name else {
            return Some((self.latency, whole(self.counters)));
        };
        if self.counters.names.is_empty() {
            let only = self.names.len() == 1 && self.names[0] == name;
            return only.then(|| (self.latency, whole(self.counters)));
        }
        let i = self.counters.names.iter().position(|c| c.name == name)?;
        let c = &self.counters.names[i];
        let counts = Counts {
            completed: c.completed,
            failed: c.failures.total(),
            check_failed: c.failures.check,
        };
        Some((self.name_latency.get(i)?, counts))
    }
}

impl Measured for Figures<'_> {
    fn value(&self, m: Measure, name: Option<&str>) -> Option<f64> {
        let (h, c) = self.scope(name)?;
        let latency = |us: f64| (!h.is_empty()).then_some(us / 1e6);
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        match m {
            Measure::Percentile(p) if p >= 100.0 => latency(h.max() as f64),
            Measure::Percentile(p) => latency(h.value_at_quantile(p / 100.0) as f64),
            Measure::Mean => latency(h.mean()),
            Measure::Min => latency(h.min() as f64),
            Measure::Max => latency(h.max() as f64),
            Measure::Failed => share(c.failed, c.completed + c.failed).or(Some(0.0)),
            Measure::Rate => (self.seconds > 0.0).then(|| c.completed as f64 / self.seconds),
            Measure::Checks => share(c.completed, c.completed + c.check_failed),
        }
    }
}

/// Each threshold judged on a finished run's `stats` over `seconds` of
/// measuring (one client's, or a fleet's merged: the same figures);
/// `aborted`: the one that ended the run.
pub(crate) fn judge_finished(
    thresholds: &[Threshold],
    names: &[String],
    stats: &Stats,
    seconds: f64,
    aborted: Option<usize>,
) -> Vec<ThresholdResult> {
    let figures = Figures {
        latency: &stats.total,
        name_latency: &stats.name_latency,
        counters: &stats.counters,
        names,
        seconds,
    };
    judge_all(thresholds, &figures, aborted)
}

/// Each threshold judged on `figures`; `aborted`: the one that ended the run.
fn judge_all(
    thresholds: &[Threshold],
    figures: &Figures<'_>,
    aborted: Option<usize>,
) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let why = match t.name.as_deref() {
                Some(name) if figures.scope(Some(name)).is_none() => {
                    format!("not measured: no request named '{name}' was sent")
                }
                _ => "not measured: no response".to_owned(),
            };
            ThresholdResult {
                aborted: aborted == Some(i),
                ..t.judge_or_fail(figures, &why)
            }
        })
        .collect()
}

/// The observer of a run with aborting thresholds: it passes everything
/// on to the caller's observer, and judges the aborting thresholds on each
/// snapshot, ending the run (`stop`) at the first that fails once its
/// `after=` has passed. A threshold with nothing measured yet waits.
pub(crate) struct Gate<'a> {
    /// The caller's observer.
    pub(crate) inner: &'a dyn Observer,
    /// The run's thresholds (only the aborting ones are judged here).
    pub(crate) thresholds: &'a [Threshold],
    /// The run's request names.
    pub(crate) names: &'a [String],
    /// The run's own stop, which the workers poll.
    pub(crate) stop: &'a Stop,
    /// The index of the threshold that ended the run.
    pub(crate) tripped: Mutex<Option<usize>>,
}

impl Gate<'_> {
    /// The first aborting threshold that fails on `s`.
    fn failing(&self, s: &Snapshot) -> Option<usize> {
        let figures = Figures {
            latency: &s.latency,
            name_latency: &s.name_latency,
            counters: &s.counters,
            names: self.names,
            seconds: s.measured.as_secs_f64(),
        };
        self.thresholds.iter().position(|t| {
            t.abort
                && !s.measured.is_zero()
                && s.measured >= t.after.unwrap_or_default()
                && t.judge(&figures).is_some_and(|j| !j.pass)
        })
    }
}

impl Observer for Gate<'_> {
    fn progress_interval(&self) -> Option<Duration> {
        Some(
            self.inner
                .progress_interval()
                .map_or(GATE_INTERVAL, |d| d.min(GATE_INTERVAL)),
        )
    }

    fn progress(&self, p: Progress) {
        if self.inner.progress_interval().is_some() {
            self.inner.progress(p);
        }
    }

    fn taps(&self) -> Taps {
        self.inner.taps()
    }

    fn wants_snapshots(&self) -> bool {
        true
    }

    fn snapshot(&self, s: &Snapshot) {
        if self.inner.wants_snapshots() {
            self.inner.snapshot(s);
        }
        if s.finished || self.stop.is_set() {
            return;
        }
        if let Some(i) = self.failing(s) {
            let mut tripped = self.tripped.lock().unwrap_or_else(|p| p.into_inner());
            tripped.get_or_insert(i);
            self.stop.trigger(None);
        }
    }

    fn watches_server(&self) -> bool {
        self.inner.watches_server()
    }

    fn server(&self, point: &WatchPoint) {
        self.inner.server(point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(names: &[&str], checks: &[&str]) -> Labels {
        let mut l = Labels::new::<&str>(&[], checks).unwrap();
        let none: &[&str] = &[];
        for n in names {
            l.tag("GET", "http://h/", Some(n), none).unwrap();
        }
        l
    }

    fn refusal(t: &str, l: &Labels) -> String {
        let spec = LoadSpec {
            thresholds: vec![t.to_owned()],
            ..LoadSpec::for_url("http://h/")
        };
        thresholds(&spec, &Names::FLAGS, l).unwrap_err().to_string()
    }

    #[test]
    fn refusals_name_the_flag_the_token_and_the_fix() {
        let l = labels(&["home", "cart"], &[]);
        let e = refusal("p95<1s", &l);
        assert!(
            e.starts_with("--threshold 'p95<1s': unknown metric 'p'; expected METRIC"),
            "{e}"
        );
        let e = refusal("p(95){name:checkout}<1s", &l);
        assert!(
            e.contains("no request named 'checkout'; its names: home, cart"),
            "{e}"
        );
        assert!(refusal("checks>99%", &l).contains("add --check"));
        let spec = LoadSpec {
            thresholds: vec!["checks>99%".into(), "p(99){name:cart}<1s".into()],
            ..LoadSpec::for_url("http://h/")
        };
        let ok = thresholds(&spec, &Names::FLAGS, &labels(&["cart"], &["status==200"]));
        assert_eq!(ok.unwrap().len(), 2);
    }

    #[test]
    fn figures_read_the_whole_and_each_name() {
        let mut latency = Histogram::<u64>::new(3).unwrap();
        let mut cart = Histogram::<u64>::new(2).unwrap();
        for us in [1_000, 2_000, 3_000, 100_000] {
            latency.record(us).unwrap();
        }
        cart.record(100_000).unwrap();
        let mut counters = Counters {
            completed: 4,
            ..Counters::default()
        };
        counters.failures.check = 1;
        counters.names = vec![
            kurabe_model::counters::NameCounts {
                name: "home".into(),
                completed: 3,
                ..Default::default()
            },
            kurabe_model::counters::NameCounts {
                name: "cart".into(),
                completed: 1,
                ..Default::default()
            },
        ];
        counters.names[1].failures.check = 1;
        let names = ["home".to_owned(), "cart".to_owned()];
        let f = Figures {
            latency: &latency,
            name_latency: &[Histogram::new(2).unwrap(), cart],
            counters: &counters,
            names: &names,
            seconds: 2.0,
        };
        let v = |t: &str| {
            t.parse::<Threshold>()
                .unwrap()
                .judge(&f)
                .map(|j| j.measured)
        };
        assert!(v("max<1s").is_some_and(|m| (0.1..0.101).contains(&m)));
        assert_eq!(v("failed<1%"), Some(0.2));
        assert_eq!(v("rate>1"), Some(2.0));
        assert_eq!(v("checks{name:cart}>1%"), Some(0.5));
        assert_eq!(v("p(50){name:home}<1s"), None, "home's histogram is empty");
        assert_eq!(v("rate{name:nope}>1"), None);
        let r = judge_all(&["p(99){name:nope}<1s".parse().unwrap()], &f, Some(0));
        assert!(!r[0].pass && r[0].aborted && r[0].shown.contains("'nope'"));
    }
}
