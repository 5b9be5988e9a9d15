//! `[[check]]`: pass/fail conditions that make `kurabe run` exit 1 in CI.
//!
//! Structured rather than a mini-language, so TOML does the parsing and
//! errors point at a key:
//!
//! ```toml
//! [[check]]                       # "variant b req/s ≥ 1.05 × baseline"
//! variant = "b"
//! metric = "requests_per_second"
//! min_ratio = 1.05
//!
//! [[check]]                       # "pss_peak ≤ 200 MiB" for every variant
//! metric = "pss_peak_bytes"
//! max = "200MiB"
//! stat = "max"                    # the worst run, not the typical one
//! ```
//!
//! Exactly one bound per check: `min_ratio` / `max_ratio` compare the ratio
//! of geometric means to the baseline; `min` / `max` compare a statistic of
//! the variant's own runs to an absolute value, written in the metric's unit
//! (`"200MiB"` for bytes, `"5ms"` for times, a number otherwise).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::quantity::{parse_duration, parse_size};
use crate::stats::{Metric, Unit};

/// One check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CheckRepr", into = "CheckRepr")]
pub struct Check {
    /// Metric name from the catalogue.
    pub metric: String,
    /// Variant checked; `None`: every variant (every non-baseline one for ratios).
    pub variant: Option<String>,
    /// Workload checked; `None`: every workload that reports the metric.
    pub workload: Option<String>,
    /// The condition.
    pub bound: Bound,
    /// Statistic of the runs an absolute bound applies to.
    pub stat: CheckStat,
}

/// The condition of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// variant / baseline ≥ value.
    MinRatio(f64),
    /// variant / baseline ≤ value.
    MaxRatio(f64),
    /// statistic ≥ value (in the metric's unit).
    Min(Threshold),
    /// statistic ≤ value (in the metric's unit).
    Max(Threshold),
}

/// Statistic of a variant's runs that an absolute bound is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStat {
    /// Geometric mean of the runs (the default; what ratios use too).
    #[default]
    GeometricMean,
    /// Median run.
    Median,
    /// Smallest run.
    Min,
    /// Largest run.
    Max,
}

/// An absolute bound as written: a number, or a string with a unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    /// A number in the metric's own unit.
    Number(f64),
    /// A quantity with a unit (`"200MiB"`, `"5ms"`).
    Text(String),
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Number(n) => write!(f, "{n}"),
            Threshold::Text(t) => f.write_str(t),
        }
    }
}

impl Threshold {
    /// The value in `metric`'s unit; the error says what form was expected.
    pub fn value_for(&self, metric: &Metric) -> Result<f64, String> {
        let text = match self {
            Threshold::Number(n) => return Ok(*n),
            Threshold::Text(t) => t,
        };
        let secs = |scale: f64| {
            parse_duration(text)
                .map(|d| d.as_secs_f64() * scale)
                .map_err(|e| format!("{e} (the metric `{}` is a time)", metric.name))
        };
        match metric.unit {
            Unit::Bytes => parse_size(text)
                .map(|b| b as f64)
                .map_err(|e| format!("{e} (the metric `{}` is a size)", metric.name)),
            Unit::Seconds => secs(1.0),
            Unit::Milliseconds => secs(1e3),
            Unit::Microseconds => secs(1e6),
            _ => text
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("expected a number for `{}`, got `{text}`", metric.name)),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
struct CheckRepr {
    metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min: Option<Threshold>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<Threshold>,
    #[serde(default)]
    stat: CheckStat,
}

impl TryFrom<CheckRepr> for Check {
    type Error = String;

    fn try_from(r: CheckRepr) -> Result<Self, String> {
        let mut bounds = Vec::new();
        if let Some(v) = r.min_ratio {
            bounds.push(Bound::MinRatio(v));
        }
        if let Some(v) = r.max_ratio {
            bounds.push(Bound::MaxRatio(v));
        }
        if let Some(v) = r.min {
            bounds.push(Bound::Min(v));
        }
        if let Some(v) = r.max {
            bounds.push(Bound::Max(v));
        }
        if bounds.len() != 1 {
            return Err(format!(
                "check on `{}` needs exactly one of `min_ratio`, `max_ratio`, `min` or `max` (found {}); write two checks to bound both sides",
                r.metric,
                bounds.len()
            ));
        }
        let bound = bounds.remove(0);
        if r.stat != CheckStat::default()
            && matches!(bound, Bound::MinRatio(_) | Bound::MaxRatio(_))
        {
            return Err(format!(
                "check on `{}`: `stat` applies to `min`/`max`; ratios always compare geometric means",
                r.metric
            ));
        }
        Ok(Check {
            metric: r.metric,
            variant: r.variant,
            workload: r.workload,
            bound,
            stat: r.stat,
        })
    }
}

impl From<Check> for CheckRepr {
    fn from(c: Check) -> Self {
        let mut r = CheckRepr {
            metric: c.metric,
            variant: c.variant,
            workload: c.workload,
            min_ratio: None,
            max_ratio: None,
            min: None,
            max: None,
            stat: c.stat,
        };
        match c.bound {
            Bound::MinRatio(v) => r.min_ratio = Some(v),
            Bound::MaxRatio(v) => r.max_ratio = Some(v),
            Bound::Min(v) => r.min = Some(v),
            Bound::Max(v) => r.max = Some(v),
        }
        r
    }
}

impl Check {
    /// Whether `value` (a ratio for ratio bounds, else the statistic in the
    /// metric's unit, `threshold` already resolved) passes.
    pub fn passes(&self, value: f64, threshold: f64) -> bool {
        match self.bound {
            Bound::MinRatio(_) | Bound::Min(_) => value >= threshold,
            Bound::MaxRatio(_) | Bound::Max(_) => value <= threshold,
        }
    }

    /// True for `min_ratio` / `max_ratio` checks.
    pub fn is_ratio(&self) -> bool {
        matches!(self.bound, Bound::MinRatio(_) | Bound::MaxRatio(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::metric::lookup;

    #[test]
    fn thresholds_resolve_in_the_metric_unit() {
        let pss = lookup("pss_peak_bytes").unwrap();
        assert_eq!(
            Threshold::Text("200MiB".into()).value_for(&pss),
            Ok(200.0 * 1024.0 * 1024.0)
        );
        let p99 = lookup("latency_p99_us").unwrap();
        assert_eq!(Threshold::Text("5ms".into()).value_for(&p99), Ok(5000.0));
        let wall = lookup("wall_time_s").unwrap();
        assert_eq!(Threshold::Text("1500ms".into()).value_for(&wall), Ok(1.5));
        let rps = lookup("requests_per_second").unwrap();
        assert_eq!(Threshold::Number(1000.0).value_for(&rps), Ok(1000.0));
        let err = Threshold::Text("fast".into()).value_for(&rps).unwrap_err();
        assert_eq!(
            err,
            "expected a number for `requests_per_second`, got `fast`"
        );
        let err = Threshold::Text("lots".into()).value_for(&pss).unwrap_err();
        assert!(
            err.ends_with("(the metric `pss_peak_bytes` is a size)"),
            "{err}"
        );
    }

    #[test]
    fn exactly_one_bound() {
        let err = serde_json::from_str::<Check>(r#"{"metric":"m","min":1,"max":2}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("needs exactly one of `min_ratio`, `max_ratio`, `min` or `max` (found 2)"),
            "{err}"
        );
        let c: Check = serde_json::from_str(r#"{"metric":"m","min_ratio":1.05}"#).unwrap();
        assert_eq!(c.bound, Bound::MinRatio(1.05));
        assert!(c.is_ratio());
        assert!(c.passes(1.06, 1.05) && !c.passes(1.04, 1.05));
        let c: Check =
            serde_json::from_str(r#"{"metric":"m","max":"200MiB","stat":"max"}"#).unwrap();
        assert_eq!(c.bound, Bound::Max(Threshold::Text("200MiB".into())));
        assert!(c.passes(100.0, 200.0) && !c.passes(201.0, 200.0));
    }

    #[test]
    fn stat_with_a_ratio_is_refused() {
        let err = serde_json::from_str::<Check>(r#"{"metric":"m","min_ratio":1.0,"stat":"max"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ratios always compare geometric means"),
            "{err}"
        );
    }
}
