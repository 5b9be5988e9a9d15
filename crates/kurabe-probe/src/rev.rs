//! The code version a measurement belongs to: the git revision of a
//! directory, and the label CI gives (`--rev`, `KURABE_REV`).
//!
//! Owns running `git` ([`run_git`], the one place kurabe does; the lab's
//! worktree cache goes through it too) — the executable, as a user would:
//! its config, its worktrees, its safe-directory rules all apply — and asking
//! it for `HEAD`'s commit, branch and committer time and whether tracked
//! files differ. Must not fail: a
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

/// Why `git` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GitRunError {
    /// The `git` executable could not be started.
    #[error("cannot run git: {0}; install git or put it on PATH")]
    NotStarted(std::io::Error),
    /// git ran and failed.
    #[error("git {what} failed: {message}")]
    Failed {
        /// The subcommand asked for.
        what: String,
        /// git's own message (its stderr, trimmed).
        message: String,
    },
}

/// The one place kurabe runs `git`: `git -C dir ARGS` with dates in UTC and
/// no stdin; its trimmed stdout, or its stderr as the error.
pub fn run_git(dir: &Path, args: &[&str]) -> Result<String, GitRunError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .output()
        .map_err(GitRunError::NotStarted)?;
    if !out.status.success() {
        return Err(GitRunError::Failed {
            what: args.first().copied().unwrap_or("").to_owned(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Stdout of `git ARGS` run in `dir`, `None` when it fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    run_git(dir, args).ok()
}
