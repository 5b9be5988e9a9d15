//! The JSON Schemas of kurabe's JSON outputs, generated from the record
//! types with `schemars`.
//!
//! Owns the list of generated schemas ([`GENERATED`]) and how a record type
//! becomes the committed file under `schema/`. Must not do I/O: the test
//! below compares the committed files with what the types generate, and
//! rewrites them with `UPDATE_SCHEMAS=1 cargo test -p kurabe-model schema`.
//! Schemas not listed here are still kept by hand.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// Base of every schema's `$id`.
const ID_BASE: &str = "https://example.invalid/kurabe/schema/";

/// A schema generator, called with its file name (which goes into `$id`).
pub type Generator = fn(&str) -> Value;

/// The generated schemas: file name under `schema/` and its generator.
pub const GENERATED: &[(&str, Generator)] = &[(
    "system-compare.schema.json",
    schema_of::<crate::system::SystemCompare>,
)];

/// The draft 2020-12 schema of `T`, with `$id` naming `file`.
pub fn schema_of<T: JsonSchema>(file: &str) -> Value {
    let root = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = root.to_value();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("$id".into(), Value::String(format!("{ID_BASE}{file}")));
    }
    v
}

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
}
