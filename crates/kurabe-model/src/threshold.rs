//! Thresholds and SLOs on an HTTP load, in k6's notation: `p(95)<200ms`,
//! `p(99.9)<1s`, `failed<1%`, `rate>=1000`, `checks>99%`, scoped to one
//! request name with `p(95){name:checkout}<300ms`, and for a threshold the
//! options `abort` (k6's `abortOnFail`) and `after=DURATION`
//! (`delayAbortEval`) after commas: `p(99)<1s,abort,after=30s`.
//!
//! Owns the one grammar and its parser (the CLI's `--threshold` and
//! `--slo`, plans and `kurabe check` read the same text), and judging a
//! parsed threshold against measured values. Must not measure or print:
//! callers hand in what was measured ([`Measured`]) and render
//! [`ThresholdResult`].

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::quantity::{parse_duration, parse_fraction};

/// What a threshold's text must look like, for errors.
pub const THRESHOLD_EXPECTED: &str = "METRIC[{name:NAME}] OP VALUE[,abort][,after=DURATION] \
with METRIC p(N), avg, min, max, med, failed, rate or checks and OP <, <=, >, >=, == \
(e.g. 'p(95)<200ms', 'failed<1%', 'rate>=1000', 'p(99){name:checkout}<300ms,abort')";

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A latency percentile, 0–100 (`p(95)`; `med` is `p(50)`).
    Percentile(f64),
    /// Mean latency (`avg`).
    Mean,
    /// Smallest latency (`min`).
    Min,
    /// Largest latency (`max`).
    Max,
    /// Failed requests as a fraction of all (`failed`).
    Failed,
    /// Achieved requests per second (`rate`).
    Rate,
    /// Passed response checks as a fraction of all checked (`checks`).
    Checks,
}

impl Measure {
    /// Whether the value is a latency (compared as a duration).
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Measure::Percentile(_) | Measure::Mean | Measure::Min | Measure::Max
        )
    }
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    /// Whether `measured OP bound` holds.
    pub fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::Lt => measured < bound,
            Op::Le => measured <= bound,
            Op::Gt => measured > bound,
            Op::Ge => measured >= bound,
            Op::Eq => measured == bound,
        }
    }
}

/// One threshold (or SLO), parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// What is measured.
    pub measure: Measure,
    /// The request name it applies to; `None`: the whole mix.
    pub name: Option<String>,
    /// The comparison.
    pub op: Op,
    /// The bound: seconds for latencies, a fraction for `failed`/`checks`,
    /// requests per second for `rate`.
    pub value: f64,
    /// End the run as soon as it fails (k6's `abortOnFail`).
    pub abort: bool,
    /// Do not judge an aborting threshold before this much of the run (k6's `delayAbortEval`).
    pub after: Option<Duration>,
    /// The text as given, for reports.
    pub text: String,
}

/// A threshold that does not parse: the token and the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdError {
    /// The whole text.
    pub text: String,
    /// What is wrong, naming the token.
    pub problem: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threshold '{}': {}; expected {THRESHOLD_EXPECTED}",
            self.text, self.problem
        )
    }
}

impl std::error::Error for ThresholdError {}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Threshold, ThresholdError> {
        parse(text).map_err(|problem| ThresholdError {
            text: text.to_owned(),
            problem,
        })
    }
}

/// [`Threshold::from_str`] with the problem alone as the error.
fn parse(text: &str) -> Result<Threshold, String> {
    let mut parts = split_options(text.trim());
    let condition = parts.next().unwrap_or_default();
    let (measure, rest) = measure(condition)?;
    let (name, rest) = scope(rest)?;
    let (op, value_text) = op(rest)?;
    let value = value(measure, value_text.trim())?;
    let mut t = Threshold {
        measure,
        name,
        op,
        value,
        abort: false,
        after: None,
        text: text.trim().to_owned(),
    };
    for opt in parts.map(str::trim) {
        match opt.split_once('=') {
            None if opt == "abort" => t.abort = true,
            Some(("after", d)) => t.after = Some(parse_duration(d.trim())?),
            _ => return Err(format!("unknown option '{opt}' (abort or after=DURATION)")),
        }
    }
    if t.after.is_some() && !t.abort {
        return Err("after= delays an abort: add ,abort".into());
    }
    Ok(t)
}

/// The condition and its options: commas outside `{…}` separate them.
fn split_options(text: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter()
}

/// The metric at the start of `s`, and what follows it.
fn measure(s: &str) -> Result<(Measure, &str), String> {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix("p(") {
        let (n, rest) = rest
            .split_once(')')
            .ok_or("'p(' without its ')': write p(95)")?;
        let p: f64 = n
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| (0.0..=100.0).contains(p))
            .ok_or_else(|| format!("'p({n})': the percentile is a number from 0 to 100"))?;
        return Ok((Measure::Percentile(p), rest));
    }
    let end = s
        .find(|c: char| !c.is_ascii_alphabetic() && c != '_')
        .unwrap_or(s.len());
    let m = match &s[..end] {
        "avg" => Measure::Mean,
        "min" => Measure::Min,
        "max" => Measure::Max,
        "med" => Measure::Percentile(50.0),
        "failed" => Measure::Failed,
        "rate" => Measure::Rate,
        "checks" => Measure::Checks,
        "" => return Err("the metric is missing".into()),
        other => return Err(format!("unknown metric '{other}'")),
    };
    Ok((m, &s[end..]))
}

/// An optional `{name:NAME}` scope.
fn scope(s: &str) -> Result<(Option<String>, &str), String> {
    let s = s.trim_start();
    let Some(rest) = s.strip_prefix('{') else {
        return Ok((None, s));
    };
    let (inner, rest) = rest.split_once('}').ok_or("'{' without its '}'")?;
    let name = inner
        .trim()
        .strip_prefix("name:")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("'{{{inner}}}': the scope is {{name:NAME}}"))?;
    Ok((Some(name.to_owned()), rest))
}

/// The comparison at the start of `s`, and the value after it.
fn op(s: &str) -> Result<(Op, &str), String> {
    let s = s.trim_start();
    for (text, op) in [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
    ] {
        if let Some(rest) = s.strip_prefix(text) {
            return Ok((op, rest));
        }
    }
    let token = s.split_whitespace().next().unwrap_or("");
    Err(format!(
        "'{token}' where a comparison (<, <=, >, >=, ==) belongs"
    ))
}

/// The bound in the metric's unit: a duration, a fraction or a rate.
fn value(m: Measure, v: &str) -> Result<f64, String> {
    if v.is_empty() {
        return Err("the value is missing".into());
    }
    match m {
        _ if m.is_latency() => parse_duration(v).map(|d| d.as_secs_f64()),
        Measure::Failed | Measure::Checks => {
            let f = parse_fraction(v)?;
            (0.0..=1.0)
                .contains(&f)
                .then_some(f)
                .ok_or_else(|| format!("'{v}': a share is from 0% to 100%"))
        }
        _ => v
            .trim_end_matches("/s")
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite() && *r >= 0.0)
            .ok_or_else(|| format!("'{v}': a rate is requests per second, e.g. 1000")),
    }
}

/// What a run measured, for judging thresholds; a closure per request
/// name so callers need not build a map.
pub trait Measured {
    /// The value of `m` for `name` (`None`: the whole mix), in the
    /// threshold's unit; `None` when that name or metric was not measured.
    fn value(&self, m: Measure, name: Option<&str>) -> Option<f64>;
}

/// A threshold (or an SLO) judged on a run: what was measured and whether
/// it held. The record's shape in the http report (`thresholds`) and in a
/// capacity search's steps (`slos`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ThresholdResult {
    /// The threshold as given.
    pub text: String,
    /// What was measured, in the threshold's unit (seconds, a fraction,
    /// requests/s); 0 when nothing was measured.
    pub measured: f64,
    /// The measured value as the threshold writes it (`12.3ms`, `0.10%`),
    /// or why nothing was measured.
    pub shown: String,
    /// Whether it held (never when nothing was measured).
    pub pass: bool,
    /// This threshold failed during the run and ended it (`,abort`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
}

impl Threshold {
    /// Judge against what was measured; `None` when it was not measured
    /// (a name or metric the run does not have: refuse it, never pass it).
    pub fn judge(&self, m: &dyn Measured) -> Option<ThresholdResult> {
        let measured = m.value(self.measure, self.name.as_deref())?;
        Some(ThresholdResult {
            text: self.text.clone(),
            measured,
            shown: self.show(measured),
            pass: self.op.holds(measured, self.value),
            aborted: false,
        })
    }

    /// [`Threshold::judge`], with a failure saying `why` when nothing was
    /// measured (no response, or a name the run did not send).
    pub fn judge_or_fail(&self, m: &dyn Measured, why: &str) -> ThresholdResult {
        self.judge(m).unwrap_or_else(|| ThresholdResult {
            text: self.text.clone(),
            measured: 0.0,
            shown: why.to_owned(),
            pass: false,
            aborted: false,
        })
    }

    /// The measured value written in the threshold's unit (`123.4ms`,
    /// `850µs` below a millisecond, `0.52%`, `1034.1/s`).
    pub fn show(&self, measured: f64) -> String {
        match self.measure {
            m if m.is_latency() && measured < 1e-3 => format!("{:.0}µs", measured * 1e6),
            m if m.is_latency() => format!("{:.1}ms", measured * 1e3),
            Measure::Failed | Measure::Checks => format!("{:.2}%", measured * 100.0),
            _ => format!("{measured:.1}/s"),
        }
    }

    /// The comparison's text (`<`, `>=`, …).
    pub fn op_text(&self) -> &'static str {
        self.op.text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(s: &str) -> String {
        s.parse::<Threshold>().unwrap_err().to_string()
    }

    #[test]
    fn k6s_examples_parse() {
        let p = t("p(95)<200ms");
        assert_eq!(
            (p.measure, p.op, p.value),
            (Measure::Percentile(95.0), Op::Lt, 0.2)
        );
        assert_eq!(t("p(99.9) < 1s").measure, Measure::Percentile(99.9));
        assert_eq!(t("failed<1%").value, 0.01);
        assert_eq!(
            (t("rate>=1000").op, t("rate>=1000").value),
            (Op::Ge, 1000.0)
        );
        assert_eq!(t("checks>99%").value, 0.99);
        assert_eq!(t("med<=5ms").measure, Measure::Percentile(50.0));
        let s = t("p(95){name:checkout}<300ms,abort,after=10s");
        assert_eq!(s.name.as_deref(), Some("checkout"));
        assert!(s.abort);
        assert_eq!(s.after, Some(Duration::from_secs(10)));
    }

    #[test]
    fn bad_text_names_the_token_and_the_grammar() {
        assert!(
            err("p95<1s").contains("unknown metric 'p'"),
            "{}",
            err("p95<1s")
        );
        assert!(err("latency<1s").contains("'latency'"));
        assert!(err("p(101)<1s").contains("0 to 100"));
        assert!(err("p(95)~1s").contains("'~1s'"));
        assert!(err("p(95)<fast").contains("fast"));
        assert!(err("failed<150%").contains("0% to 100%"));
        assert!(err("p(95)<1s,after=5s").contains("add ,abort"));
        assert!(err("p(95){label:x}<1s").contains("{name:NAME}"));
        assert!(err("rate>").contains("missing"));
        assert!(err("x").contains("expected METRIC"));
    }

    struct Fixed;
    impl Measured for Fixed {
        fn value(&self, m: Measure, name: Option<&str>) -> Option<f64> {
            match (m, name) {
                (Measure::Percentile(95.0), None) => Some(0.150),
                (Measure::Failed, None) => Some(0.02),
                _ => None,
            }
        }
    }

    #[test]
    fn judging_passes_fails_and_refuses_what_was_not_measured() {
        let j = t("p(95)<200ms").judge(&Fixed).unwrap();
        assert!(j.pass && j.measured == 0.150 && j.shown == "150.0ms");
        let none = t("p(95){name:nope}<1s").judge_or_fail(&Fixed, "no such name");
        assert!(!none.pass && none.shown == "no such name");
        assert!(!t("failed<1%").judge(&Fixed).unwrap().pass);
        assert!(t("p(95){name:nope}<1s").judge(&Fixed).is_none());
        assert_eq!(t("failed<1%").show(0.02), "2.00%");
        assert_eq!(t("p(95)<1s").show(0.1234), "123.4ms");
        assert_eq!(t("p(95)<1s").show(0.000_85), "850µs");
    }
}
