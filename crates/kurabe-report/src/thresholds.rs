//! A plan's thresholds (`http = { thresholds = […] }`) per variant: each
//! successful run carries its own judged thresholds (the engine judged
//! them, as for `kurabe http --threshold`); a variant passes a threshold
//! when all its runs did, and shows its worst run's value.
//!
//! Owns gathering them from stored runs, their lines in text and Markdown,
//! and the one line naming the failures. Must not judge a run (the engine
//! did) or pick the exit status (the binary's).

use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, ThresholdVerdict, VariantThresholds};
use kurabe_model::notice::Notice;
use kurabe_model::record::StoredRun;
use kurabe_model::threshold::{Op, Threshold, ThresholdResult};

/// The thresholds of each variant in `variants` over its successful runs
/// `ok`; empty when the runs judged none.
pub(crate) fn variant_thresholds(variants: &[String], ok: &[&StoredRun]) -> Vec<VariantThresholds> {
    variants
        .iter()
        .filter_map(|v| {
            let judged: Vec<&[ThresholdResult]> = ok
                .iter()
                .filter(|r| &r.run.variant == v)
                .filter_map(|r| r.run.record.as_ref()?.http())
                .map(|h| &h.thresholds[..])
                .filter(|t| !t.is_empty())
                .collect();
            let first = judged.first()?;
            let thresholds = (0..first.len())
                .map(|i| verdict(judged.iter().filter_map(|t| t.get(i))))
                .collect();
            Some(VariantThresholds {
                variant: v.clone(),
                runs: judged.len() as u32,
                thresholds,
            })
        })
        .collect()
}

/// One threshold over its runs' results: the worst of the failing ones
/// (of all when none failed), by the comparison's direction.
pub(crate) fn verdict<'a>(results: impl Iterator<Item = &'a ThresholdResult>) -> ThresholdVerdict {
    let results: Vec<&ThresholdResult> = results.collect();
    let failed: Vec<&ThresholdResult> = results.iter().copied().filter(|r| !r.pass).collect();
    let pool = if failed.is_empty() { &results } else { &failed };
    let op = pool
        .first()
        .and_then(|r| r.text.parse::<Threshold>().ok())
        .map(|t| t.op);
    let worse = |a: &&ThresholdResult, b: &&ThresholdResult| match op {
        Some(Op::Gt | Op::Ge) => b.measured.total_cmp(&a.measured),
        _ => a.measured.total_cmp(&b.measured),
    };
    let worst = pool.iter().copied().max_by(worse).expect("a judged run");
    ThresholdVerdict {
        text: worst.text.clone(),
        measured: worst.measured,
        shown: worst.shown.clone(),
        pass: failed.is_empty(),
        runs_failed: failed.len() as u32,
    }
}

/// `PASS`/`FAIL`, the variant, the threshold and the worst value, with
/// how many runs failed; `escape` makes text safe for the output.
fn lines(v: &VariantThresholds, escape: &dyn Fn(&str) -> String) -> Vec<String> {
    let width = v.thresholds.iter().map(|t| t.text.len()).max().unwrap_or(0);
    v.thresholds
        .iter()
        .map(|t| {
            let verdict = if t.pass { "PASS" } else { "FAIL" };
            let mut line = format!(
                "{verdict}  {}  {:<width$}  {}",
                escape(&v.variant),
                escape(&t.text),
                escape(&t.shown)
            );
            if v.runs > 1 {
                line.push_str(&format!("  (worst of {} runs", v.runs));
                if t.runs_failed > 0 {
                    line.push_str(&format!("; failed in {}", t.runs_failed));
                }
                line.push(')');
            }
            line
        })
        .collect()
}

/// The text section of a workload's thresholds (nothing without).
pub(crate) fn text(
    vs: &[VariantThresholds],
    escape: &dyn Fn(&str) -> String,
    out: &mut dyn Write,
) -> io::Result<()> {
    section(
        vs,
        escape,
        out,
        ("  thresholds (each run judged):\n", "    "),
    )
}

/// The Markdown list of a workload's thresholds (nothing without).
pub(crate) fn markdown(
    vs: &[VariantThresholds],
    escape: &dyn Fn(&str) -> String,
    out: &mut dyn Write,
) -> io::Result<()> {
    section(
        vs,
        escape,
        out,
        ("\n**Thresholds** (each run judged):\n\n", "- "),
    )
}

/// `vs`' lines under `heading`, each after `lead` (nothing without any).
fn section(
    vs: &[VariantThresholds],
    escape: &dyn Fn(&str) -> String,
    out: &mut dyn Write,
    (heading, lead): (&str, &str),
) -> io::Result<()> {
    if vs.is_empty() {
        return Ok(());
    }
    write!(out, "{heading}")?;
    for line in vs.iter().flat_map(|v| lines(v, escape)) {
        writeln!(out, "{lead}{line}")?;
    }
    Ok(())
}

/// The notice naming every failed threshold ("2 of 3 thresholds failed:
/// http/b 'p(50)<1ms' (worst 5.3ms), …"), or `None` when every threshold
/// of every variant passed.
pub fn failed_line(r: &ExperimentReport) -> Option<Notice> {
    failed_of(
        r.workloads
            .iter()
            .map(|w| (w.name.as_str(), &w.thresholds[..])),
    )
}

/// [`failed_line`] of each workload's (name, variants' thresholds).
pub fn failed_of<'a>(
    workloads: impl Iterator<Item = (&'a str, &'a [VariantThresholds])>,
) -> Option<Notice> {
    let all: Vec<(&str, &str, &ThresholdVerdict)> = workloads
        .flat_map(|(w, vs)| {
            vs.iter()
                .flat_map(move |v| v.thresholds.iter().map(move |t| (w, v.variant.as_str(), t)))
        })
        .collect();
    let failed: Vec<(String, String, String)> = all
        .iter()
        .filter(|(_, _, t)| !t.pass)
        .map(|(w, v, t)| (format!("{w}/{v}"), t.text.clone(), t.shown.clone()))
        .collect();
    let of = all.len();
    (!failed.is_empty()).then_some(Notice::VariantThresholdsFailed { failed, of })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(text: &str, measured: f64, pass: bool) -> ThresholdResult {
        ThresholdResult {
            text: text.into(),
            measured,
            shown: format!("{measured}"),
            pass,
            aborted: false,
        }
    }

    #[test]
    fn the_worst_failing_run_is_shown_by_the_comparisons_direction() {
        let lt = [
            result("p(95)<1s", 0.5, true),
            result("p(95)<1s", 3.0, false),
            result("p(95)<1s", 2.0, false),
        ];
        let v = verdict(lt.iter());
        assert_eq!((v.measured, v.pass, v.runs_failed), (3.0, false, 2));
        let gt = [result("rate>10", 50.0, true), result("rate>10", 20.0, true)];
        let v = verdict(gt.iter());
        assert_eq!((v.measured, v.pass, v.runs_failed), (20.0, true, 0));
    }

    #[test]
    fn lines_say_the_variant_the_value_and_the_failed_runs() {
        let v = VariantThresholds {
            variant: "b".into(),
            runs: 3,
            thresholds: vec![ThresholdVerdict {
                text: "p(50)<1ms".into(),
                measured: 0.005,
                shown: "5.0ms".into(),
                pass: false,
                runs_failed: 2,
            }],
        };
        let l = lines(&v, &|s| s.to_owned());
        assert_eq!(
            l,
            ["FAIL  b  p(50)<1ms  5.0ms  (worst of 3 runs; failed in 2)"]
        );
    }
}
