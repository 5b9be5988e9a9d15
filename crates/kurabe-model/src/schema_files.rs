//! The JSON Schemas of kurabe's JSON outputs: which record type becomes
//! which committed file under `schema/`.
//!
//! Owns the list of generated schemas ([`GENERATED`]). Must not do I/O
//! outside its tests: the tests compare the committed files with what the
//! types generate, and rewrite them with
//! `UPDATE_SCHEMAS=1 cargo test -p kurabe-model schema`. Every file under
//! `schema/` is listed here: none is kept by hand. How a type becomes a
//! schema is [`crate::schema`]'s.

use serde_json::Value;

use crate::schema::schema_of;

/// A schema generator, called with its file name (which goes into `$id`).
pub type Generator = fn(&str) -> Value;

/// The generated schemas: file name under `schema/` and its generator.
pub const GENERATED: &[(&str, Generator)] = &[
    (
        "bisect-report.schema.json",
        schema_of::<crate::stats::bisect::BisectReport>,
    ),
    (
        "capacity-report.schema.json",
        schema_of::<crate::capacity::CapacityReport>,
    ),
    (
        "check.schema.json",
        schema_of::<crate::history::CheckReport>,
    ),
    (
        "cmd-export.schema.json",
        schema_of::<crate::bench::CmdExport>,
    ),
    (
        "experiment-report.schema.json",
        schema_of::<crate::experiment::ExperimentReport>,
    ),
    (
        "history.schema.json",
        schema_of::<crate::history::HistoryReport>,
    ),
    (
        "http-compare.schema.json",
        schema_of::<crate::http::HttpCompare>,
    ),
    (
        "http-report.schema.json",
        schema_of::<crate::http::HttpReport>,
    ),
    ("load-spec.schema.json", schema_of::<crate::load::LoadSpec>),
    (
        "mem-report.schema.json",
        schema_of::<crate::probe::MemReport>,
    ),
    (
        "noise-report.schema.json",
        schema_of::<crate::noise::NoiseReport>,
    ),
    (
        "results-export.schema.json",
        schema_of::<crate::record::Export>,
    ),
    (
        "run-detail.schema.json",
        schema_of::<crate::run_detail::RunDetail>,
    ),
    (
        "system-compare.schema.json",
        schema_of::<crate::system::SystemCompare>,
    ),
    (
        "system-report.schema.json",
        schema_of::<crate::system::SystemReport>,
    ),
    (
        "watch-report.schema.json",
        schema_of::<crate::probe::WatchReport>,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Fails when a committed schema differs from what the types generate;
    /// `UPDATE_SCHEMAS=1` writes the generated ones instead.
    #[test]
    fn committed_schemas_are_what_the_types_generate() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema");
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
        for (file, gen) in GENERATED {
            let path = dir.join(file);
            let want = gen(file);
            if update {
                let text = serde_json::to_string_pretty(&want).unwrap() + "\n";
                std::fs::write(&path, text).unwrap();
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let have: Value = serde_json::from_str(&text).unwrap();
            assert!(
                have == want,
                "{} differs from what the record types generate; run \
                 `UPDATE_SCHEMAS=1 cargo test -p kurabe-model schema` and commit it",
                path.display()
            );
        }
    }

    /// A schema file nobody generates would be hand-kept again.
    #[test]
    fn every_committed_schema_is_generated() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                GENERATED.iter().any(|(file, _)| *file == name),
                "schema/{name} is not in GENERATED: generate it from its record type"
            );
        }
    }
}
