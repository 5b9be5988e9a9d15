//! Thresholds judged on a stored http record (`kurabe check ID
//! --threshold …`), in the one grammar of [`crate::threshold`].
//!
//! A record keeps a run's summaries, not its histograms, so a threshold
//! reads what the record has: the whole run's p(50), p(90), p(99),
//! p(99.9), p(100) and ab's table (66, 75, 80, 95, 98), each name's p(50),
//! p(90), p(99), p(99.9) and p(100); `min`, `avg`, `max`; the counts
//! (`failed`, `checks`) and the rate.
//!
//! Owns [`unanswerable`] (a threshold the record cannot answer is refused,
//! never passed) and [`Record`], the [`Measured`] view of one record. Must
//! not parse the grammar or print.

use crate::http::{HttpReport, LatencySummary, PercentileValue};
use crate::threshold::{Measure, Measured, Threshold};

/// One stored record, as a threshold reads it.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a>(pub &'a HttpReport);

/// The figures of one scope: the whole run, or one name's row.
struct Scope<'a> {
    latency: &'a LatencySummary,
    /// ab's percentile table (the whole run only).
    table: &'a [PercentileValue],
    complete: u64,
    failed: u64,
    check_failed: u64,
    rate: f64,
}

impl<'a> Record<'a> {
    /// The whole run (`None`) or the row of `name`.
    fn scope(&self, name: Option<&str>) -> Option<Scope<'a>> {
        let r = self.0;
        let Some(name) = name else {
            return Some(Scope {
                latency: &r.latency_us,
                table: &r.latency_percentiles_us,
                complete: r.complete_requests,
                failed: r.failed_requests,
                check_failed: r.failures.check,
                rate: r.requests_per_second,
            });
        };
        let row = r.requests.iter().find(|q| q.name == name)?;
        Some(Scope {
            latency: &row.latency_us,
            table: &[],
            complete: row.complete_requests,
            failed: row.failed_requests,
            check_failed: row.failures.check,
            rate: row.requests_per_second,
        })
    }
}

impl Scope<'_> {
    /// The percentiles this scope keeps, µs, each once, lowest first.
    fn percentiles(&self) -> Vec<(f64, u64)> {
        let l = self.latency;
        let mut all = vec![(50.0, l.p50), (90.0, l.p90), (99.0, l.p99), (99.9, l.p999)];
        all.extend(self.table.iter().map(|v| (v.percentile, v.latency_us)));
        all.push((100.0, l.max));
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        all.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-9);
        all
    }

    /// The latency at percentile `p`, µs, when the scope keeps it.
    fn percentile(&self, p: f64) -> Option<u64> {
        let kept = self.percentiles();
        kept.iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|&(_, us)| us)
    }
}

impl Measured for Record<'_> {
    fn value(&self, m: Measure, name: Option<&str>) -> Option<f64> {
        let s = self.scope(name)?;
        let latency = |us: f64| (s.complete > 0).then_some(us / 1e6);
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        match m {
            Measure::Percentile(p) => latency(s.percentile(p)? as f64),
            Measure::Mean => latency(s.latency.mean),
            Measure::Min => latency(s.latency.min as f64),
            Measure::Max => latency(s.latency.max as f64),
            Measure::Failed => share(s.failed, s.complete + s.failed).or(Some(0.0)),
            Measure::Rate => Some(s.rate),
            Measure::Checks => share(s.complete, s.complete + s.check_failed),
        }
    }
}

/// Why `record` cannot answer `t`, if it cannot: a name it has no row
/// for, a percentile it does not keep, `checks` on a run that checked
/// nothing. `,abort` is refused too: a stored run is over.
pub fn unanswerable(t: &Threshold, record: &HttpReport) -> Option<String> {
    if t.abort {
        return Some("a stored run is over: drop ,abort".into());
    }
    let names: Vec<&str> = record.requests.iter().map(|q| q.name.as_str()).collect();
    let Some(scope) = Record(record).scope(t.name.as_deref()) else {
        return Some(match names.is_empty() {
            true => "the record has one request name and no per-name rows: drop {name:…}".into(),
            false => format!(
                "the record has no request named '{}'; its names: {}",
                t.name.as_deref().unwrap_or_default(),
                names.join(", ")
            ),
        });
    };
    match t.measure {
        Measure::Percentile(p) if scope.percentile(p).is_none() => {
            let kept: Vec<String> = scope
                .percentiles()
                .iter()
                .map(|(q, _)| format!("p({q})"))
                .collect();
            Some(format!(
                "p({p}) is not in the stored record, which keeps {}: use one of them",
                kept.join(", ")
            ))
        }
        Measure::Checks if record.checks.is_empty() => {
            Some("the run checked no response (it had no --check)".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::RequestStats;

    fn record() -> HttpReport {
        let mut r = HttpReport {
            complete_requests: 90,
            failed_requests: 10,
            requests_per_second: 45.0,
            checks: vec!["status==200".into()],
            ..HttpReport::default()
        };
        r.failures.check = 10;
        r.latency_us.p99 = 20_000;
        r.latency_us.max = 50_000;
        r.latency_percentiles_us = vec![PercentileValue {
            percentile: 95.0,
            latency_us: 12_000,
        }];
        r.requests = vec![RequestStats {
            name: "cart".into(),
            complete_requests: 30,
            requests_per_second: 15.0,
            ..RequestStats::default()
        }];
        r.requests[0].latency_us.p90 = 7_000;
        r
    }

    fn judged(t: &str, r: &HttpReport) -> (f64, bool) {
        let t: Threshold = t.parse().unwrap();
        assert_eq!(unanswerable(&t, r), None, "{}", t.text);
        let j = t.judge(&Record(r)).unwrap();
        (j.measured, j.pass)
    }

    #[test]
    fn a_record_answers_from_its_summaries_and_rows() {
        let r = record();
        assert_eq!(judged("p(95)<10ms", &r), (0.012, false));
        assert_eq!(judged("p(99)<30ms", &r), (0.02, true));
        assert_eq!(judged("p(100)<=50ms", &r), (0.05, true));
        assert_eq!(judged("failed<1%", &r), (0.1, false));
        assert_eq!(judged("checks>80%", &r), (0.9, true));
        assert_eq!(judged("rate>=45", &r), (45.0, true));
        assert_eq!(judged("p(90){name:cart}<5ms", &r), (0.007, false));
        assert_eq!(judged("rate{name:cart}>10", &r), (15.0, true));
    }

    #[test]
    fn what_a_record_cannot_answer_is_refused_saying_what_it_has() {
        let r = record();
        let why = |t: &str| unanswerable(&t.parse().unwrap(), &r).unwrap();
        let kept = "keeps p(50), p(90), p(95), p(99), p(99.9), p(100):";
        assert!(why("p(97)<1s").contains(kept), "{}", why("p(97)<1s"));
        assert!(why("p(95){name:cart}<1s").contains("p(99.9)"));
        assert!(why("p(99){name:home}<1s").contains("its names: cart"));
        assert!(why("p(99)<1s,abort").contains("drop ,abort"));
        let plain = HttpReport::default();
        let t: Threshold = "checks>99%".parse().unwrap();
        assert!(unanswerable(&t, &plain)
            .unwrap()
            .contains("checked no response"));
        let t: Threshold = "rate{name:x}>1".parse().unwrap();
        assert!(unanswerable(&t, &plain)
            .unwrap()
            .contains("one request name"));
    }
}
