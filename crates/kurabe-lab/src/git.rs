//! Git, the one home of kurabe's git plumbing: which repository a plan
//! lives in, what a revision names, which commits lie between two, and
//! cached worktrees where a revision is checked out and built once.
//!
//! Owns what kurabe asks `git` (the user's own, so their config, credentials
//! and hooks apply as on the command line; run through
//! `kurabe_probe::rev::run_git`, the one runner) and the worktree cache:
//! `$KURABE_CACHE_DIR`, else `$XDG_CACHE_HOME/kurabe`, else
//! `~/.cache/kurabe`, then `worktrees/<repository key>/<commit id>`. A
//! worktree is keyed by the commit id, never by the name given (a branch
//! moves), so `main` and its commit id share one build, and a build is
//! reused across runs until `[build]` changes. Concurrent kurabes are safe:
//! each commit's preparation holds an exclusive `flock` on `<commit>.lock`,
//! and `git worktree add` holds the repository's `add.lock` as well.
//!
//! Must not print, and must not touch the user's own work tree (everything
//! is checked out into the cache).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use kurabe_model::plan::{Build, Plan, WORKTREE_PLACEHOLDER};
use kurabe_probe::rev::run_git;
use kurabe_probe::rev::GitRunError;
use kurabe_stop::Stop;

use crate::runner::argv_of;

/// Why a revision could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The plan's folder is not inside a git work tree.
    #[error("{} is not inside a git work tree; a variant's `rev` needs the plan in a git repository (or remove `rev`)", dir.display())]
    NotARepository {
        /// The folder looked at.
        dir: PathBuf,
    },
    /// `git` could not be started.
    #[error("cannot run git: {0}; install git or put it on PATH")]
    NoGit(std::io::Error),
    /// The revision names no commit.
    #[error("revision `{rev}` does not exist in {}; give a tag, branch or commit id (`git log --oneline`)", repo.display())]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// The repository's top level.
        repo: PathBuf,
    },
    /// A git command failed.
    #[error("git {what} failed: {message}")]
    Git {
        /// What was asked.
        what: String,
        /// git's own message.
        message: String,
    },
    /// The build of a commit failed.
    #[error("build of revision `{rev}` ({commit}) failed ({status}): {tail}; the whole output is in {}", log.display())]
    BuildFailed {
        /// The revision as given.
        rev: String,
        /// Its commit id, short.
        commit: String,
        /// How the build ended.
        status: String,
        /// Full output of the build.
        log: PathBuf,
        /// Its last line of output.
        tail: String,
    },
    /// The cache directory could not be used.
    #[error("worktree cache {}: {source}; set KURABE_CACHE_DIR to a writable folder", path.display())]
    Cache {
        /// The path at fault.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Ctrl-C during a build.
    #[error("interrupted while building {0}")]
    Interrupted(String),
}

/// A git repository, found from a folder inside its work tree.
#[derive(Debug, Clone)]
pub struct Repo {
    /// Top level of the work tree the folder is in.
    pub top: PathBuf,
    /// The repository's common git directory (shared by its worktrees).
    common_dir: PathBuf,
}

impl From<GitRunError> for GitError {
    fn from(e: GitRunError) -> Self {
        match e {
            GitRunError::NotStarted(e) => GitError::NoGit(e),
            GitRunError::Failed { what, message } => GitError::Git { what, message },
        }
    }
}

/// Run git in `dir` (through kurabe-probe's one git runner); its trimmed
/// stdout, or its stderr as the error.
fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    Ok(run_git(dir, args)?)
}

impl Repo {
    /// The repository whose work tree holds `dir`.
    pub fn discover(dir: &Path) -> Result<Repo, GitError> {
        let not_repo = || GitError::NotARepository {
            dir: dir.to_owned(),
        };
        let out = match git(dir, &["rev-parse", "--show-toplevel", "--git-common-dir"]) {
            Ok(out) => out,
            Err(GitError::Git { .. }) => return Err(not_repo()),
            Err(e) => return Err(e),
        };
        let mut lines = out.lines();
        let top = PathBuf::from(lines.next().ok_or_else(not_repo)?);
        let common = PathBuf::from(lines.next().ok_or_else(not_repo)?);
        let common_dir = if common.is_absolute() {
            common
        } else {
            dir.join(common)
        };
        let common_dir = common_dir.canonicalize().unwrap_or(common_dir);
        Ok(Repo { top, common_dir })
    }

    /// The full commit id `rev` names.
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        let spec = format!("{rev}^{{commit}}");
        git(
            &self.top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )
        .map_err(|_| GitError::UnknownRevision {
            rev: rev.to_owned(),
            repo: self.top.clone(),
        })
    }

    /// Commits after `good` up to and including `bad`, oldest first, on
    /// the ancestry path between them (what `git bisect` searches).
    pub fn commits_between(&self, good: &str, bad: &str) -> Result<Vec<String>, GitError> {
        let range = format!("{good}..{bad}");
        let out = git(
            &self.top,
            &["rev-list", "--reverse", "--ancestry-path", &range],
        )?;
        Ok(out.lines().map(str::to_owned).collect())
    }

    /// True when `ancestor` is an ancestor of (or equal to) `commit`.
    pub fn is_ancestor(&self, ancestor: &str, commit: &str) -> bool {
        git(
            &self.top,
            &["merge-base", "--is-ancestor", ancestor, commit],
        )
        .is_ok()
    }

    /// One line naming a commit: short id and subject.
    pub fn describe(&self, commit: &str) -> String {
        git(&self.top, &["log", "-1", "--format=%h %s", commit])
            .unwrap_or_else(|_| short(commit).to_owned())
    }

    /// Key of this repository in the cache: a hash of its git directory.
    fn cache_key(&self) -> String {
        let name = self
            .top
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let hash = fnv1a(self.common_dir.to_string_lossy().as_bytes());
        format!("{name}-{hash:016x}")
    }
}

/// The first 12 hex digits of a commit id.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// FNV-1a, 64 bits: a stable name for a path (not a security boundary).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The cache root: `$KURABE_CACHE_DIR`, `$XDG_CACHE_HOME/kurabe` or `~/.cache/kurabe`.
pub fn cache_dir() -> Option<PathBuf> {
    let set = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    set("KURABE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| set("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("kurabe")))
        .or_else(|| set("HOME").map(|d| PathBuf::from(d).join(".cache/kurabe")))
}

pub use kurabe_model::progress::Prepared;

/// Cached worktrees of one repository.
#[derive(Debug, Clone)]
pub struct WorktreeCache {
    repo: Repo,
    root: PathBuf,
}

/// Marker written into a worktree after a successful build: the build's
/// command, so a changed `[build]` builds again.
const BUILT_MARKER: &str = ".kurabe-built";

impl WorktreeCache {
    /// The cache of `repo` under `cache` (see [`cache_dir`]).
    pub fn new(repo: Repo, cache: &Path) -> WorktreeCache {
        let root = cache.join("worktrees").join(repo.cache_key());
        WorktreeCache { repo, root }
    }

    /// The repository.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// `rev` resolved, checked out in its cached worktree and built with
    /// `build` (once per commit and build command).
    pub fn prepare(
        &self,
        rev: &str,
        build: Option<&Build>,
        stop: &Arc<Stop>,
    ) -> Result<Prepared, GitError> {
        let commit = self.repo.resolve(rev)?;
        let dir = self.root.join(&commit);
        let _lock = self.lock(&format!("{commit}.lock"))?;
        if !dir.join(".git").exists() {
            self.add_worktree(&dir, &commit)?;
        }
        let built_now = self.build_once(rev, &commit, &dir, build, stop)?;
        Ok(Prepared {
            rev: rev.to_owned(),
            commit,
            dir,
            built_now,
        })
    }

    /// Build the worktree `dir` of `commit` unless it was built with this
    /// very `build` before (a marker file keeps the build's key); true when
    /// it was built now.
    fn build_once(
        &self,
        rev: &str,
        commit: &str,
        dir: &Path,
        build: Option<&Build>,
        stop: &Arc<Stop>,
    ) -> Result<bool, GitError> {
        let marker = dir.join(BUILT_MARKER);
        let wanted = build.map(build_key).unwrap_or_default();
        let done = std::fs::read_to_string(&marker).ok();
        if done.as_deref() == Some(wanted.as_str()) {
            return Ok(false);
        }
        if let Some(b) = build {
            let log = self.root.join(format!("{commit}.build.log"));
            run_build(b, dir, &log, stop).map_err(|f| f.into_error(rev, commit, log))?;
        }
        std::fs::write(&marker, &wanted).map_err(|source| GitError::Cache {
            path: marker.clone(),
            source,
        })?;
        Ok(true)
    }

    /// `git worktree add --detach` under the repository-wide lock (git's
    /// own bookkeeping of worktrees is not safe against concurrent adds).
    fn add_worktree(&self, dir: &Path, commit: &str) -> Result<(), GitError> {
        let _lock = self.lock("add.lock")?;
        if dir.exists() {
            // A half-made worktree from an interrupted add: start over.
            std::fs::remove_dir_all(dir).map_err(|source| GitError::Cache {
                path: dir.to_owned(),
                source,
            })?;
        }
        git(&self.repo.top, &["worktree", "prune"])?;
        let path = dir.to_string_lossy();
        git(
            &self.repo.top,
            &["worktree", "add", "--force", "--detach", &path, commit],
        )?;
        Ok(())
    }

    /// An exclusive lock on `name` in the cache, held until dropped.
    fn lock(&self, name: &str) -> Result<File, GitError> {
        let path = self.root.join(name);
        let cache_err = |source| GitError::Cache {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.root).map_err(cache_err)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(cache_err)?;
        // SAFETY: flock on a descriptor we own; it is released when `file` closes.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            return Err(cache_err(std::io::Error::last_os_error()));
        }
        Ok(file)
    }
}

/// [`cache_dir`], or the error that says how to set one.
fn cache_dir_or_error() -> Result<PathBuf, GitError> {
    cache_dir().ok_or_else(|| GitError::Cache {
        path: PathBuf::from("~/.cache/kurabe"),
        source: std::io::Error::other("neither KURABE_CACHE_DIR, XDG_CACHE_HOME nor HOME is set"),
    })
}

/// What `{worktree}` stands for in each variant of `plan`: the cached,
/// built worktree of its `rev`, else the top level of the work tree that
/// holds the plan (none outside git, unless some variant needs a `rev`).
/// `on_prepared` hears of each revision as it is ready.
pub fn prepare_revisions(
    plan: &Plan,
    plan_dir: &Path,
    stop: &Arc<Stop>,
    on_prepared: &mut dyn FnMut(&Prepared),
) -> Result<BTreeMap<String, PathBuf>, GitError> {
    let variants = plan.resolved_variants();
    let needs_git = variants.iter().any(|v| v.rev.is_some());
    let repo = match Repo::discover(plan_dir) {
        Ok(r) => r,
        Err(_) if !needs_git => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    let cache = WorktreeCache::new(repo, &cache_dir_or_error()?);
    let mut dirs = BTreeMap::new();
    for v in &variants {
        let dir = match &v.rev {
            Some(rev) => {
                let p = cache.prepare(rev, plan.build.as_ref(), stop)?;
                on_prepared(&p);
                p.dir
            }
            None => cache.repo().top.clone(),
        };
        dirs.insert(v.name.clone(), dir);
    }
    Ok(dirs)
}

/// What identifies a build: its command and environment.
fn build_key(b: &Build) -> String {
    format!("{:?} {:?}\n", b.command, b.env)
}

/// How a build ended, when not well.
enum BuildFailure {
    Status(String),
    Interrupted,
    Io(std::io::Error),
}

impl BuildFailure {
    fn into_error(self, rev: &str, commit: &str, log: PathBuf) -> GitError {
        let status = match self {
            BuildFailure::Interrupted => return GitError::Interrupted(rev.to_owned()),
            BuildFailure::Io(e) => format!("cannot start it: {e}"),
            BuildFailure::Status(s) => s,
        };
        GitError::BuildFailed {
            rev: rev.to_owned(),
            commit: short(commit).to_owned(),
            status,
            tail: last_line(&log),
            log,
        }
    }
}

/// Run `[build]` in `dir`, output to `log`; the build's whole tree dies
/// with kurabe or on Ctrl-C.
fn run_build(b: &Build, dir: &Path, log: &Path, stop: &Arc<Stop>) -> Result<(), BuildFailure> {
    let vars = BTreeMap::from([(WORKTREE_PLACEHOLDER.to_owned(), dir.display().to_string())]);
    let argv = argv_of(&b.command.substitute(&vars), &[]);
    let out = File::create(log).map_err(BuildFailure::Io)?;
    let err = out.try_clone().map_err(BuildFailure::Io)?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .envs(&b.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let mut child = kurabe_probe::launch::spawn(&mut cmd, None).map_err(BuildFailure::Io)?;
    if !child.wait_exit_or_stop(stop) {
        return Err(BuildFailure::Interrupted); // dropping `child` kills the build
    }
    let (status, _) = child.reap();
    match (status.code, status.signal) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => Err(BuildFailure::Status(format!("exit status {code}"))),
        (None, Some(sig)) => Err(BuildFailure::Status(format!("killed by signal {sig}"))),
        (None, None) => Err(BuildFailure::Status("status unknown".into())),
    }
}

/// The last non-empty line of a file (the error is one line; the log has
/// the rest), from its last 64 KiB (a build's log may be of any size).
fn last_line(path: &Path) -> String {
    use std::io::{Seek, SeekFrom};
    const TAIL: u64 = 64 << 10;
    let mut bytes = Vec::new();
    if let Ok(mut f) = File::open(path) {
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
        let _ = f.take(TAIL).read_to_end(&mut bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().rev().find(|l| !l.trim().is_empty());
    line.map_or("no output".to_owned(), |l| format!("`{}`", l.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys_are_stable_and_differ_by_path() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(b"/a/.git"), fnv1a(b"/b/.git"));
        assert_eq!(short("0123456789abcdef0123"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }
}
