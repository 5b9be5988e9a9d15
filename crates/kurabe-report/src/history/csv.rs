//! CSV: one row per point of every series, with the change that starts
//! there (if any) beside it.

use std::io::{self, Write};

use kurabe_model::history::HistoryReport;

use super::text::verdict_word;
use crate::escape::csv as esc;
use crate::Render;

/// CSV history renderer.
pub struct HistoryCsv;

impl Render<HistoryReport> for HistoryCsv {
    fn render(&self, r: &HistoryReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "workload,variant,metric,unit,experiment,rev,commit,started_at,host_fingerprint,runs,value,change_ratio,change_low,change_high,change_verdict,change_detectable_pct")?;
        for s in &r.series {
            for (i, p) in s.points.iter().enumerate() {
                let c = s.changes.iter().find(|c| c.index == i);
                let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    esc(&s.workload),
                    esc(&s.variant),
                    esc(&s.metric),
                    s.unit.symbol(),
                    p.experiment,
                    esc(&p.rev),
                    p.commit.as_deref().unwrap_or(""),
                    p.started_at,
                    p.host_fingerprint.as_deref().unwrap_or(""),
                    p.samples.len(),
                    p.value,
                    num(c.and_then(|c| c.ratio)),
                    num(c.and_then(|c| c.interval).map(|i| i[0])),
                    num(c.and_then(|c| c.interval).map(|i| i[1])),
                    c.map_or("", |c| verdict_word(&c.verdict)),
                    num(c.and_then(|c| c.detectable_change_pct)),
                )?;
            }
        }
        Ok(())
    }
}
