//! `--save [LABEL]` and `--store PATH|URL`, shared by the commands whose single
//! result can be kept in the results store (http, watch, mem, system).
//!
//! The report is written first; saving comes after, so a store problem never
//! costs the user the numbers they just measured.

use std::path::PathBuf;

use anyhow::Context;
use kurabe_model::record::ResultKind;
use serde::Serialize;

/// Flags to keep a result in the store.
#[derive(Debug, Clone, clap::Args)]
pub struct SaveArgs {
    /// Also save the result in the results store, optionally as --save=LABEL (default: a label made from the command); list with `kurabe results list`.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub save: Option<String>,
    /// Results store for --save: a file, sqlite:PATH or postgres://… (password from PGPASSWORD or ~/.pgpass, never here) [default: $XDG_DATA_HOME/kurabe/results.db].
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "KURABE_STORE",
        hide_env_values = true
    )]
    pub store: Option<PathBuf>,
    /// Label of the code measured (a CI build id, a tag), stored with the record beside the git commit, branch and dirty flag read from the current directory's work tree.
    #[arg(
        long = "rev",
        value_name = "LABEL",
        env = "KURABE_REV",
        hide_env_values = true
    )]
    pub rev: Option<String>,
}

impl SaveArgs {
    /// Save `record` when `--save` was given; `default_label` when no label was.
    pub fn save_if_asked(
        &self,
        kind: ResultKind,
        default_label: &str,
        record: &impl Serialize,
    ) -> anyhow::Result<()> {
        let Some(label) = &self.save else {
            return Ok(());
        };
        let label = if label.is_empty() {
            default_label
        } else {
            label
        };
        let value = serde_json::to_value(record).context("cannot serialise the result")?;
        let id =
            crate::store::save_result(kind, label, &value, self.store.as_deref(), self.rev.clone())
                .context("the report was written, but saving it to the results store failed")?;
        eprintln!("kurabe: saved as {id} ('{label}'); see `kurabe results show {id}`");
        Ok(())
    }
}
