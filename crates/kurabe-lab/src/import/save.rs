//! Storing what a harness read: `kurabe results import --from`'s steps in
//! order — read and check the input first (nothing is written when it is
//! not the harness's), then the machine it is recorded for (this one, or
//! the one an entry already in the store was measured on), then the
//! experiment in one transaction.
//!
//! Owns that order. Must not print or parse command lines.

use std::path::{Path, PathBuf};

use kurabe_model::record::{
    Entry, EntryId, Export, HostFacts, Origin, EXPORT_FORMAT, EXPORT_VERSION,
};
use kurabe_store::transfer::Added;
use kurabe_store::{Store, StoreError};

use super::{Context, Harness, ImportError};

/// What `kurabe results import --from` was asked to do.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The harness's output (a file, or criterion's directory).
    pub input: PathBuf,
    /// `--name`: the experiment's name instead of the harness's default.
    pub name: Option<String>,
    /// `--host ENTRY`: record the machine of this store entry, not this one.
    pub host_of: Option<EntryId>,
    /// `--rev`: a label of the code measured, recorded beside the current
    /// directory's work tree.
    pub rev: Option<String>,
}

/// Why nothing was imported.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The input is not the harness's.
    #[error(transparent)]
    Input(#[from] ImportError),
    /// `--host` names an entry without host facts.
    #[error("--host {0}: that entry records no machine; give an entry `kurabe results list` shows with a host")]
    NoHost(EntryId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store `--host` reads is missing or failed.
    #[error(transparent)]
    Access(#[from] kurabe_store::access::AccessError),
}

/// Read `req.input` with `harness` and add it to the store at `store`
/// (created if needed) as one experiment.
pub fn import(store: &Path, harness: &dyn Harness, req: ImportRequest) -> Result<Added, SaveError> {
    let imported = harness.read(&req.input)?;
    imported.check_size(&req.input)?;
    // --host reads the store, which must then exist; else it is made.
    let mut target = match req.host_of {
        Some(_) => kurabe_store::access::open_existing(Some(store))?,
        None => Store::open(store)?,
    };
    let origin = kurabe_probe::origin::origin(req.rev);
    let (host, limits) = match req.host_of {
        Some(id) => host_of(&target, id)?,
        None => (kurabe_probe::host::host_facts(), origin.limits),
    };
    let experiment = imported.into_experiment(Context {
        name: req.name,
        source: req.input,
        host,
        origin: Origin {
            rev: origin.rev,
            limits,
        },
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        now: kurabe_probe::host::now_rfc3339(),
    });
    let ids = target.import(&Export {
        format: EXPORT_FORMAT.to_owned(),
        schema_version: EXPORT_VERSION,
        entries: vec![Entry::Experiment(experiment)],
    })?;
    Ok(Added {
        ids: ids.into_iter().map(|b| (None, b)).collect(),
        from: None,
        to: target.path().to_owned(),
    })
}

/// The machine and cgroup limits entry `id` was measured with.
fn host_of(
    store: &Store,
    id: EntryId,
) -> Result<(HostFacts, Option<kurabe_model::record::CgroupLimits>), SaveError> {
    let (host, origin) = match store.get(id)? {
        Entry::Experiment(e) => (e.host, e.origin),
        Entry::Result(r) => (r.host, r.origin),
    };
    Ok((host.ok_or(SaveError::NoHost(id))?, origin.limits))
}
