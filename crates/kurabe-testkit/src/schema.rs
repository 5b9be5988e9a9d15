//! A small JSON Schema checker for exactly the keywords kurabe's committed
//! schemas use: `type`, `const`, `enum`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `pattern`, `required`, `properties`,
//! `additionalProperties` (`false` or a schema), `propertyNames`, `items`,
//! `$ref` into `$defs`, `oneOf` and `anyOf` (and `format` and `default`,
//! read as annotations).
//!
//! Why not the `jsonschema` crate: it adds ~78 crates to the build for a few
//! tests. An unknown keyword panics, so a schema cannot silently outgrow the
//! checker (a test below walks every committed schema to prove it does not).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The workspace's `schema/` folder, where the committed schemas live.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema")
}

/// The committed schema `schema/<file>`, parsed.
pub fn load(file: &str) -> Value {
    let path = dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every violation of `schema` by `value`, as `path: problem` lines.
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, value, "$", &mut errors);
    errors
}

/// Panics, listing every violation, unless `value` fits the committed schema `file`.
pub fn assert_valid(file: &str, value: &Value) {
    let errors = violations(&load(file), value);
    assert!(errors.is_empty(), "{file} violations: {errors:#?}");
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        other => panic!("schema type {other} not supported by the checker"),
    }
}

/// The number rule `rule` as an f64, or a panic naming the keyword.
fn number(key: &str, rule: &Value) -> f64 {
    rule.as_f64()
        .unwrap_or_else(|| panic!("{key} must be a number, not {rule}"))
}

/// How many of the alternatives `rule` (a `oneOf`/`anyOf` array) `v` fits.
fn passing(root: &Value, rule: &Value, v: &Value, at: &str) -> usize {
    let alternatives = rule.as_array().expect("oneOf/anyOf is an array");
    let fits = |sub: &&Value| {
        let mut e = Vec::new();
        check(root, sub, v, at, &mut e);
        e.is_empty()
    };
    alternatives.iter().filter(fits).count()
}

fn check(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let s = s.as_object().expect("schema node is an object");
    for (key, rule) in s {
        match key.as_str() {
            // `format` (schemars' "uint32", "double") only annotates: the
            // type and range keywords beside it carry the rule.
            "$schema" | "$id" | "title" | "description" | "$defs" | "format" | "default" => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .expect("$ref into #/$defs/");
                check(root, &root["$defs"][name], v, at, errors);
            }
            "type" | "const" | "enum" | "minimum" | "exclusiveMinimum" | "maximum" | "pattern" => {
                errors.extend(value_rule(key, rule, v, at));
            }
            "required" | "properties" | "additionalProperties" | "propertyNames" => {
                object_rule(root, s, key, rule, v, at, errors);
            }
            "items" | "prefixItems" | "minItems" | "maxItems" => {
                array_rule(root, key, rule, v, at, errors)
            }
            "oneOf" | "anyOf" => errors.extend(alternatives_rule(root, key, rule, v, at)),
            other => panic!("schema keyword {other} at {at} not supported by the checker"),
        }
    }
}

/// A keyword about an array (its items, its length).
fn array_rule(
    root: &Value,
    key: &str,
    rule: &Value,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
) {
    let Some(items) = v.as_array() else { return };
    if key == "items" {
        for (i, item) in items.iter().enumerate() {
            check(root, rule, item, &format!("{at}[{i}]"), errors);
        }
        return;
    }
    if key == "prefixItems" {
        // A tuple (schemars writes one for a Rust tuple): item i against
        // schema i; the length is minItems/maxItems' to check.
        let schemas = rule.as_array().expect("prefixItems is an array");
        for (i, (item, schema)) in items.iter().zip(schemas).enumerate() {
            check(root, schema, item, &format!("{at}[{i}]"), errors);
        }
        return;
    }
    let (n, limit) = (items.len() as f64, number(key, rule));
    let ok = if key == "minItems" {
        n >= limit
    } else {
        n <= limit
    };
    if !ok {
        errors.push(format!("{at}: {n} items, {key} is {limit}"));
    }
}

/// `oneOf` (exactly one alternative fits) or `anyOf` (at least one):
/// the violation, if any.
fn alternatives_rule(root: &Value, key: &str, rule: &Value, v: &Value, at: &str) -> Option<String> {
    let passing = passing(root, rule, v, at);
    match key {
        "oneOf" => (passing != 1).then(|| {
            format!("{at}: matches {passing} of the oneOf alternatives, expected exactly 1")
        }),
        _ => (passing == 0).then(|| format!("{at}: matches none of the anyOf alternatives")),
    }
}

/// A keyword about the value itself (type, constants, ranges, pattern):
/// the violation, if any.
fn value_rule(key: &str, rule: &Value, v: &Value, at: &str) -> Option<String> {
    let broken = match key {
        "type" => !match rule {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("bad type rule {rule} at {at}"),
        },
        "const" => v != rule,
        "enum" => !rule.as_array().expect("enum is an array").contains(v),
        "minimum" => v.as_f64().is_some_and(|x| x < number(key, rule)),
        "exclusiveMinimum" => v.as_f64().is_some_and(|x| x <= number(key, rule)),
        "maximum" => v.as_f64().is_some_and(|x| x > number(key, rule)),
        "pattern" => {
            let pattern = rule.as_str().expect("pattern is a string");
            let re = regex::Regex::new(pattern).expect("pattern is a valid regex");
            v.as_str().is_some_and(|text| !re.is_match(text))
        }
        _ => unreachable!("not a value keyword: {key}"),
    };
    let how = match key {
        "type" => "is not of type",
        "const" => "is not",
        "enum" => "is not one of",
        "minimum" => "is below",
        "exclusiveMinimum" => "is not above",
        "maximum" => "is above",
        _ => "does not match",
    };
    broken.then(|| format!("{at}: {v} {how} {rule}"))
}

/// A keyword about an object's keys (required, properties, additional
/// properties, property names); `s` is the schema node holding it.
fn object_rule(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    key: &str,
    rule: &Value,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
) {
    let Some(obj) = v.as_object() else { return };
    match key {
        "required" => errors.extend(
            (rule.as_array().expect("required is an array").iter())
                .filter(|name| !obj.contains_key(name.as_str().unwrap()))
                .map(|name| format!("{at}: missing required {name}")),
        ),
        "properties" => {
            for (name, sub) in rule.as_object().expect("properties is an object") {
                if let Some(field) = obj.get(name) {
                    check(root, sub, field, &format!("{at}.{name}"), errors);
                }
            }
        }
        "additionalProperties" => additional(root, s, obj, rule, at, errors),
        _ => {
            for name in obj.keys() {
                let key = Value::String(name.clone());
                check(root, rule, &key, &format!("{at} key {name}"), errors);
            }
        }
    }
}

/// `additionalProperties`: the keys of `obj` that the schema node `s`
/// does not list are refused (`false`) or checked against `rule`.
fn additional(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    obj: &serde_json::Map<String, Value>,
    rule: &Value,
    at: &str,
    errors: &mut Vec<String>,
) {
    let known = s.get("properties").and_then(Value::as_object);
    let extra = obj
        .iter()
        .filter(|(name, _)| !known.is_some_and(|k| k.contains_key(*name)));
    for (name, field) in extra {
        match rule {
            Value::Bool(false) => errors.push(format!("{at}: unexpected key {name}")),
            Value::Bool(true) => {}
            Value::Object(_) => check(root, rule, field, &format!("{at}.{name}"), errors),
            _ => panic!("bad additionalProperties rule {rule} at {at}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, value: Value) -> Vec<String> {
        violations(&schema, &value)
    }

    #[test]
    fn a_fitting_value_has_no_violations() {
        let schema = json!({
            "$defs": { "n": { "type": "integer", "minimum": 0, "maximum": 9 } },
            "type": "object",
            "required": ["a", "codes"],
            "properties": {
                "a": { "$ref": "#/$defs/n" },
                "b": { "type": ["string", "null"], "pattern": "^x+$" },
                "codes": {
                    "type": "object",
                    "propertyNames": { "pattern": "^[0-9]{3}$" },
                    "additionalProperties": { "type": "integer" }
                },
                "kind": { "oneOf": [{ "const": "one" }, { "enum": ["two", "three"] }] }
            },
            "additionalProperties": false
        });
        let value = json!({ "a": 3, "b": "xx", "codes": { "200": 5 }, "kind": "two" });
        assert_eq!(errors(schema.clone(), value), Vec::<String>::new());
        let value = json!({ "a": 0, "b": null, "codes": {} });
        assert_eq!(errors(schema, value), Vec::<String>::new());
    }

    #[test]
    fn each_keyword_reports_its_violation_with_the_path() {
        let cases = [
            (
                json!({ "type": "integer" }),
                json!(1.5),
                "$: 1.5 is not of type \"integer\"",
            ),
            (
                json!({ "type": ["string", "null"] }),
                json!(1),
                "$: 1 is not of type [\"string\",\"null\"]",
            ),
            (json!({ "const": 1 }), json!(2), "$: 2 is not 1"),
            (
                json!({ "anyOf": [{ "type": "string" }, { "type": "null" }], "default": null }),
                json!(1),
                "$: matches none of the anyOf alternatives",
            ),
            (
                json!({ "enum": ["a", "b"] }),
                json!("c"),
                "$: \"c\" is not one of [\"a\",\"b\"]",
            ),
            (json!({ "minimum": 1 }), json!(0), "$: 0 is below 1"),
            (
                json!({ "exclusiveMinimum": 0 }),
                json!(0),
                "$: 0 is not above 0",
            ),
            (json!({ "maximum": 1 }), json!(1.5), "$: 1.5 is above 1"),
            (
                json!({ "pattern": "^[a-z]+$" }),
                json!("A"),
                "$: \"A\" does not match \"^[a-z]+$\"",
            ),
            (
                json!({ "required": ["x"] }),
                json!({}),
                "$: missing required \"x\"",
            ),
            (
                json!({ "properties": { "x": { "type": "string" } }, "additionalProperties": false }),
                json!({ "x": "ok", "y": 1 }),
                "$: unexpected key y",
            ),
            (
                json!({ "additionalProperties": { "minimum": 0 } }),
                json!({ "y": -1 }),
                "$.y: -1 is below 0",
            ),
            (
                json!({ "propertyNames": { "pattern": "^[0-9]+$" } }),
                json!({ "abc": 1 }),
                "$ key abc: \"abc\" does not match \"^[0-9]+$\"",
            ),
            (
                json!({ "items": { "type": "string" } }),
                json!(["a", 2]),
                "$[1]: 2 is not of type \"string\"",
            ),
            (
                json!({ "prefixItems": [{ "type": "number" }, { "type": "integer" }] }),
                json!([1.5, 2.5]),
                "$[1]: 2.5 is not of type \"integer\"",
            ),
            (
                json!({ "properties": { "x": { "properties": { "y": { "const": true } } } } }),
                json!({ "x": { "y": false } }),
                "$.x.y: false is not true",
            ),
            (
                json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] }),
                json!(1),
                "$: matches 2 of the oneOf alternatives, expected exactly 1",
            ),
            (
                json!({ "oneOf": [{ "type": "string" }, { "type": "null" }] }),
                json!(1),
                "$: matches 0 of the oneOf alternatives, expected exactly 1",
            ),
        ];
        for (schema, value, want) in cases {
            assert_eq!(errors(schema.clone(), value), [want], "schema {schema}");
        }
    }

    #[test]
    fn rules_for_other_types_do_not_apply() {
        // As in JSON Schema: number, string, object and array rules let
        // other types pass (`type` is what rejects them).
        let schema = json!({
            "minimum": 5, "maximum": 1, "pattern": "^x$", "required": ["a"],
            "additionalProperties": false, "items": { "type": "string" }
        });
        assert_eq!(errors(schema.clone(), json!(null)), Vec::<String>::new());
        assert_eq!(errors(schema.clone(), json!(true)), Vec::<String>::new());
        assert_eq!(
            errors(schema.clone(), json!(3)),
            ["$: 3 is above 1", "$: 3 is below 5"]
        );
        assert_eq!(errors(schema, json!({ "a": 1 })), ["$: unexpected key a"]);
    }

    #[test]
    #[should_panic(expected = "schema keyword contains at $ not supported")]
    fn an_unknown_keyword_panics() {
        errors(json!({ "contains": { "type": "string" } }), json!(["now"]));
    }

    /// Every node of every committed schema checked once, against `null`:
    /// an unsupported keyword (or a bad `pattern`) panics here, not only in
    /// the rarely taken branch of some report.
    #[test]
    fn every_committed_schema_uses_only_supported_keywords() {
        fn walk(root: &Value, node: &Value) {
            check(root, node, &Value::Null, "$", &mut Vec::new());
            for (key, rule) in node.as_object().unwrap() {
                match key.as_str() {
                    "properties" | "$defs" => rule
                        .as_object()
                        .unwrap()
                        .values()
                        .for_each(|n| walk(root, n)),
                    "oneOf" | "anyOf" => {
                        rule.as_array().unwrap().iter().for_each(|n| walk(root, n))
                    }
                    "items" | "propertyNames" => walk(root, rule),
                    "additionalProperties" if rule.is_object() => walk(root, rule),
                    _ => {}
                }
            }
        }
        let mut files = 0;
        for entry in std::fs::read_dir(dir()).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".schema.json") {
                let schema = load(&name);
                walk(&schema, &schema);
                files += 1;
            }
        }
        assert!(files >= 7, "only {files} schemas in {}", dir().display());
    }
}
