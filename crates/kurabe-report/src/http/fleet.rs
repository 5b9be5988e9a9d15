//! The per-worker table of a distributed `kurabe http --workers N` run:
//! one row per share with its own req/s, latency and state, to spot a
//! worker that was itself the bottleneck. Printed after the merged text
//! report (on stderr for the other formats, whose records carry the rows
//! in their `fleet` field).

use std::io::{self, Write};

use kurabe_model::http::{FleetSummary, FleetWorker, HttpReport};

use super::{http_renderer, AbLayout};
use crate::{to_string, Format, Render};

/// A distributed run's report in `format` (shaped by `layout`): the merged
/// record, carrying the worker rows in its `fleet` field, followed by the
/// worker table in text; for the other formats, whose document must stay
/// parseable, the table comes back apart (for stderr).
pub fn fleet_report(
    report: &HttpReport,
    format: Format,
    layout: &AbLayout,
) -> (String, Option<String>) {
    let table = report
        .fleet
        .as_ref()
        .map(|f| to_string(&FleetTable, f))
        .unwrap_or_default();
    let mut doc = to_string(&*http_renderer(format, layout), report);
    if format != Format::Text {
        return (doc, Some(table));
    }
    doc.push('\n');
    doc.push_str(&table);
    (doc, None)
}

/// The worker table (plain text, fixed columns).
#[derive(Debug, Clone, Copy, Default)]
pub struct FleetTable;

impl Render<FleetSummary> for FleetTable {
    fn render(&self, f: &FleetSummary, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Workers (fleet run {}):", f.run_id)?;
        writeln!(
            out,
            "{:>4}  {:<24} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10}  state",
            "slot", "worker", "conc", "complete", "failed", "req/s", "p50 ms", "p99 ms"
        )?;
        f.workers.iter().try_for_each(|w| row(w, out))
    }
}

/// One share: its own figures when merged, else its last progress.
fn row(w: &FleetWorker, out: &mut dyn Write) -> io::Result<()> {
    let ms = |us: Option<u64>| us.unwrap_or(0) as f64 / 1000.0;
    match (w.merged, w.concurrency, w.requests_per_second) {
        (true, Some(conc), Some(rps)) => writeln!(
            out,
            "{:>4}  {:<24} {conc:>6} {:>10} {:>8} {rps:>10.1} {:>10.3} {:>10.3}  {}",
            w.slot,
            w.worker,
            w.complete_requests,
            w.failed_requests,
            ms(w.latency_p50_us),
            ms(w.latency_p99_us),
            w.state
        ),
        _ => writeln!(
            out,
            "{:>4}  {:<24} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10}  {} (last progress {:.1} s: {} completed, {} failed; not merged)",
            w.slot, w.worker, "-", w.complete_requests, w.failed_requests, "-", "-", "-",
            w.state, w.progress_elapsed_s, w.complete_requests, w.failed_requests
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(slot: u32, merged: bool) -> FleetWorker {
        FleetWorker {
            slot,
            worker: format!("w{slot}"),
            state: if merged { "done" } else { "lost" }.into(),
            concurrency: merged.then_some(2),
            complete_requests: 450,
            failed_requests: 1,
            requests_per_second: merged.then_some(150.04),
            latency_p50_us: merged.then_some(14_071),
            latency_p99_us: merged.then_some(389_119),
            merged,
            note: None,
            progress_elapsed_s: 2.26,
        }
    }

    #[test]
    fn merged_and_lost_workers() {
        let f = FleetSummary {
            run_id: 19,
            workers: vec![worker(0, true), worker(1, false)],
            notes: vec![],
        };
        let text = crate::to_string(&FleetTable, &f);
        let want = "\
Workers (fleet run 19):
slot  worker                     conc   complete   failed      req/s     p50 ms     p99 ms  state
   0  w0                            2        450        1      150.0     14.071    389.119  done
   1  w1                            -        450        1          -          -          -  lost (last progress 2.3 s: 450 completed, 1 failed; not merged)
";
        assert_eq!(text, want);
    }
}
