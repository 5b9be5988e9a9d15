//! Typed errors of the probe library.
//!
//! Messages name the thing that failed and say what to do; the binary adds
//! context and maps them to exit code 2.

use std::path::PathBuf;

/// Everything that can stop a probe from starting.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The PID to watch does not exist (or exited before the first sample).
    #[error("no process with PID {0}: check the PID with `ps -p {0}`")]
    NoSuchProcess(u32),
    /// Nothing listens on the TCP port (IPv4 or IPv6) in this network namespace.
    #[error("no process listens on TCP port {0} (checked /proc/net/tcp and tcp6); start the server first or pass its PID with -p")]
    NoListener(u16),
    /// A socket listens on the port but no visible process holds it.
    #[error("TCP port {0} is listening but its process is not visible (another user's process?); run as that user or as root, or pass the PID with -p")]
    ListenerHidden(u16),
    /// Reading a /proc or /sys file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File that could not be read.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// kurabe ran out of file descriptors (EMFILE/ENFILE) opening a /proc
    /// file: a sample that cannot be taken now, not a process that exited.
    #[error("cannot open {path}: kurabe is out of file descriptors ({source}); raise `ulimit -n`")]
    OutOfDescriptors {
        /// File that could not be opened.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A /proc file had an unexpected format.
    #[error("cannot parse {path}: {what}")]
    Parse {
        /// File with the unexpected content.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// cgroup setup or teardown failed.
    #[error(transparent)]
    Cgroup(#[from] crate::cgroup::CgroupError),
    /// The cgroup that carries a command's `--cpus`/`--cpuset`/`--memory` could not be made.
    #[error("cannot set up the limits: {0}")]
    Limits(crate::cgroup::CgroupError),
    /// A command to watch could not be started.
    #[error("cannot start '{program}': {source}; check the command and its PATH")]
    Spawn {
        /// The program that failed to start.
        program: String,
        /// Underlying error.
        source: std::io::Error,
    },
}

impl ProbeError {
    /// `Read` or, when `source` is EMFILE/ENFILE, `OutOfDescriptors`.
    pub(crate) fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if crate::procfs::out_of_descriptors(&source) {
            Self::OutOfDescriptors { path, source }
        } else {
            Self::Read { path, source }
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ProbeError> = std::result::Result<T, E>;
