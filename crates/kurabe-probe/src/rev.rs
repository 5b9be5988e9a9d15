//! The code version a measurement belongs to: the git revision of a
//! directory, and the label CI gives (`--rev`, `KURABE_REV`).
//!
//! Owns asking `git` (the executable, as a user would: its config, its
//! worktrees, its safe-directory rules all apply) for `HEAD`'s commit, branch
//! and committer time and whether tracked files differ. Must not fail: a
//! directory outside a git work tree, or a machine without git, gives no
//! commit, and the record simply carries none.
//!
//! Tested end to end in `crates/kurabe/tests/history.rs` (commit, branch,
//! dirty flag, label, outside a work tree): a unit test here would start
//! `git` inside this crate's test binary, whose watcher test counts this
//! process's children.

use std::path::Path;
use std::process::{Command, Stdio};

use kurabe_model::record::Revision;

/// The revision of `dir` with `label` attached: `None` when there is
/// neither a label nor a git work tree with a commit.
pub fn revision(dir: &Path, label: Option<String>) -> Option<Revision> {
    let label = label.filter(|l| !l.trim().is_empty());
    match git_revision(dir) {
        Some(rev) => Some(Revision { label, ..rev }),
        None => label.map(|label| Revision {
            label: Some(label),
            ..Revision::default()
        }),
    }
}

/// `HEAD` of the git work tree `dir` is in; `None` outside one, before the
/// first commit, or without git.
pub fn git_revision(dir: &Path) -> Option<Revision> {
    if git(dir, &["rev-parse", "--is-inside-work-tree"])?.trim() != "true" {
        return None;
    }
    let log = git(
        dir,
        &["log", "-1", "--date=iso-strict-local", "--format=%H%n%cd"],
    )?;
    let mut lines = log.lines();
    let commit = lines.next().filter(|c| !c.is_empty())?.to_owned();
    // With TZ=UTC, git writes `+00:00` or (newer versions) `Z`: one spelling.
    let commit_time = lines.next().map(|t| {
        t.strip_suffix("+00:00")
            .map_or(t.to_owned(), |t| format!("{t}Z"))
    });
    let branch = git(dir, &["symbolic-ref", "--short", "-q", "HEAD"])
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty());
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.trim().is_empty());
    Some(Revision {
        commit: Some(commit),
        branch,
        commit_time,
        dirty,
        label: None,
    })
}

/// Stdout of `git ARGS` run in `dir` (UTC dates), `None` when it fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
