//! From a plan path to what the runner needs, the same for `kurabe run`
//! and `kurabe bisect`: the plan loaded with its `--set` values filled and
//! checked for what this kurabe can run, and [`RunOptions`] with defaults;
//! the same options for a plan built in memory (`kurabe http A B`); and the
//! `--set KEY=VALUE` grammar.
//!
//! Owns these defaults. Must not print or know about flags beyond their grammar.

use std::path::Path;

use kurabe_model::plan::{Plan, WorkloadKind};

use crate::{LabError, PlanError, RunOptions};

/// Why a plan cannot be run at all.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The plan file is bad (file:line: field: message).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The plan asks for something this kurabe cannot run.
    #[error(transparent)]
    Lab(#[from] LabError),
    /// `{kurabe}` has nothing to stand for.
    #[error("cannot find the kurabe executable")]
    Exe(#[source] std::io::Error),
    /// The current directory cannot be read.
    #[error("cannot read the current directory")]
    Cwd(#[source] std::io::Error),
}

/// The plan at `path` with `vars` (`--set KEY=VALUE`) filled and checked,
/// and options that run it as written: no seed, rounds or revision
/// overrides, kurabe's own executable and version.
pub fn prepare(path: &Path, vars: &[(String, String)]) -> Result<(Plan, RunOptions), PrepareError> {
    let vars = vars.iter().cloned().collect();
    let (plan, plan_text) = crate::load_plan_filled(path, &vars)?;
    crate::check_supported(&plan)?;
    let dir = crate::runner::plan_dir(path);
    check_thresholds(&plan, &dir)?;
    check_files(&plan, &dir)?;
    let options = base_options(dir, plan_text, None)?;
    Ok((plan, options))
}

/// Each http workload with thresholds checked as its runs will check it
/// (each threshold parses and names a request the load sends), so a bad
/// one is refused before any target starts or any request is sent.
fn check_thresholds(plan: &Plan, plan_dir: &Path) -> Result<(), LabError> {
    for (i, w) in plan.workloads.iter().enumerate() {
        let WorkloadKind::Http(h) = &w.kind else {
            continue;
        };
        if h.thresholds.is_empty() {
            continue;
        }
        // The variant's URL is known only when it runs; the names are not in it.
        let url = h.url.as_deref().filter(|u| !u.contains('{'));
        let spec = crate::measure::plan_load(h, url.unwrap_or("http://127.0.0.1/"), plan_dir);
        kurabe_http::load::check(&spec, &kurabe_http::load::Names::PLAN)
            .map_err(|e| LabError::Unsupported(format!("`workload[{i}]` ({}): {e}", w.name)))?;
    }
    Ok(())
}

/// The files each http workload names (its set, its body file, its
/// replay's log) opened and checked: a named pipe, a device or a
/// directory is refused before any target starts, not run after run.
fn check_files(plan: &Plan, plan_dir: &Path) -> Result<(), LabError> {
    for (i, w) in plan.workloads.iter().enumerate() {
        if let WorkloadKind::Http(h) = &w.kind {
            let spec = crate::measure::plan_load(h, "http://127.0.0.1/", plan_dir);
            kurabe_http::load::check_files(&spec, &kurabe_http::load::Names::PLAN)
                .map_err(|e| LabError::Unsupported(format!("`workload[{i}]` ({}): {e}", w.name)))?;
        }
    }
    Ok(())
}

/// Run options with nothing chosen beyond the plan, its directory and the
/// code measured (seed, repeat, --until-confident: the defaults).
fn base_options(
    plan_dir: std::path::PathBuf,
    plan_text: String,
    rev: Option<kurabe_model::record::Revision>,
) -> Result<RunOptions, PrepareError> {
    Ok(RunOptions {
        plan_dir,
        plan_text,
        seed: None,
        repeat: None,
        kurabe_exe: std::env::current_exe().map_err(PrepareError::Exe)?,
        more_rounds: crate::MoreRounds::No,
        // The workspace shares one version: this crate's is kurabe's.
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        worktrees: Default::default(),
        rev,
        live: None,
        profile: Default::default(),
    })
}

/// Options that run `plan`, built in memory (no file), from the current
/// directory, recording `rev` as the code measured.
pub fn options_here(
    plan: &Plan,
    rev: Option<kurabe_model::record::Revision>,
) -> Result<RunOptions, PrepareError> {
    base_options(
        std::env::current_dir().map_err(PrepareError::Cwd)?,
        crate::plan::plan_text(plan)?,
        rev,
    )
}

/// `KEY=VALUE` of `--set`; KEY as placeholders are written (lowercase,
/// digits, `_`).
pub fn parse_set(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got `{text}`"))?;
    let ident = k.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ident {
        return Err(format!(
            "`{k}` is not a placeholder name: use lowercase letters, digits and _, as in {{commit}}"
        ));
    }
    Ok((k.to_owned(), v.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_takes_placeholder_names_only() {
        assert_eq!(parse_set("a_1=x=y").unwrap(), ("a_1".into(), "x=y".into()));
        assert!(parse_set("Commit=1")
            .unwrap_err()
            .contains("placeholder name"));
        assert!(parse_set("novalue").unwrap_err().contains("KEY=VALUE"));
    }
}
