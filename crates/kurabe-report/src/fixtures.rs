//! Fixed records of every report kind for renderer tests (`testdata/*.json`).

use kurabe_model::http::HttpReport;
use kurabe_model::probe::{MemReport, WatchReport};
use kurabe_model::system::{SystemCompare, SystemReport};

/// A keep-alive `kurabe http` run with a few failures and a non-2xx status.
pub(crate) fn http() -> HttpReport {
    serde_json::from_str(include_str!("../testdata/http.json")).unwrap()
}

/// A watch of a started command under limits, stopped at `--duration`.
pub(crate) fn watch() -> WatchReport {
    serde_json::from_str(include_str!("../testdata/watch.json")).unwrap()
}

/// A `kurabe mem` snapshot with two top processes.
pub(crate) fn mem() -> MemReport {
    serde_json::from_str(include_str!("../testdata/mem.json")).unwrap()
}

/// A quick, interrupted `kurabe system` run at 1 and 2 copies.
pub(crate) fn system() -> SystemReport {
    serde_json::from_str(include_str!("../testdata/system.json")).unwrap()
}

/// An imported 32-bit report against a kurabe 64-bit run.
pub(crate) fn system_compare() -> SystemCompare {
    serde_json::from_str(include_str!("../testdata/system-compare.json")).unwrap()
}
