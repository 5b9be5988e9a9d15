//! Renderers of `kurabe system` records: the UnixBench-style report and
//! the comparison of two, as text ([`crate::Terminal`]) and Markdown
//! ([`crate::Markdown`]); JSON is [`crate::Json`].
//!
//! The text layout follows UnixBench's own report line for line (result
//! block `%-40s %12.1f %-5s (%.1f s, %d samples)`, then the BASELINE /
//! RESULT / INDEX table and the "System Benchmarks Index Score" line), so a
//! reader of one reads the other — and `kurabe system import` reads kurabe's
//! text back. kurabe's additions go at the end of lines (the ± spread) or on
//! lines of their own (the score's interval).

mod markdown;
mod text;

use kurabe_model::stats::Verdict;

use crate::words;
use kurabe_model::system::{CompareRow, SystemTest};

/// The rule between UnixBench's result blocks.
const RULE: &str = "------------------------------------------------------------------------";

pub(super) fn copies_text(n: u32) -> String {
    if n == 1 {
        "1 parallel copy".into()
    } else {
        format!("{n} parallel copies")
    }
}

pub(super) fn pct(lo: f64, hi: f64, mid: f64) -> f64 {
    (hi - lo) / 2.0 / mid * 100.0
}

pub(super) fn ci_text(t: &SystemTest) -> String {
    match (t.ci95_low, t.ci95_high) {
        (Some(lo), Some(hi)) => format!("±{:.1} %", pct(lo, hi, t.result)),
        _ if t.error.is_some() => "failed".into(),
        _ => "—".into(),
    }
}

/// A comparison row's verdict with its power (`better (could detect ≥
/// 1.2 %)`, `within noise: no change larger than 1.5 %`); its reason is a note.
pub(super) fn verdict_cell(r: &CompareRow) -> String {
    let mde = r.detectable_change_pct;
    let power = match r.verdict {
        Verdict::Better | Verdict::Worse => words::could_detect(mde),
        Verdict::WithinNoise => words::no_change_larger(r.ratio_ci95_low, r.ratio_ci95_high, mde),
        _ => String::new(),
    };
    format!("{}{power}", verdict_text(r.verdict))
}

/// A comparison row's verdict in one word or two.
fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::WithinNoise => "within noise",
        Verdict::Inconclusive { .. } => "inconclusive",
        Verdict::NoInterval { .. } => "no verdict",
    }
}

pub(super) fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "---".into())
}

pub(super) fn ratio_cells(r: &CompareRow) -> (String, String) {
    let ratio = r
        .ratio
        .map(|x| format!("{x:.3}"))
        .unwrap_or_else(|| "---".into());
    let ci = match (r.ratio_ci95_low, r.ratio_ci95_high) {
        (Some(lo), Some(hi)) => format!("[{lo:.3}, {hi:.3}]"),
        _ => "---".into(),
    };
    (ratio, ci)
}

#[cfg(test)]
mod tests {
    use crate::{to_string, Json, Markdown, Terminal};

    /// Snapshots over the fixtures (`testdata/system*.json`).
    #[test]
    fn snapshots() {
        let r = crate::fixtures::system();
        let c = crate::fixtures::system_compare();
        let text = Terminal { color: false };
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!("system_text", to_string(&text, &r));
            insta::assert_snapshot!("system_markdown", to_string(&Markdown, &r));
            insta::assert_snapshot!("system_compare_text", to_string(&text, &c));
            insta::assert_snapshot!("system_compare_markdown", to_string(&Markdown, &c));
        });
        let back: kurabe_model::system::SystemReport =
            serde_json::from_str(&to_string(&Json, &r)).unwrap();
        assert_eq!(back, r);
    }

    /// The comparison fits an 80-column terminal, as the other text reports do.
    #[test]
    fn comparison_text_fits_80_columns() {
        let c = crate::fixtures::system_compare();
        let text = to_string(&Terminal { color: false }, &c);
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        assert!(text.contains("dhry2reg "), "{text}");
    }

    /// `kurabe system import` reads kurabe's own text back.
    #[test]
    fn text_reads_back_through_the_importer() {
        let r = crate::fixtures::system();
        let back =
            kurabe_system::import::parse(&to_string(&Terminal { color: false }, &r)).unwrap();
        assert_eq!(back.runs.len(), r.runs.len());
        assert!((back.runs[0].tests[1].result - 1005.0).abs() < 0.05);
        assert_eq!(back.runs[0].tests[0].name, r.runs[0].tests[0].name);
    }
}
