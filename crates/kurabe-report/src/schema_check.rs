//! A small JSON Schema checker for the keywords kurabe's report schema
//! uses (`type`, `const`, `enum`, `required`, `properties`,
//! `additionalProperties: false`, `items`, `$ref` into `$defs`, `oneOf`,
//! `minimum`). Test-only; an unknown keyword panics so the schema cannot
//! silently outgrow the checker. Shared with the binary's integration
//! tests by `#[path]`, so it uses nothing but serde_json.

use serde_json::Value;

/// Every violation of `schema` by `value`, as `path: problem` lines.
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, value, "$", &mut errors);
    errors
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

fn check(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let s = s.as_object().expect("schema node is an object");
    for (key, rule) in s {
        match key.as_str() {
            "$schema" | "$id" | "title" | "description" | "$defs" => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .expect("$ref into #/$defs/");
                check(root, &root["$defs"][name], v, at, errors);
            }
            "type" => {
                let ok = match rule {
                    Value::String(t) => type_ok(t, v),
                    Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
                    _ => panic!("bad type rule at {at}"),
                };
                if !ok {
                    errors.push(format!("{at}: {v} is not of type {rule}"));
                }
            }
            "const" => {
                if v != rule {
                    errors.push(format!("{at}: {v} is not {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(v) {
                    errors.push(format!("{at}: {v} is not one of {rule}"));
                }
            }
            "minimum" => {
                if v.as_f64().is_some_and(|x| x < rule.as_f64().unwrap()) {
                    errors.push(format!("{at}: {v} < minimum {rule}"));
                }
            }
            "required" => {
                if let Some(obj) = v.as_object() {
                    for name in rule.as_array().unwrap() {
                        let name = name.as_str().unwrap();
                        if !obj.contains_key(name) {
                            errors.push(format!("{at}: missing required `{name}`"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(obj) = v.as_object() {
                    for (name, sub) in rule.as_object().unwrap() {
                        if let Some(x) = obj.get(name) {
                            check(root, sub, x, &format!("{at}.{name}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                assert_eq!(
                    rule,
                    &Value::Bool(false),
                    "only additionalProperties: false"
                );
                let known = s.get("properties").and_then(Value::as_object);
                if let Some(obj) = v.as_object() {
                    for name in obj.keys() {
                        if !known.is_some_and(|k| k.contains_key(name)) {
                            errors.push(format!("{at}: unexpected field `{name}`"));
                        }
                    }
                }
            }
            "items" => {
                if let Some(items) = v.as_array() {
                    for (i, x) in items.iter().enumerate() {
                        check(root, rule, x, &format!("{at}[{i}]"), errors);
                    }
                }
            }
            "oneOf" => {
                let matching = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|alt| {
                        let mut e = Vec::new();
                        check(root, alt, v, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                if matching != 1 {
                    errors.push(format!(
                        "{at}: {v} matches {matching} of the oneOf alternatives, not 1"
                    ));
                }
            }
            other => panic!("schema keyword `{other}` at {at} not supported by the checker"),
        }
    }
}
