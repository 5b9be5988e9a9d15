//! JSON: the `kurabe-model` record as is, pretty-printed (schema: `schema/http-report.schema.json`).

use std::io::{self, Write};

use kurabe_model::http::HttpReport;

use super::Render;

/// Pretty JSON renderer.
pub struct Json;

impl Render for Json {
    fn render(&self, report: &HttpReport, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_model() {
        let report = super::super::fixture::report();
        let mut out = Vec::new();
        Json.render(&report, &mut out).unwrap();
        let back: HttpReport = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, report);
    }
}
