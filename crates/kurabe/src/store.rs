//! How commands reach the results store. The steps live in
//! `kurabe_store::access` and `kurabe_probe::origin`; re-exported here so
//! commands name them from one place. Must not print or parse flags.

use std::path::Path;

use kurabe_model::record::{ResultId, ResultKind};
pub(crate) use kurabe_probe::origin::current_rev;
pub(crate) use kurabe_store::access::{open_existing, parse_id, postgres_url, ScratchDir};

/// Save a single result (`--save` of http, watch, mem, system) to the
/// store at `store` (default path when `None`), with this machine's facts
/// and the code measured (`rev`: the `--rev` label, if any).
pub fn save_result(
    kind: ResultKind,
    label: &str,
    record: &serde_json::Value,
    store: Option<&Path>,
    rev: Option<String>,
) -> anyhow::Result<ResultId> {
    let mut store = kurabe_store::access::open_or_create(store)?;
    let (host, origin) = (
        kurabe_probe::host::host_facts(),
        kurabe_probe::origin::origin(rev),
    );
    Ok(store.save_result(kind, label, &host, &origin, record)?)
}
