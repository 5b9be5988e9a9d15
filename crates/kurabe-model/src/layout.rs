//! What a stored experiment's plan says about reading its runs: the
//! order of variants and workloads, the baseline, the noise bands.
//!
//! The store reads it from the plan text once, when it loads an
//! experiment ([`crate::record::Experiment::layout`]), so the report, the
//! history and `kurabe check` are handed these typed facts and never parse
//! the plan again. Owns the facts and their defaults; must not parse text
//! or decide a verdict. Pure data, no I/O.

use std::collections::BTreeMap;

use crate::plan::Plan;
use crate::stats::DEFAULT_NOISE_BAND;

/// A plan's order, baseline and noise bands.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Variant names, resolved (matrix combinations expanded), plan order.
    pub variants: Vec<String>,
    /// Workload names, plan order.
    pub workloads: Vec<String>,
    /// The declared baseline, else the first variant.
    pub baseline: Option<String>,
    /// The plan's noise band for every metric it does not name (0.02 = ±2 %).
    pub noise_band: f64,
    /// Per-metric noise bands.
    pub noise_bands: BTreeMap<String, f64>,
}

impl Default for Layout {
    /// No order, no baseline, the default band for every metric.
    fn default() -> Self {
        Layout {
            variants: Vec::new(),
            workloads: Vec::new(),
            baseline: None,
            noise_band: DEFAULT_NOISE_BAND,
            noise_bands: BTreeMap::new(),
        }
    }
}

impl Layout {
    /// The layout of `plan`.
    pub fn of(plan: &Plan) -> Layout {
        Layout {
            variants: plan
                .resolved_variants()
                .into_iter()
                .map(|v| v.name)
                .collect(),
            workloads: plan.workloads.iter().map(|w| w.name.clone()).collect(),
            baseline: plan.baseline_name(),
            noise_band: plan.noise_band.as_ref().map_or(DEFAULT_NOISE_BAND, |f| f.0),
            noise_bands: plan
                .noise_bands
                .iter()
                .map(|(m, f)| (m.clone(), f.0))
                .collect(),
        }
    }

    /// Noise band of `metric`: its own, else the plan's.
    pub fn noise_band_for(&self, metric: &str) -> f64 {
        self.noise_bands
            .get(metric)
            .copied()
            .unwrap_or(self.noise_band)
    }
}

/// The noise band of `metric` under `layout`, the default without one.
pub fn noise_band_for(layout: Option<&Layout>, metric: &str) -> f64 {
    layout.map_or(DEFAULT_NOISE_BAND, |l| l.noise_band_for(metric))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_fall_back_from_the_metric_to_the_plan_to_the_default() {
        let l = Layout {
            noise_band: 0.05,
            noise_bands: [("latency_p99_us".to_owned(), 0.1)].into(),
            ..Layout::default()
        };
        assert_eq!(l.noise_band_for("latency_p99_us"), 0.1);
        assert_eq!(l.noise_band_for("requests_per_second"), 0.05);
        assert_eq!(noise_band_for(Some(&l), "latency_p99_us"), 0.1);
        assert_eq!(noise_band_for(None, "x"), DEFAULT_NOISE_BAND);
    }
}
