//! CSV: one row per workload × metric × variant with the summary and, for
//! non-baseline variants, the comparison with the baseline. Raw numbers in
//! the metric's unit (named in the `unit` column), for spreadsheets.
//!
//! Every text field goes through [`crate::escape::csv`]: quoted per RFC
//! 4180, control characters visible, formula-like cells neutralised.

use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, MetricReport, VariantMetric, WorkloadReport};
use kurabe_model::stats::Unit;

use crate::escape::csv as field;
use crate::Render;

/// CSV renderer.
pub struct Csv;

const HEADER: &str = "experiment,workload,metric,unit,variant,is_baseline,n,median,mean,geometric_mean,stdev,cv,min,max,ratio,ratio_low,ratio_high,verdict,detectable_change_pct";

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

fn unit_name(u: Unit) -> String {
    serde_json::to_value(u)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A variant's row of one metric: its summary and its comparison with the baseline.
fn row(
    r: &ExperimentReport,
    w: &WorkloadReport,
    m: &MetricReport,
    v: &VariantMetric,
) -> [String; 19] {
    let s = v.summary;
    let vs = crate::versus_of(m, &v.variant);
    let c = vs.map(|x| x.comparison);
    [
        field(&r.id),
        field(&w.name),
        field(&m.name),
        unit_name(m.unit),
        field(&v.variant),
        (crate::baseline_of(r, w) == Some(v.variant.as_str())).to_string(),
        s.map(|s| s.n.to_string()).unwrap_or_else(|| "0".into()),
        opt(s.map(|s| s.median)),
        opt(s.map(|s| s.mean)),
        opt(s.and_then(|s| s.geometric_mean)),
        opt(s.and_then(|s| s.stdev)),
        opt(s.and_then(|s| s.cv)),
        opt(s.map(|s| s.min)),
        opt(s.map(|s| s.max)),
        opt(c.and_then(|c| c.ratio)),
        opt(c.and_then(|c| c.ratio_low)),
        opt(c.and_then(|c| c.ratio_high)),
        field(vs.map_or("", |x| x.phrase.as_str())),
        opt(c.and_then(|c| c.detectable_change_pct)),
    ]
}

impl Render<ExperimentReport> for Csv {
    fn render(&self, r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{HEADER}")?;
        for w in &r.workloads {
            for m in &w.metrics {
                for v in &m.variants {
                    writeln!(out, "{}", row(r, w, m, v).join(","))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::sample_experiment;

    #[test]
    fn one_row_per_workload_metric_variant() {
        let mut e = sample_experiment();
        for r in &mut e.runs {
            r.run.variant = r.run.variant.replace("big heap", "big, \"heap\"");
        }
        let mut out = Vec::new();
        Csv.render(&experiment_report(&e), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 1 + 3 * 2);
        assert!(
            lines[1].starts_with("e3,index page,requests_per_second,per_second,ruby,true,3,106.2,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains(",\"ruby + big, \"\"heap\"\"\",false,3,125.3,"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].contains(",\"1.18× [1.15, 1.21] faster (could detect ≥ 3.4 %)\",3.355"),
            "{}",
            lines[2]
        );
    }
}
