//! JSON: the report model as it is, pretty-printed, one trailing newline.
//!
//! The shape is `schema/experiment-report.schema.json`; a test validates
//! real output against it.

use std::io::{self, Write};

use kurabe_model::experiment::ExperimentReport;

use crate::Renderer;

/// JSON renderer.
pub struct Json;

impl Renderer for Json {
    fn render(&self, report: &ExperimentReport, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment_report;
    use crate::testdata::{mixed_verdicts_experiment, sample_experiment};
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
}
