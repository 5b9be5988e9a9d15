//! Loading plan files: TOML text → validated [`Plan`].
//!
//! Two passes over the text: serde deserialises the typed plan (wrong types
//! and unknown keys fail here), then [`Plan::validate`] checks what types
//! cannot. Either way the error is turned into `file:line: field: message`
//! by mapping byte spans to lines and field paths to spans through toml's
//! spanned document tree — the reader should not have to hunt for the key.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use kurabe_model::plan::{FieldPath, PathSeg, Plan};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Plans larger than this are refused: nobody writes a 1 MiB experiment by
/// hand, and it is more likely the wrong file than a plan.
const MAX_PLAN_BYTES: u64 = 1 << 20;

/// Why a plan could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file could not be read.
    #[error("cannot read plan {}: {source}; check the path", path.display())]
    Read {
        /// The plan's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not a regular file (a directory, a device, a FIFO), larger than
    /// 1 MiB, or not UTF-8.
    #[error(transparent)]
    Input(#[from] kurabe_input::InputError),
    /// The text is not valid TOML, does not fit the plan format, or fails validation.
    #[error("{}", Located(self))]
    Invalid {
        /// The plan's name for messages (its path as given).
        file: String,
        /// 1-based line of the fault, when it has one.
        line: Option<usize>,
        /// Field at fault (`variant[1].limits.cpus`), when known.
        field: Option<String>,
        /// What is wrong and what is expected.
        message: String,
        /// Further problems not shown.
        more: usize,
    },
}

struct Located<'a>(&'a PlanError);

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PlanError::Invalid {
            file,
            line,
            field,
            message,
            more,
        } = self.0
        else {
            return Ok(());
        };
        write!(f, "{file}")?;
        if let Some(line) = line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(field) = field {
            write!(f, "`{field}`: ")?;
        }
        f.write_str(message)?;
        match more {
            0 => Ok(()),
            1 => f.write_str(" (and 1 more problem)"),
            n => write!(f, " (and {n} more problems)"),
        }
    }
}

/// Read, parse and validate the plan at `path`.
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    load_plan_with_text(path).map(|(plan, _)| plan)
}

/// [`load_plan`], also returning the file's text (the store keeps it
/// verbatim with the experiment, so what ran is exactly what was read).
pub fn load_plan_with_text(path: &Path) -> Result<(Plan, String), PlanError> {
    let text = read_plan_text(path)?;
    let plan = parse_plan(&text, &path.display().to_string())?;
    Ok((plan, text))
}

/// The plan file's text: only a regular file (a FIFO or a device would block
/// or never end), at most [`MAX_PLAN_BYTES`].
fn read_plan_text(path: &Path) -> Result<String, PlanError> {
    let name = kurabe_input::Name::new("plan");
    kurabe_input::read_text(path, name, MAX_PLAN_BYTES).map_err(|e| match e {
        kurabe_input::InputError::Open { path, err, .. } => PlanError::Read { path, source: err },
        e => PlanError::Input(e),
    })
}

/// [`load_plan_with_text`] after filling `{KEY}` placeholders from `vars`
/// (`kurabe run --set KEY=VALUE`) in every string of the plan; the text
/// returned is the filled one (the store keeps what actually ran).
pub fn load_plan_filled(
    path: &Path,
    vars: &BTreeMap<String, String>,
) -> Result<(Plan, String), PlanError> {
    let text = read_plan_text(path)?;
    let file = path.display().to_string();
    let text = fill_placeholders(&text, &file, vars)?;
    let plan = parse_plan(&text, &file)?;
    Ok((plan, text))
}

/// Replace `{KEY}` by its value in every string value of the TOML `text`
/// (re-quoted, so any value is safe; lines keep their numbers unless a
/// value holds a newline). A key the plan never uses is an error: it is
/// most likely a typo.
pub fn fill_placeholders(
    text: &str,
    file: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, PlanError> {
    if vars.is_empty() {
        return Ok(text.to_owned());
    }
    let invalid = |line: Option<usize>, message: String| PlanError::Invalid {
        file: file.to_owned(),
        line,
        field: None,
        message,
        more: 0,
    };
    let tree = DeTable::parse(text)
        .map_err(|e| invalid(e.span().map(|s| line_of(text, s.start)), clean(e.message())))?;
    let mut strings = Vec::new();
    collect_strings(tree.get_ref(), &mut strings);
    let mut used = std::collections::BTreeSet::new();
    let mut edits = Vec::new();
    for (span, value) in strings {
        let filled = kurabe_model::plan::substitute(&value, vars);
        if filled != value {
            for k in vars.keys() {
                if value.contains(&format!("{{{k}}}")) {
                    used.insert(k.clone());
                }
            }
            edits.push((span, toml::Value::String(filled).to_string()));
        }
    }
    if let Some(unused) = vars.keys().find(|k| !used.contains(*k)) {
        return Err(invalid(
            None,
            format!("--set {unused}: the plan has no `{{{unused}}}` placeholder; check the name"),
        ));
    }
    let mut out = text.to_owned();
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    for (span, quoted) in edits {
        out.replace_range(span, &quoted);
    }
    Ok(out)
}

/// Every string value in the tree with the span of its quoted text.
fn collect_strings(table: &DeTable<'_>, out: &mut Vec<(Range<usize>, String)>) {
    for (_, value) in table.iter() {
        collect_value(value, out);
    }
}

fn collect_value(value: &Spanned<DeValue<'_>>, out: &mut Vec<(Range<usize>, String)>) {
    match value.get_ref() {
        DeValue::String(s) => out.push((value.span(), s.to_string())),
        DeValue::Table(t) => collect_strings(t, out),
        DeValue::Array(items) => items.iter().for_each(|i| collect_value(i, out)),
        _ => {}
    }
}

/// A plan built in memory (`kurabe cmd`, `kurabe http A B`) as the TOML
/// text the store keeps with its experiment, so `kurabe report` reads it
/// like a plan file.
pub fn plan_text(plan: &Plan) -> Result<String, PlanError> {
    toml::to_string(plan).map_err(|e| PlanError::Invalid {
        file: "(built-in plan)".into(),
        line: None,
        field: None,
        message: format!("cannot write the plan as TOML: {e}"),
        more: 0,
    })
}

/// Parse and validate plan `text`; `file` names it in error messages.
pub fn parse_plan(text: &str, file: &str) -> Result<Plan, PlanError> {
    let invalid = |span: Option<Range<usize>>, field: Option<String>, message: String, more| {
        PlanError::Invalid {
            file: file.to_owned(),
            line: span.map(|s| line_of(text, s.start)),
            field,
            message,
            more,
        }
    };
    // The spanned tree is only needed to explain errors, but parsing it first
    // also reports TOML syntax errors with their position.
    let tree = DeTable::parse(text).map_err(|e| invalid(e.span(), None, clean(e.message()), 0))?;
    let plan: Plan = toml::from_str(text).map_err(|e| {
        // An empty span (a missing top-level key) points at no field.
        let field = e
            .span()
            .filter(|s| !s.is_empty())
            .and_then(|s| path_at(tree.get_ref(), &s))
            .map(|p| p.to_string());
        invalid(e.span(), field, clean(e.message()), 0)
    })?;
    if let Err(problems) = plan.validate() {
        let first = &problems[0];
        let span = span_of(tree.get_ref(), &first.path);
        return Err(invalid(
            span,
            Some(first.path.to_string()),
            first.message.clone(),
            problems.len() - 1,
        ));
    }
    Ok(plan)
}

/// toml's messages end with a newline and sometimes span lines; keep one line.
fn clean(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// 1-based line number of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The deepest field whose key or value contains the whole error `span`
/// (a "missing field" error spans its whole table, so no key inside it
/// is blamed).
///
/// Searches the whole tree rather than descending by container spans:
/// the elements of an array of tables (`[[variant]]`) are spanned by their
/// header line only, so their keys lie outside every ancestor's span.
fn path_at(table: &DeTable<'_>, offset: &Range<usize>) -> Option<FieldPath> {
    let mut segs = Vec::new();
    search_table(table, offset, &mut segs).then_some(FieldPath(segs))
}

fn search_table(table: &DeTable<'_>, offset: &Range<usize>, segs: &mut Vec<PathSeg>) -> bool {
    for (key, value) in table.iter() {
        segs.push(PathSeg::Key(key.get_ref().to_string()));
        if contains(&key.span(), offset) || search_value(value, offset, segs) {
            return true;
        }
        segs.pop();
    }
    false
}

/// True (with `segs` extended) if `offset` lies within `value` or below it.
fn search_value(
    value: &Spanned<DeValue<'_>>,
    offset: &Range<usize>,
    segs: &mut Vec<PathSeg>,
) -> bool {
    let found_below = match value.get_ref() {
        DeValue::Table(t) => search_table(t, offset, segs),
        DeValue::Array(items) => items.iter().enumerate().any(|(i, item)| {
            segs.push(PathSeg::Index(i));
            let hit = search_value(item, offset, segs);
            if !hit {
                segs.pop();
            }
            hit
        }),
        _ => false,
    };
    found_below || contains(&value.span(), offset)
}

fn contains(span: &Range<usize>, inner: &Range<usize>) -> bool {
    span.start <= inner.start && inner.end <= span.end && span.start < span.end
}

/// Span of the field at `path`, or of its deepest existing ancestor
/// (a missing key is reported where its table is). `None` for top-level
/// keys that are absent.
fn span_of(table: &DeTable<'_>, path: &FieldPath) -> Option<Range<usize>> {
    let mut span = None;
    let mut current: Option<&Spanned<DeValue<'_>>> = None;
    for seg in &path.0 {
        let next = match (seg, current.map(Spanned::get_ref)) {
            (PathSeg::Key(k), None) => table.get(k.as_str()),
            (PathSeg::Key(k), Some(DeValue::Table(t))) => t.get(k.as_str()),
            (PathSeg::Index(i), Some(DeValue::Array(a))) => a.get(*i),
            _ => None,
        };
        match next {
            Some(v) => {
                span = Some(v.span());
                current = Some(v);
            }
            None => break,
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn set_fills_every_string_and_requotes() {
        let text = "name = \"build {commit}\"\n[target]\ncommand = '{bin} -p {port}'\nenv = { A = \"{commit}\" }\n";
        let out = fill_placeholders(
            text,
            "p.toml",
            &vars(&[("commit", "abc\"1"), ("bin", "/opt/x y")]),
        )
        .unwrap();
        let v: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(v["name"].as_str(), Some("build abc\"1"));
        assert_eq!(v["target"]["command"].as_str(), Some("/opt/x y -p {port}"));
        assert_eq!(v["target"]["env"]["A"].as_str(), Some("abc\"1"));
        assert_eq!(out.lines().count(), text.lines().count());
        let err = fill_placeholders(text, "p.toml", &vars(&[("comit", "x")])).unwrap_err();
        assert!(err.to_string().contains("--set comit"), "{err}");
    }

    #[test]
    fn line_numbers() {
        let t = "a\nb\nc";
        assert_eq!(line_of(t, 0), 1);
        assert_eq!(line_of(t, 2), 2);
        assert_eq!(line_of(t, 4), 3);
        assert_eq!(line_of(t, 99), 3);
    }

    #[test]
    fn paths_through_arrays_of_tables() {
        let text = "name = \"x\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nlimits = { cpus = 2 }\n";
        let tree = DeTable::parse(text).unwrap();
        let at = text.find("cpus").unwrap();
        assert_eq!(
            path_at(tree.get_ref(), &(at..at + 4)).unwrap().to_string(),
            "variant[1].limits.cpus"
        );
        let span = span_of(tree.get_ref(), &FieldPath::parse("variant[1].limits.cpus")).unwrap();
        assert_eq!(line_of(text, span.start), 6);
        let span = span_of(tree.get_ref(), &FieldPath::parse("variant[1].name")).unwrap();
        assert_eq!(line_of(text, span.start), 5);
        assert_eq!(span_of(tree.get_ref(), &FieldPath::parse("workload")), None);
    }

    #[test]
    fn system_precision_settings_are_checked_and_limits_need_a_system_workload() {
        let plan = |system: &str, target: bool| {
            let t = if target {
                "[target]\ncommand = \"sleep 9\"\n"
            } else {
                ""
            };
            let text = format!(
                "name = \"p\"\n{t}[[variant]]\nname = \"a\"\nlimits = {{ cpus = 0.5 }}\n[[workload]]\nname = \"w\"\n{system}\n"
            );
            parse_plan(&text, "p.toml").err().map(|e| e.to_string())
        };
        assert_eq!(
            plan("system = { precision = \"3%\", max_time = \"2m\" }", false),
            None
        );
        let bad = plan("system = { precision = \"80%\" }", false).unwrap();
        assert!(bad.contains("system.precision`: must be between"), "{bad}");
        let both = plan("system = { max_time = \"1m\", quick = true }", false).unwrap();
        assert!(both.contains("choose one of"), "{both}");
        let idle = plan("idle = { scope = \"system\" }", false).unwrap();
        assert!(idle.contains("variant[0].limits"), "{idle}");
        assert_eq!(plan("idle = { scope = \"system\" }", true), None);
    }
}
