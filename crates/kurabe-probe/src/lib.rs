//! kurabe-probe: Linux measurement of processes and the system.
//!
//! Owns: the process-tree sampler ([`TreeSampler`], CPU from `/proc/PID/stat`,
//! RSS/PSS/USS from `smaps_rollup`), a background [`Watcher`] and its
//! [`WatchSummary`], TCP port → listening process ([`find_listener`]), system
//! memory with every procps generation's "used" ([`MemInfo`]), top processes
//! by PSS, host facts, starting a command in its own process group
//! ([`launch`]), private cgroups with limits ([`cgroup::RunCgroup`]) and the
//! whole `kurabe watch` session ([`WatchSession`]).
//!
//! Must not: print, parse command lines, or leave a child process or cgroup
//! directory behind (guards kill and remove on drop). Linux only.
//!
//! Server-side metrics for `kurabe http`:
//!
//! ```no_run
//! use std::time::Duration;
//! let pid = kurabe_probe::find_listener(8080)?.expect("a server on 8080");
//! let watcher = kurabe_probe::Watcher::spawn(pid, Duration::from_millis(250))?;
//! // ... generate load ...
//! let summary = watcher.stop();
//! let server = summary.tree.server_metrics(1000 /* responses received */);
//! # Ok::<(), kurabe_probe::ProbeError>(())
//! ```

pub mod cgroup;
pub mod cgroup_run;
pub mod error;
pub mod exitwait;
pub mod host;
pub mod last_words;
pub mod launch;
pub mod mem_report;
pub mod meminfo;
pub mod origin;
pub mod pmu;
pub mod port;
mod proc_counters;
pub mod procfs;
pub mod rev;
pub mod session;
pub mod signals;
pub mod tree;
pub mod watch;
pub mod watch_request;

pub use error::{ProbeError, Result};
pub use meminfo::{top_by_pss, MemInfo};
pub use port::{find_listener, listener_pids, require_listener};
pub use session::{CommandSpec, SessionConfig, WatchSession, WatchTarget};
pub use tree::{Sample, SamplerConfig, TreeSampler};
pub use watch::{Recorder, WatchSummary, Watcher};
