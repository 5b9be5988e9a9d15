//! The code version a measurement belongs to: the git revision of a
//! directory, and the label CI gives (`--rev`, `KURABE_REV`).
//!
//! Owns asking `git` (the executable, as a user would: its config, its
//! worktrees, its safe-directory rules all apply) for `HEAD`'s commit, branch
//! and committer time and whether tracked files differ. Must not fail: a
//! directory outside a git work tree, or a machine without git, gives no
//! commit, and the record simply carries none.

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

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_work_tree_gives_commit_branch_time_and_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(git_revision(d), None, "not a work tree yet");
        sh(d, &["init", "-q", "-b", "trunk"]);
        assert_eq!(git_revision(d), None, "no commit yet");
        std::fs::write(d.join("f"), "1").unwrap();
        sh(d, &["add", "f"]);
        sh(d, &["commit", "-q", "-m", "one"]);
        let rev = git_revision(d).unwrap();
        let head = git(d, &["rev-parse", "HEAD"]).unwrap();
        assert_eq!(rev.commit.as_deref(), Some(head.trim()));
        assert_eq!(rev.branch.as_deref(), Some("trunk"));
        assert_eq!(rev.commit_time.as_deref(), Some("2026-01-02T03:04:05Z"));
        assert!(!rev.dirty);
        std::fs::write(d.join("f"), "2").unwrap();
        assert!(git_revision(d).unwrap().dirty);
        let labelled = revision(d, Some("ci-7".into())).unwrap();
        assert_eq!(labelled.label.as_deref(), Some("ci-7"));
        assert_eq!(labelled.commit.as_deref(), Some(head.trim()));
    }

    #[test]
    fn outside_a_work_tree_only_a_label_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(revision(dir.path(), None), None);
        assert_eq!(revision(dir.path(), Some(" ".into())), None);
        let r = revision(dir.path(), Some("v1".into())).unwrap();
        assert_eq!((r.label.as_deref(), r.commit), (Some("v1"), None));
    }
}
