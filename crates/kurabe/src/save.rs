//! `--save [LABEL]` and `--store PATH|URL`, shared by the commands whose single
//! result can be kept in the results store (http, watch, mem, system).
//!
//! The report is written first; saving comes after, so a store problem never
//! costs the user the numbers they just measured.

use anyhow::Context;
use kurabe_model::record::ResultKind;
use serde::Serialize;

/// Flags to keep a result in the store.
#[derive(Debug, Clone, clap::Args)]
pub struct SaveArgs {
    /// Also save the result in the results store, optionally as --save=LABEL (default: a label made from the command); list with `kurabe results list`.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub save: Option<String>,
    #[command(flatten)]
    pub store: crate::flags::StoreArg,
    #[command(flatten)]
    pub rev: crate::flags::RevArg,
}

impl SaveArgs {
    /// With `--save`, open the store now, before anything is measured: a
    /// store that cannot take the result (another program's file, a
    /// directory, read-only) is refused at once, not after a long run.
    pub fn check_store(&self) -> anyhow::Result<()> {
        if self.save.is_some() {
            kurabe_store::access::open_or_create(self.store.store.as_deref()).context("--save")?;
        }
        Ok(())
    }

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
        let label = Some(label.as_str())
            .filter(|l| !l.is_empty())
            .unwrap_or(default_label);
        let (store, rev) = (self.store.store.as_deref(), self.rev.rev.clone());
        let id = kurabe_store::access::save_record(kind, label, record, store, rev)
            .context("the report was written, but saving it to the results store failed")?;
        eprintln!("kurabe: saved as {id} ('{label}'); see `kurabe results show {id}`");
        Ok(())
    }
}
