//! Markdown: the terminal table as a GitHub table, every metric in a
//! collapsible detail table, failed runs listed — ready to paste into an
//! issue or a blog post, the medium the seed experiments were published in.
//!
//! Every user string goes through [`escape`]: GitHub renders inline HTML,
//! so a variant called `<script>` must arrive as text.

use std::io::{self, Write};

use kurabe_model::experiment::{ExperimentReport, MetricReport, VariantMetric, WorkloadReport};

use crate::escape::markdown as escape;
use crate::{
    baseline_of, cell, headline_metrics, host_line, legend, status_line, variant_title, versus_of,
    words, Render,
};

/// Markdown renderer.
pub struct Markdown;

fn headline_table(r: &ExperimentReport, w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    let metrics = headline_metrics(w);
    write!(out, "| variant |")?;
    for m in &metrics {
        write!(out, " {} |", escape(&words::label(&m.name)))?;
    }
    write!(out, "\n|---|")?;
    for _ in &metrics {
        write!(out, "---:|")?;
    }
    writeln!(out)?;
    for v in &w.variants {
        write!(out, "| {} |", escape(&variant_title(r, w, v)))?;
        for m in &metrics {
            write!(out, " {} |", escape(&cell(m, v)))?;
        }
        writeln!(out)?;
    }
    versus_rows(r, w, &metrics, out)
}

/// A row per variant but the baseline, in italics: its phrase per metric.
fn versus_rows(
    r: &ExperimentReport,
    w: &WorkloadReport,
    metrics: &[&MetricReport],
    out: &mut dyn Write,
) -> io::Result<()> {
    let base = baseline_of(r, w).unwrap_or_default();
    for v in w.variants.iter().filter(|v| *v != base) {
        write!(out, "| *{} vs {}* |", escape(v), escape(base))?;
        for m in metrics {
            let p = versus_of(m, v).map_or_else(|| "–".to_owned(), |x| x.phrase.clone());
            write!(out, " {} |", escape(&p))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn detail_table(w: &WorkloadReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<details><summary>All metrics of {}</summary>\n",
        escape(&w.name)
    )?;
    writeln!(
        out,
        "| metric | variant | n | median | geometric mean | CV | vs baseline |\n|---|---|---:|---:|---:|---:|---|"
    )?;
    for m in &w.metrics {
        for v in &m.variants {
            detail_row(m, v, out)?;
        }
    }
    writeln!(out, "\n</details>")
}

/// A variant's summary of one metric; nothing when it has no values.
fn detail_row(m: &MetricReport, v: &VariantMetric, out: &mut dyn Write) -> io::Result<()> {
    let Some(s) = v.summary else { return Ok(()) };
    let vs = versus_of(m, &v.variant).map_or_else(String::new, |x| x.phrase.clone());
    let geometric = s
        .geometric_mean
        .map_or_else(|| "–".into(), |g| words::value(m.unit, g));
    writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} |",
        escape(&m.name),
        escape(&v.variant),
        s.n,
        escape(&words::value(m.unit, s.median)),
        escape(&geometric),
        escape(&words::spread(s.cv)),
        escape(&vs)
    )
}

/// The failed runs with the tail of their error output; nothing when none failed.
fn failures(r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
    if r.failures.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n### Failed runs\n")?;
    for f in &r.failures {
        let tail = f.error_tail.as_deref().unwrap_or("(no error output)");
        writeln!(
            out,
            "- {} · {} · round {}: {}",
            escape(&f.variant),
            escape(&f.workload),
            f.round + 1,
            escape(tail.trim())
        )?;
    }
    Ok(())
}

impl Render<ExperimentReport> for Markdown {
    fn render(&self, r: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "## {}\n", escape(&r.name))?;
        write!(
            out,
            "Experiment {} · {}",
            escape(&r.id),
            escape(&status_line(r))
        )?;
        writeln!(out, " · started {}  ", escape(&r.started_at))?;
        if let Some(h) = host_line(r) {
            writeln!(out, "Host: {}", escape(&h))?;
        }
        for w in &r.workloads {
            writeln!(out, "\n### {}\n", escape(&w.name))?;
            headline_table(r, w, out)?;
            writeln!(out)?;
            detail_table(w, out)?;
            for c in &w.warmup {
                writeln!(out, "\n> **Warm-up:** {}", escape(&crate::words::warmup(c)))?;
            }
            crate::thresholds::markdown(&w.thresholds, &escape, out)?;
            for q in &w.requests {
                let rw = crate::request_workload(w, q);
                writeln!(out, "\n#### {}\n", escape(&rw.name))?;
                headline_table(r, &rw, out)?;
            }
            if let Some(p) = &w.profile {
                crate::profile::write_profile(p, true, out)?;
            }
        }
        failures(r, out)?;
        writeln!(out, "\n{}", legend(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::{mixed_verdicts_experiment, sample_experiment};

    fn render(e: &kurabe_model::record::Experiment) -> String {
        let mut out = Vec::new();
        Markdown.render(&experiment_report(e), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Snapshots under `src/snapshots/`; a changed rendering fails here
    /// until the new output is reviewed (`cargo insta review`, or rerun with
    /// `INSTA_UPDATE=always` and read the diff) and committed.
    #[test]
    fn snapshot() {
        insta::assert_snapshot!("ruby", render(&sample_experiment()));
        insta::assert_snapshot!("every_verdict", render(&mixed_verdicts_experiment()));
    }

    #[test]
    fn user_strings_are_inert() {
        let mut e = sample_experiment();
        for r in &mut e.runs {
            r.run.variant = r
                .run
                .variant
                .replace("big heap", "<script>alert(1)</script> | *x*");
        }
        let md = render(&e);
        assert!(!md.contains("<script>"), "{md}");
        assert!(
            md.contains("&lt;script&gt;alert(1)&lt;/script&gt; \\| \\*x\\*"),
            "{md}"
        );
        // Every table row still has as many cells as its header.
        for line in md.lines().filter(|l| l.starts_with("| ruby")) {
            assert_eq!(line.matches(" |").count(), 4, "{line}");
        }
    }
}
