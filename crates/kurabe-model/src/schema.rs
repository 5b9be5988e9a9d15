//! How a record type becomes a JSON Schema with `schemars`: the generator
//! settings ([`schema_of`]) and the field transforms the record types name
//! in their `#[schemars(...)]` attributes ([`nullable`], [`rfc3339`]).
//!
//! Owns the shape rules every generated schema shares (`$id`, closed
//! objects, inlined tagged variants). Must not name any record type: the
//! records depend on this module, and the list of generated files that
//! depends on them is [`crate::schema_files`]. No I/O.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// Base of every schema's `$id`.
const ID_BASE: &str = "https://example.invalid/kurabe/schema/";

/// The draft 2020-12 schema of `T`, with `$id` naming `file`, closed to
/// keys the types do not write (see `close_objects`).
pub fn schema_of<T: JsonSchema>(file: &str) -> Value {
    let root = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = root.to_value();
    let defs = v.get("$defs").cloned().unwrap_or(Value::Null);
    inline_tagged_refs(&mut v, &defs);
    close_objects(&mut v);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("$id".into(), Value::String(format!("{ID_BASE}{file}")));
    }
    v
}

/// Field transform for an `Option` that is always written (as `null` when
/// absent): `#[schemars(required)]` makes schemars describe `T` alone, so
/// this lets `null` back in.
pub fn nullable(schema: &mut schemars::Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = Value::String(std::mem::take(t));
            obj.insert("type".into(), Value::Array(vec![t, "null".into()]));
        }
        Some(Value::Array(ts)) if !ts.contains(&"null".into()) => ts.push("null".into()),
        Some(_) => {}
        None => {
            let inner = Value::Object(std::mem::take(obj));
            let null = serde_json::json!({ "type": "null" });
            obj.insert("anyOf".into(), Value::Array(vec![inner, null]));
        }
    }
}

/// Field transform for a timestamp written as RFC 3339 UTC
/// (`2026-12-01T10:54:54Z`, fractions allowed).
pub fn rfc3339(schema: &mut schemars::Schema) {
    let pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$";
    schema.insert("pattern".into(), pattern.into());
}

/// An internally tagged enum's variant is `$ref` plus the tag's property;
/// merging the referenced object in (properties and `required`) lets
/// [`close_objects`] close it without rejecting the tag.
fn inline_tagged_refs(v: &mut Value, defs: &Value) {
    match v {
        Value::Object(obj) => {
            if obj.contains_key("properties") {
                let target = obj.get("$ref").and_then(Value::as_str);
                let name = target.and_then(|r| r.strip_prefix("#/$defs/"));
                if let Some(def) = name.and_then(|n| defs.get(n)).cloned() {
                    obj.remove("$ref");
                    merge_object(obj, &def);
                }
            }
            obj.values_mut().for_each(|x| inline_tagged_refs(x, defs));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| inline_tagged_refs(x, defs)),
        _ => {}
    }
}

/// Adds `def`'s properties and required names to `obj`.
fn merge_object(obj: &mut serde_json::Map<String, Value>, def: &Value) {
    for key in ["properties", "required"] {
        let Some(extra) = def.get(key) else { continue };
        let slot = obj.entry(key).or_insert_with(|| extra.clone());
        match (slot, extra) {
            (Value::Object(have), Value::Object(add)) => {
                add.iter().for_each(|(k, s)| {
                    have.entry(k.clone()).or_insert_with(|| s.clone());
                });
            }
            (Value::Array(have), Value::Array(add)) => {
                for name in add {
                    if !have.contains(name) {
                        have.push(name.clone());
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every object schema with `properties` gets `additionalProperties: false`
/// unless it says otherwise: the committed schemas reject keys kurabe does
/// not write, as the hand-kept ones did.
fn close_objects(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
            obj.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_lets_null_back_in_and_objects_are_closed() {
        let mut s = schemars::json_schema!({ "type": "integer" });
        nullable(&mut s);
        assert_eq!(
            s.to_value(),
            serde_json::json!({ "type": ["integer", "null"] })
        );
        let mut s = schemars::json_schema!({ "$ref": "#/$defs/X" });
        nullable(&mut s);
        let want = serde_json::json!({ "anyOf": [{ "$ref": "#/$defs/X" }, { "type": "null" }] });
        assert_eq!(s.to_value(), want);
        let mut v = serde_json::json!({ "properties": { "a": { "properties": {} } } });
        close_objects(&mut v);
        assert_eq!(v["additionalProperties"], false);
        assert_eq!(v["properties"]["a"]["additionalProperties"], false);
    }
}
