//! The terminal text of a capacity report: the answer, the settings, and
//! the latency curve (one row per step, sorted by target rate).

use std::io::{self, Write};

use kurabe_model::capacity::{CapacityReport, KEPT_UP};

use super::{answer, curve, latency, slos};
use crate::escape::terminal;
use crate::words::num;
use crate::Render;

/// Seconds as `5s`, `0.5s`, `0.15s`.
fn secs(s: f64) -> String {
    let t = format!("{s:.3}");
    format!("{}s", t.trim_end_matches('0').trim_end_matches('.'))
}

/// Plain text for a terminal.
pub struct CapacityText;

impl Render<CapacityReport> for CapacityText {
    fn render(&self, r: &CapacityReport, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "Capacity of {}", terminal(&r.url))?;
        writeln!(
            out,
            "SLOs: {} (and at least {:.0} % of each step's rate answered)",
            terminal(&slos(r)),
            KEPT_UP * 100.0
        )?;
        writeln!(
            out,
            "Steps: {} each after {} of warm-up, {}/s to {}/s, {} connections",
            secs(r.step_s),
            secs(r.step_warmup_s),
            num(r.start_rate_per_s),
            num(r.max_rate_per_s),
            r.concurrency
        )?;
        writeln!(out)?;
        writeln!(out, "{}", terminal(&answer(r)))?;
        writeln!(out)?;
        writeln!(
            out,
            "Latency curve (from the intended send time, coordinated-omission corrected):"
        )?;
        writeln!(
            out,
            "  {:>6}  {:>10}  {:>10}  {:>9}  {:>9}  {:>7}  result",
            "search", "target/s", "achieved/s", "p50", "p99", "failed"
        )?;
        for s in curve(r) {
            let result = match s.why_failed() {
                None => "pass".to_owned(),
                Some(why) => format!("FAIL  {}", terminal(&why)),
            };
            writeln!(
                out,
                "  {:>6}  {:>10}  {:>10}  {:>9}  {:>9}  {:>6.2}%  {result}",
                s.search + 1,
                num(s.target_per_s),
                num(s.achieved_per_s),
                latency(s.latency_p50_us),
                latency(s.latency_p99_us),
                s.failed_percent,
            )?;
        }
        Ok(())
    }
}
