//! A single result kept in the results store (`--save` of `kurabe http`,
//! `watch`, `mem`, `system`; `kurabe noise`'s record; `kurabe results
//! save`), with this machine's facts and the code measured, read now.
//!
//! Owns reading those facts for the store (which is handed them, never
//! reads the host itself), the label a bare `--save` gives, and the
//! errors that say the report was still written. Must not print: the
//! caller tells the notice.

use std::path::Path;

use kurabe_model::notice::Notice;
use kurabe_model::record::SavedRecord;
use kurabe_store::access::{open_or_create, MeasuredOn};
use kurabe_store::StoreError;

/// Why a result was not kept.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// `--save` with a store that cannot take the result (refused before
    /// anything is measured).
    #[error("--save")]
    Open(#[source] StoreError),
    /// The store failed after the report was written.
    #[error("the report was written, but saving it to the results store failed")]
    Save(#[source] StoreError),
}

/// This machine's facts and the code measured (`rev`: the `--rev`
/// label), read now for a result about to be saved.
pub fn measured_here(rev: Option<String>) -> MeasuredOn {
    MeasuredOn {
        host: kurabe_probe::host::host_facts(),
        origin: kurabe_probe::origin::origin(rev),
    }
}

/// With `--save` (`save`: its label, empty when none was given), open
/// the store at `store` now, before anything is measured: a store that
/// cannot take the result (another program's file, a directory,
/// read-only) is refused at once, not after a long run.
pub fn check_store(save: Option<&str>, store: Option<&Path>) -> Result<(), SaveError> {
    if save.is_some() {
        open_or_create(store).map_err(SaveError::Open)?;
    }
    Ok(())
}

/// Save `record` as `label` in `store`, measured here (the code at the
/// `--rev` label `rev`); the notice saying where.
pub fn save_here(
    label: &str,
    record: &SavedRecord,
    store: Option<&Path>,
    rev: Option<String>,
) -> Result<Notice, SaveError> {
    let on = measured_here(rev);
    let id =
        kurabe_store::access::save_result(label, record, store, &on).map_err(SaveError::Save)?;
    let label = label.to_owned();
    Ok(Notice::SavedResult { id, label })
}

/// With `--save` (`save`: its label, empty when none was given), the
/// record `record` makes saved under that label, else `default_label`
/// ([`save_here`]); the notice saying where.
pub fn save_if_asked(
    (save, default_label): (Option<&str>, &str),
    record: impl FnOnce() -> SavedRecord,
    store: Option<&Path>,
    rev: Option<String>,
) -> Result<Option<Notice>, SaveError> {
    let Some(given) = save else {
        return Ok(None);
    };
    let label = Some(given)
        .filter(|l| !l.is_empty())
        .unwrap_or(default_label);
    save_here(label, &record(), store, rev).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_save_takes_the_default_label_and_no_save_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("results.db");
        let record = || SavedRecord::Http(Box::default());
        let at = Some(store.as_path());
        let none = save_if_asked((None, "http x"), record, at, None).unwrap();
        assert!(none.is_none() && !store.exists());
        check_store(Some(""), at).unwrap();
        for (given, label) in [("", "http x"), ("mine", "mine")] {
            let saved = save_if_asked((Some(given), "http x"), record, at, None).unwrap();
            let Some(Notice::SavedResult { label: got, .. }) = saved else {
                panic!("{saved:?}");
            };
            assert_eq!(got, label);
        }
        let dir_as_store = Some(dir.path());
        let e = check_store(Some(""), dir_as_store).unwrap_err();
        assert_eq!(e.to_string(), "--save");
    }
}
