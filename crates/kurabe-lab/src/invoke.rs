//! From a plan path to what the runner needs, the same for `kurabe run`
//! and `kurabe bisect`: the plan loaded with its `--set` values filled and
//! checked for what this kurabe can run, and [`RunOptions`] with defaults.
//!
//! Owns these defaults. Must not print or know about flags.

use std::path::Path;

use kurabe_model::plan::Plan;

use crate::{LabError, PlanError, RunOptions};

/// Why a plan cannot be run at all.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    /// The plan file is bad (file:line: field: message).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The plan asks for something this kurabe cannot run.
    #[error(transparent)]
    Lab(#[from] LabError),
    /// `{kurabe}` has nothing to stand for.
    #[error("cannot find the kurabe executable")]
    Exe(#[source] std::io::Error),
}

/// The plan at `path` with `vars` (`--set KEY=VALUE`) filled and checked,
/// and options that run it as written: no seed, rounds or revision
/// overrides, kurabe's own executable and version.
pub fn prepare(path: &Path, vars: &[(String, String)]) -> Result<(Plan, RunOptions), InvokeError> {
    let vars = vars.iter().cloned().collect();
    let (plan, plan_text) = crate::load_plan_filled(path, &vars)?;
    crate::check_supported(&plan)?;
    let options = RunOptions {
        plan_dir: crate::runner::plan_dir(path),
        plan_text,
        seed: None,
        repeat: None,
        kurabe_exe: std::env::current_exe().map_err(InvokeError::Exe)?,
        until_confident: None,
        // The workspace shares one version: this crate's is kurabe's.
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        worktrees: Default::default(),
        rev: None,
    };
    Ok((plan, options))
}
