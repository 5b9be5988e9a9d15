//! The records kurabe keeps: experiments, runs, saved single results, the
//! machine they were measured on, the listing, and the export format.
//!
//! Owns these types as plain data, shared by the store (which persists
//! them), the runner (which fills them) and the reports (which read them).
//! Must not do I/O: reading this machine's facts lives in `kurabe-probe`,
//! the database in `kurabe-store`.
//!
//! Export JSON is versioned ([`EXPORT_VERSION`]) and snake_case, so an
//! export from one machine imports on another running a later kurabe.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::host::HostFacts;
pub use crate::run_status::RunStatus;
pub use crate::saved::{ResultKind, SavedRecord};

/// Version of the export format.
pub const EXPORT_VERSION: u32 = 1;

/// Marker of kurabe export files, checked on import.
pub const EXPORT_FORMAT: &str = "kurabe-results";

/// The code a record measured: the git commit of the working directory
/// (when run inside a git work tree) and/or a label given by CI (`--rev`,
/// `KURABE_REV`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Revision {
    /// Full commit id of `HEAD`; absent outside a git work tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^[0-9a-f]{7,64}$"))]
    pub commit: Option<String>,
    /// Branch checked out; absent on a detached `HEAD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Committer time of `HEAD`, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_time: Option<String>,
    /// Tracked files differed from `HEAD` when the record was made.
    #[serde(default)]
    pub dirty: bool,
    /// Label from `--rev` or `KURABE_REV` (a CI build id, a tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Revision {
    /// How the revision reads in a table: the label, else the commit's
    /// first 10 hex digits, `+` when dirty; `-` when neither is known.
    pub fn short(&self) -> String {
        let base = match (&self.label, &self.commit) {
            (Some(l), _) => l.clone(),
            (None, Some(c)) => c.chars().take(10).collect(),
            (None, None) => "-".to_owned(),
        };
        if self.dirty {
            base + "+"
        } else {
            base
        }
    }

    /// True when `rev` names this revision: its label, its branch, or a
    /// prefix (4 hex digits or more) of its commit.
    pub fn matches(&self, rev: &str) -> bool {
        self.label.as_deref() == Some(rev)
            || self.branch.as_deref() == Some(rev)
            || (rev.len() >= 4 && self.commit.as_deref().is_some_and(|c| c.starts_with(rev)))
    }
}

/// The cgroup limits in force on the process that measured (the tightest
/// of its cgroup and the cgroups above it): part of the host fingerprint,
/// since a container's quota changes results as much as the CPU does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct CgroupLimits {
    /// CPU quota in cores (quota / period); absent when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// Memory limit, bytes; absent when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

/// Where a record was measured, beyond the host facts: the code version
/// and the cgroup limits in force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Origin {
    /// The code measured; absent outside a git work tree without a label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<Revision>,
    /// cgroup limits in force; absent when unknown (records from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<CgroupLimits>,
}

/// The host fingerprint: 16 hex digits naming CPU model, cores, memory,
/// kernel, architecture and cgroup limits (not the host name, so identical
/// CI runners share a history). Same inputs, same fingerprint, on every
/// machine and version (FNV-1a 64, not the std hasher, which may change).
pub fn host_fingerprint(host: &HostFacts, limits: Option<&CgroupLimits>) -> String {
    let limits = limits.copied().unwrap_or_default();
    let text = format!(
        "{}|{}|{}|{}|{}|{}|{}",
        host.cpu_model,
        host.cores,
        host.memory_bytes,
        host.kernel,
        host.arch,
        limits.cpus.map_or("-".to_owned(), |c| format!("{c:.3}")),
        limits
            .memory_bytes
            .map_or("-".to_owned(), |m| m.to_string()),
    );
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// The process that writes an experiment (`BOOT_ID:START_TICKS` names it
/// beyond pid reuse; the liveness check, which reads /proc, is the store's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Writer {
    /// Host name of the machine the writer ran on.
    pub hostname: String,
    /// Its process id there.
    pub pid: u32,
    /// `BOOT_ID:START_TICKS`, naming the process beyond pid reuse; empty
    /// when /proc could not be read.
    pub process_start: String,
}

/// Id of an experiment.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct ExperimentId(pub i64);

/// Id of a saved single result.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct ResultId(pub i64);

/// Id of anything the store lists: `e12` (experiment) or `r7` (saved result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryId {
    /// An experiment.
    Experiment(ExperimentId),
    /// A saved single result.
    Result(ResultId),
}

impl From<ExperimentId> for EntryId {
    fn from(id: ExperimentId) -> Self {
        EntryId::Experiment(id)
    }
}

impl From<ResultId> for EntryId {
    fn from(id: ResultId) -> Self {
        EntryId::Result(id)
    }
}

impl fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

impl fmt::Display for ResultId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryId::Experiment(id) => id.fmt(f),
            EntryId::Result(id) => id.fmt(f),
        }
    }
}

impl FromStr for EntryId {
    type Err = String;

    /// `e12`, `r7`, or a bare `12` (an experiment).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad =
            || format!("expected an id like `e12` (experiment) or `r7` (saved result), got `{s}`");
        let (ctor, digits): (fn(i64) -> EntryId, &str) = match s.as_bytes().first() {
            Some(b'e' | b'E') => (|n| EntryId::Experiment(ExperimentId(n)), &s[1..]),
            Some(b'r' | b'R') => (|n| EntryId::Result(ResultId(n)), &s[1..]),
            _ => (|n| EntryId::Experiment(ExperimentId(n)), s),
        };
        digits
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .map(ctor)
            .ok_or_else(bad)
    }
}

/// How an experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentStatus {
    /// Not finished: still running, or the process writing it died
    /// (a crash leaves this status behind; its finished runs are kept).
    Running,
    /// Every scheduled run happened.
    Complete,
    /// Stopped by Ctrl-C; finished runs are kept.
    Interrupted,
    /// Stopped by a failure (`on_failure = "stop"`, a setup error).
    Failed,
    /// Left `running` by a writer that is gone (killed, crashed, the
    /// machine rebooted); its finished runs are kept. Derived when read,
    /// never stored: the database still says `running`.
    Crashed,
}

impl ExperimentStatus {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentStatus::Running => "running",
            ExperimentStatus::Complete => "complete",
            ExperimentStatus::Interrupted => "interrupted",
            ExperimentStatus::Failed => "failed",
            ExperimentStatus::Crashed => "crashed",
        }
    }

    /// The word written to the database: `crashed` is stored as `running`
    /// (it is derived from the writer when read).
    pub fn stored(self) -> &'static str {
        match self {
            ExperimentStatus::Crashed => "running",
            other => other.as_str(),
        }
    }

    /// The stored word back; anything unknown reads as `running`.
    pub fn parse(s: &str) -> ExperimentStatus {
        match s {
            "complete" => ExperimentStatus::Complete,
            "interrupted" => ExperimentStatus::Interrupted,
            "failed" => ExperimentStatus::Failed,
            _ => ExperimentStatus::Running,
        }
    }
}

impl fmt::Display for ExperimentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An experiment about to start.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExperiment {
    /// Plan name.
    pub name: String,
    /// The plan file's text, verbatim, so the experiment can be rerun.
    pub plan_text: String,
    /// Seed of the run order.
    pub seed: Option<u64>,
    /// The machine it runs on.
    pub host: HostFacts,
    /// kurabe version running it.
    pub tool_version: String,
    /// Code version and cgroup limits.
    pub origin: Origin,
}

/// One metric value of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct MetricValue {
    /// Catalogue name (`requests_per_second`).
    #[schemars(extend("pattern" = "^[a-z0-9_]+$"))]
    pub name: String,
    /// The value; a non-finite one is written to JSON as null and read
    /// back as NaN.
    #[serde(deserialize_with = "nan_from_null")]
    #[schemars(transform = crate::schema::nullable)]
    pub value: f64,
    /// Unit symbol or name (`req/s`, `bytes`).
    pub unit: String,
}

fn nan_from_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One finished run of one variant and workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RunRecord {
    /// Variant name.
    pub variant: String,
    /// Workload name.
    pub workload: String,
    /// Round number, 0-based.
    pub round: u32,
    /// Whether it produced metrics.
    pub status: RunStatus,
    /// Last lines of the target's stderr when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_tail: Option<String>,
    /// Start, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    pub started_at: String,
    /// End, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    pub finished_at: String,
    /// The run's metrics.
    pub metrics: Vec<MetricValue>,
    /// The workload's full result (an HTTP report, a command's
    /// executions …), by kind; none for a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "crate::run_detail::sorted_keys")]
    pub record: Option<crate::run_detail::RunDetail>,
    /// HTTP workloads: the protocol and client engine that actually ran,
    /// read from the HTTP report in `record` ([`HttpRun::of_detail`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpRun>,
}

/// The protocol and client engine an HTTP run actually used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct HttpRun {
    /// `http/1.1`, `h2c` (HTTP/2 with prior knowledge) or `h2` (HTTP/2 over TLS).
    #[schemars(extend("enum" = ["http/1.1", "h2c", "h2"]))]
    pub protocol: String,
    /// The client I/O engine (`epoll` or `io_uring`), when the report says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

impl HttpRun {
    /// What a run's record says ran: its HTTP report's `protocol` and
    /// `engine` (the report is the one home of both); `None` for runs
    /// without an HTTP report.
    pub fn of_detail(record: &crate::run_detail::RunDetail) -> Option<HttpRun> {
        let http = record.http()?;
        Some(HttpRun {
            protocol: http.protocol.clone(),
            engine: http.engine.clone(),
        })
    }
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct StoredRun {
    /// Row id (not preserved by export/import).
    pub id: i64,
    /// What was recorded.
    #[serde(flatten)]
    pub run: RunRecord,
}

/// An experiment with its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct Experiment {
    /// Id in this store (a fresh one is given on import).
    pub id: ExperimentId,
    /// Plan name.
    pub name: String,
    /// Plan text.
    pub plan_text: String,
    /// The machine it ran on.
    #[schemars(required, transform = crate::schema::nullable)]
    pub host: Option<HostFacts>,
    /// kurabe version that ran it.
    pub tool_version: String,
    /// Seed of the run order.
    #[schemars(required, transform = crate::schema::nullable)]
    pub seed: Option<u64>,
    /// Start, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    pub started_at: String,
    /// End, RFC 3339 UTC; `None` while running or after a crash.
    #[schemars(required, transform = crate::schema::nullable)]
    #[schemars(transform = crate::schema::rfc3339)]
    pub finished_at: Option<String>,
    /// How it ended.
    pub status: ExperimentStatus,
    /// The process that wrote it (schema 3 on; absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<Writer>,
    /// Code version and cgroup limits (schema 4 on; empty before).
    #[serde(default)]
    pub origin: Origin,
    /// Runs in the order they were recorded.
    pub runs: Vec<StoredRun>,
    /// What the plan says about reading the runs (order, baseline, noise
    /// bands), read from `plan_text` once by the store that loaded it;
    /// `None` when the text is not a plan this kurabe reads (an import).
    /// Derived, so neither stored nor exported; boxed, as most readers
    /// of an experiment never look at it.
    #[serde(skip)]
    #[schemars(skip)]
    pub layout: Option<Box<crate::layout::Layout>>,
}

/// A saved single result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(into = "SavedResultJson", from = "SavedResultJson")]
pub struct SavedResult {
    /// Id in this store.
    pub id: ResultId,
    /// Label given when saving (default: what was measured, e.g. the URL).
    pub label: String,
    /// The machine it was measured on.
    pub host: Option<HostFacts>,
    /// When it was saved, RFC 3339 UTC.
    pub created_at: String,
    /// The command's record, as it prints with `--format json`; its
    /// variant is the result's kind.
    pub record: SavedRecord,
    /// Code version and cgroup limits (schema 4 on; empty before).
    pub origin: Origin,
}

impl SavedResult {
    /// Which command produced it.
    pub fn kind(&self) -> ResultKind {
        self.record.kind()
    }
}

/// A [`SavedResult`] in JSON (exports, `results show`): the kind beside
/// the record, the record untagged as the command printed it.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
struct SavedResultJson {
    /// Id in this store.
    id: ResultId,
    /// Which command produced it.
    kind: ResultKind,
    /// Label given when saving (default: what was measured, e.g. the URL).
    label: String,
    /// The machine it was measured on.
    #[schemars(required, transform = crate::schema::nullable)]
    host: Option<HostFacts>,
    /// When it was saved, RFC 3339 UTC.
    #[schemars(transform = crate::schema::rfc3339)]
    created_at: String,
    /// The command's JSON record, as it prints with `--format json`.
    record: serde_json::Value,
    /// Code version and cgroup limits (schema 4 on; empty before).
    #[serde(default)]
    origin: Origin,
}

impl From<SavedResult> for SavedResultJson {
    fn from(r: SavedResult) -> Self {
        SavedResultJson {
            id: r.id,
            kind: r.kind(),
            label: r.label,
            host: r.host,
            created_at: r.created_at,
            record: r.record.to_value(),
            origin: r.origin,
        }
    }
}

impl From<SavedResultJson> for SavedResult {
    fn from(r: SavedResultJson) -> Self {
        SavedResult {
            id: r.id,
            label: r.label,
            host: r.host,
            created_at: r.created_at,
            record: SavedRecord::read(r.kind, r.record),
            origin: r.origin,
        }
    }
}

/// Anything the store holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// An experiment with its runs.
    Experiment(Experiment),
    /// A saved single result.
    Result(SavedResult),
}

/// One line of `kurabe results list`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ListEntry {
    /// `e12` or `r7`.
    #[serde(serialize_with = "display")]
    #[schemars(with = "String")]
    pub id: EntryId,
    /// `experiment`, or the kind of a saved result.
    pub kind: String,
    /// Experiment name or result label.
    pub name: String,
    /// Host name of the machine.
    #[schemars(required, transform = crate::schema::nullable)]
    pub hostname: Option<String>,
    /// Start or save time, RFC 3339 UTC.
    pub created_at: String,
    /// Experiment status; for a saved result `complete`, or `interrupted`
    /// when its record says it was.
    #[schemars(required, transform = crate::schema::nullable)]
    pub status: Option<ExperimentStatus>,
    /// Runs recorded (experiments), 0 for saved results.
    pub runs: u64,
    /// Runs that failed.
    pub failed_runs: u64,
}

fn display<S: serde::Serializer>(id: &EntryId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

/// An export file: entries with everything needed to import them elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe results export",
    description = "What `kurabe results export` writes and `kurabe results import` reads: experiments with their runs, and saved single results, with the facts of the machine they were measured on. Version 1."
)]
pub struct Export {
    /// Always [`EXPORT_FORMAT`].
    #[schemars(extend("const" = "kurabe-results"))]
    pub format: String,
    /// [`EXPORT_VERSION`] at writing.
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// The exported entries.
    pub entries: Vec<Entry>,
}

impl Experiment {
    /// Its host fingerprint ([`host_fingerprint`]); `None` without host facts.
    pub fn host_fingerprint(&self) -> Option<String> {
        let host = self.host.as_ref()?;
        Some(host_fingerprint(host, self.origin.limits.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--kind` offers every kind by the word the store keeps, and reads it back.
    #[test]
    fn every_result_kind_reads_back_from_its_word() {
        for kind in ResultKind::ALL {
            assert_eq!(ResultKind::parse(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn http_run_is_read_from_the_http_report_in_a_run_record() {
        let http = crate::http::HttpReport {
            protocol: "h2".into(),
            engine: Some("epoll".into()),
            ..Default::default()
        };
        let rec = crate::run_detail::RunDetail::Http(Box::new(crate::run_detail::HttpDetail {
            http,
            target: None,
            settling: None,
            throughput_settling: None,
            soak: None,
        }));
        let got = HttpRun::of_detail(&rec).unwrap();
        assert_eq!(
            (got.protocol.as_str(), got.engine.as_deref()),
            ("h2", Some("epoll"))
        );
        let idle = crate::run_detail::RunDetail::Idle(crate::run_detail::IdleDetail {
            target: None,
            system_used_bytes: Some(1),
        });
        assert_eq!(HttpRun::of_detail(&idle), None);
    }

    fn facts() -> HostFacts {
        HostFacts {
            hostname: "a".into(),
            cpu_model: "CPU".into(),
            cores: 2,
            memory_bytes: 1 << 30,
            kernel: "6.1".into(),
            arch: "x86_64".into(),
        }
    }

    #[test]
    fn fingerprint_ignores_the_host_name_but_not_limits() {
        let a = facts();
        let b = HostFacts {
            hostname: "b".into(),
            ..facts()
        };
        assert_eq!(host_fingerprint(&a, None), host_fingerprint(&b, None));
        assert_eq!(host_fingerprint(&a, None).len(), 16);
        let limited = CgroupLimits {
            cpus: Some(0.5),
            memory_bytes: None,
        };
        assert_ne!(
            host_fingerprint(&a, None),
            host_fingerprint(&a, Some(&limited))
        );
        let c = HostFacts {
            cores: 4,
            ..facts()
        };
        assert_ne!(host_fingerprint(&a, None), host_fingerprint(&c, None));
        // Pinned: a stored history must keep its fingerprint across versions.
        assert_eq!(
            host_fingerprint(&a, None),
            host_fingerprint(&facts(), Some(&CgroupLimits::default()))
        );
    }

    #[test]
    fn revisions_read_short_and_match_branch_label_or_commit_prefix() {
        let r = Revision {
            commit: Some("0123456789abcdef".into()),
            branch: Some("main".into()),
            commit_time: None,
            dirty: true,
            label: None,
        };
        assert_eq!(r.short(), "0123456789+");
        assert!(r.matches("main") && r.matches("01234") && !r.matches("012"));
        assert!(!r.matches("dev"));
        let l = Revision {
            label: Some("ci-42".into()),
            ..Revision::default()
        };
        assert_eq!(l.short(), "ci-42");
        assert!(l.matches("ci-42"));
    }

    #[test]
    fn entry_ids_parse_and_print() {
        assert_eq!("e12".parse(), Ok(EntryId::Experiment(ExperimentId(12))));
        assert_eq!("12".parse(), Ok(EntryId::Experiment(ExperimentId(12))));
        assert_eq!("r7".parse(), Ok(EntryId::Result(ResultId(7))));
        assert_eq!(EntryId::Result(ResultId(7)).to_string(), "r7");
        for bad in ["", "e", "x1", "e-1", "r0", "12a"] {
            let err = bad.parse::<EntryId>().unwrap_err();
            assert!(err.starts_with("expected an id like `e12`"), "{bad}: {err}");
        }
    }
}
