//! Where a record is measured now: the code (the git revision of the
//! current directory's work tree, with a `--rev` label) and the cgroup
//! limits in force.
//!
//! Owns reading these for a record that is about to be stored. Must not
//! store or print anything.

use std::path::PathBuf;

use kurabe_model::record::{Origin, Revision};

/// The code measured: the current directory's git revision, with `label`
/// (a `--rev` / `KURABE_REV` value) attached.
pub fn current_rev(label: Option<String>) -> Option<Revision> {
    let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    crate::rev::revision(&dir, label)
}

/// [`current_rev`] and the cgroup limits in force.
pub fn origin(label: Option<String>) -> Origin {
    Origin {
        rev: current_rev(label),
        limits: Some(crate::cgroup::limits_in_force()),
    }
}
