//! JSON: any report record as it is, pretty-printed, one trailing newline,
//! with binary floating-point noise rounded away (`102.84499999999997` is
//! written `102.845`): every float keeps [`SIGNIFICANT_DIGITS`], more than
//! any measurement here resolves. Field order stays the record's own.
//!
//! The shapes are the `schema/*.schema.json` files; tests validate real
//! output against them.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::Render;

/// JSON renderer, for every report kind (each is a serde record).
pub struct Json;

/// Significant decimal digits kept in every JSON float.
pub const SIGNIFICANT_DIGITS: usize = 12;

impl<T: Serialize + ?Sized> Render<T> for Json {
    fn render(&self, report: &T, out: &mut dyn Write) -> io::Result<()> {
        let mut ser =
            serde_json::Serializer::with_formatter(&mut *out, Rounding(PrettyFormatter::new()));
        report.serialize(&mut ser)?;
        writeln!(out)
    }
}

/// `v` rounded to [`SIGNIFICANT_DIGITS`] (non-finite values unchanged).
pub fn round(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    format!("{v:.prec$e}", prec = SIGNIFICANT_DIGITS - 1)
        .parse()
        .unwrap_or(v)
}

/// serde_json's pretty layout with floats passed through [`round`].
struct Rounding<'a>(PrettyFormatter<'a>);

impl Formatter for Rounding<'_> {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        self.0.write_f64(w, round(v))
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        self.0.write_f64(w, round(f64::from(v)))
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::{mixed_verdicts_experiment, sample_experiment};
    use kurabe_model::experiment::ExperimentReport;
    use std::path::Path;

    #[test]
    fn output_validates_against_the_committed_schema_and_reads_back() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schema/experiment-report.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Verdict shapes: better/worse with a failed run, then too few runs,
        // then within noise settled and inconclusive, and an unknown metric.
        let full = sample_experiment();
        let mut short = sample_experiment();
        short.runs.truncate(5);
        let mixed = mixed_verdicts_experiment();
        let mut report = experiment_report(&full);
        for e in [&full, &short, &mixed] {
            report = experiment_report(e);
            let mut out = Vec::new();
            Json.render(&report, &mut out).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let errors = kurabe_testkit::schema::violations(&schema, &value);
            assert!(errors.is_empty(), "{errors:#?}");
            // Our own output reads back into the typed model (floats to the last bit aside).
            let back: ExperimentReport = serde_json::from_value(value).unwrap();
            assert_eq!(
                back.workloads[0].metrics[0].versus_baseline[0].phrase,
                report.workloads[0].metrics[0].versus_baseline[0].phrase
            );
            assert_eq!(back.failures, report.failures);
        }
        let text = serde_json::to_string(&experiment_report(&mixed)).unwrap();
        assert!(
            text.contains(r#""kind":"inconclusive","within_noise":true,"runs_needed":"#),
            "{text}"
        );
        // And the schema rejects what it should.
        let mut broken = serde_json::to_value(&report).unwrap();
        broken["workloads"][0]["metrics"][0]["unit"] = "furlongs".into();
        assert!(!kurabe_testkit::schema::violations(&schema, &broken).is_empty());
        broken = serde_json::to_value(&report).unwrap();
        broken["surprise"] = 1.into();
        assert!(!kurabe_testkit::schema::violations(&schema, &broken).is_empty());
    }

    #[test]
    fn floats_lose_their_binary_noise_only() {
        let out = crate::to_string(
            &Json,
            &serde_json::json!({"z": 102.84499999999997, "a": 0.1 + 0.2, "n": 3, "f": 1.5e-7}),
        );
        assert_eq!(
            out,
            "{\n  \"a\": 0.3,\n  \"f\": 1.5e-7,\n  \"n\": 3,\n  \"z\": 102.845\n}\n"
        );
        assert_eq!(round(0.362919306), 0.362919306);
        assert_eq!(round(-1.0 / 3.0), -0.333333333333);
    }
}
