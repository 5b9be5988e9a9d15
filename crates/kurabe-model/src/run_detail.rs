//! What one run of a workload recorded beyond its metrics: [`RunDetail`],
//! one variant per kind of workload, tagged by `kind` in JSON.
//!
//! Owns the shape of `RunRecord::record` as the runner writes it, the store
//! keeps it and the reports read it (the HTTP report with the target's
//! figures and series, a soak's fits, a command's executions, …), and the
//! accessors readers use instead of looking keys up. Must not do I/O or
//! compute anything: the runner measures, this is the data.
//!
//! Stores keep these as JSON, so the shapes are a contract: every row a
//! released kurabe wrote must still read (the binary's `old_store` tests
//! hold a store written before this type existed). A row that no variant
//! takes whole (a shape from before, a kind from after) is kept as it is
//! in [`RunDetail::Unrecognised`] and written back unchanged: the store
//! never loses what it holds. Adding a kind is one variant here and its
//! struct; readers match on what they know.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::http::{HttpReport, ServerMetrics};
use crate::imported::ImportedRun;
use crate::probe::WatchPoint;
use crate::stats::trend::{LineFit, TrendVerdict};
use crate::stats::warmup::Settling;
use crate::system::SystemReport;
use crate::tree_counters::Counts;

/// One run's full record, by the kind of workload that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunDetail {
    /// An `http` workload (a plan's, `kurabe http A B`'s), soak runs included.
    Http(Box<HttpDetail>),
    /// A `watch` workload: the tree's CPU and memory over the duration.
    Watch(Box<WatchDetail>),
    /// A `command` workload (a plan's, `kurabe cmd`'s): every timed execution.
    Command(CommandDetail),
    /// An `idle` workload: the target's (or the system's) memory once settled.
    Idle(IdleDetail),
    /// A `system` workload: the UnixBench-style report.
    System(Box<SystemDetail>),
    /// A run imported from another harness (`kurabe results import`).
    Imported(ImportedRun),
    /// An `http` workload with `find_rate`: one capacity search's steps
    /// and how it ended (its estimate is the run's `capacity_per_second`).
    Capacity(Box<crate::capacity::CapacitySearchDetail>),
    /// A record no variant above takes whole (written by another version),
    /// kept as it was read so that nothing in a store is lost. Not in the
    /// schema: kurabe never writes one itself.
    #[serde(untagged)]
    #[schemars(skip)]
    Unrecognised(serde_json::Value),
}

/// An HTTP run: the load generator's report and, with a target, what its
/// process tree did meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct HttpDetail {
    /// The load generator's report (`server` holds the target's figures).
    pub http: HttpReport,
    /// The target's process tree during the load; absent without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TreeDetail>,
    /// Where the target's CPU settled; absent without a target and for soak runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settling: Option<SettlingDetail>,
    /// Where the throughput (`completed_per_s`, from the per-second series)
    /// settled; absent for soak runs and in records from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_settling: Option<SettlingDetail>,
    /// The soak's memory series and fits; present for soak runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakDetail>,
}

/// A `watch` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct WatchDetail {
    /// The watched tree over the duration.
    pub target: TreeDetail,
    /// Where its CPU settled (absent in records from before the warm-up check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settling: Option<SettlingDetail>,
}

/// A process tree sampled over a phase (the target during a load, a
/// watch): the one summary of a tree, from the sampler's recorder
/// (kurabe-probe's `WatchSummary` holds it) to the store and every report.
/// A new figure of the tree is one field here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct TreeDetail {
    /// Root PID.
    pub pid: u32,
    /// Length of the sampled phase, seconds.
    #[serde(deserialize_with = "nan_from_null")]
    pub duration_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// CPU seconds of the tree from /proc.
    #[serde(deserialize_with = "nan_from_null")]
    pub cpu_seconds_proc: f64,
    /// CPU seconds of the run's cgroup (escaped children too); null without one.
    #[serde(default)]
    pub cpu_seconds_cgroup: Option<f64>,
    /// Highest CPU % of one interval (100 = one core).
    #[serde(deserialize_with = "nan_from_null")]
    pub cpu_percent_max: f64,
    /// Σ PSS at the first sample.
    pub pss_start_bytes: u64,
    /// Highest Σ PSS.
    pub pss_peak_bytes: u64,
    /// Σ PSS at the last sample.
    pub pss_end_bytes: u64,
    /// Mean Σ PSS.
    pub pss_mean_bytes: u64,
    /// Highest Σ RSS.
    pub rss_peak_bytes: u64,
    /// Highest Σ USS.
    pub uss_peak_bytes: u64,
    /// Most processes at once.
    pub processes_max: u32,
    /// Most threads at once.
    pub threads_max: u32,
    /// The root process exited during the phase.
    pub root_exited: bool,
    /// The kernel's counters of the tree over the phase (faults, context
    /// switches, I/O calls and bytes, migrations, …); a counter not
    /// counted is absent (and all of them in records from before them).
    #[serde(default, skip_serializing_if = "Counts::is_empty")]
    pub counters: Counts,
    /// CPU and memory over time, for the report's per-run charts (absent
    /// in records from before the charts).
    #[serde(default)]
    pub series: Vec<WatchPoint>,
}

/// Σ RSS above Σ PSS by more than this share means shared pages were counted
/// more than once.
const RSS_OVERCOUNT_RATIO: f64 = 1.10;

impl TreeDetail {
    /// The best CPU seconds figure: the cgroup counter when present, else `/proc`.
    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_seconds_cgroup.unwrap_or(self.cpu_seconds_proc)
    }

    /// Mean CPU over the phase, percent of one core.
    pub fn cpu_percent_mean(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.cpu_seconds() / self.duration_s * 100.0
        } else {
            0.0
        }
    }

    /// True when Σ RSS over-counts pages the tree's processes share (several
    /// processes and Σ RSS more than 10 % above Σ PSS).
    pub fn rss_overcounts(&self) -> bool {
        self.processes_max > 1
            && self.rss_peak_bytes as f64 > self.pss_peak_bytes as f64 * RSS_OVERCOUNT_RATIO
    }

    /// The server's figures for `kurabe http`, given the responses it
    /// sent in the run ([`HttpReport::answered_requests`]): its CPU per
    /// response, none when it sent none (a cost per nothing is not zero,
    /// it is unknown), and so its counters per response.
    pub fn server_metrics(&self, answered: u64) -> ServerMetrics {
        let cpu_ms = self.cpu_seconds() * 1000.0;
        ServerMetrics {
            pid: self.pid,
            cpu_ms_per_request: (answered > 0).then(|| cpu_ms / answered as f64),
            cpu_percent_mean: self.cpu_percent_mean(),
            pss_start_bytes: self.pss_start_bytes,
            pss_peak_bytes: self.pss_peak_bytes,
            pss_end_bytes: self.pss_end_bytes,
            counters_per_request: self.counters.per(answered as f64),
        }
    }
}

/// Where a run's CPU % settled within its measured phase, and the
/// warm-up before it, for the report's warm-up check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct SettlingDetail {
    /// The series judged (`cpu_percent`).
    pub series: String,
    /// Warm-up that ran before the measured phase, seconds.
    #[serde(deserialize_with = "nan_from_null")]
    pub warmup_s: f64,
    /// Where it settled; null when the series was too short to judge.
    pub found: Option<Settling>,
}

/// A soak run's memory against requests served, and the fits of its floor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct SoakDetail {
    /// Names of the columns of `samples` (absent in records from before
    /// the fitted column: `t_s`, `requests`, `pss_bytes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_columns: Vec<String>,
    /// The samples, one row each.
    pub samples: Vec<SoakSample>,
    /// The column the fits and the floor are in (absent before it existed:
    /// `pss_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<String>,
    /// Growing, flat or unknown.
    pub verdict: TrendVerdict,
    /// Theil–Sen slope of the floor, bytes per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_slope_bytes_per_request: Option<f64>,
    /// Its 95 % interval's lower end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_slope_low_bytes_per_request: Option<f64>,
    /// Its 95 % interval's upper end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_slope_high_bytes_per_request: Option<f64>,
    /// The slope at the measured requests/s, MB per hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_growth_mb_per_hour: Option<f64>,
    /// Least-squares fit of the floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub least_squares: Option<LineFit>,
    /// Theil–Sen fit of the floor (the one the verdict uses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theil_sen: Option<LineFit>,
    /// Theil–Sen fit of the floor's last half (the plateau check); null
    /// when it had too few points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "present")]
    pub last_half: Option<Option<LineFit>>,
    /// The per-window floor as `[requests, bytes]`; absent without a fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Vec<[f64; 2]>>,
}

/// Name of the owned-memory column (Σ Pss_Anon + Pss_Shmem + Swap).
pub const OWNED_COLUMN: &str = "pss_anon_shmem_swap_bytes";

/// One soak sample: `[t_s, requests, pss_bytes, owned]`, or without the
/// owned column in records from before it existed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SoakSample {
    /// Seconds, requests served, Σ PSS, Σ (Pss_Anon + Pss_Shmem + Swap)
    /// (0 when the kernel does not report Pss_Anon).
    Owned(f64, u64, u64, u64),
    /// Seconds, requests served, Σ PSS.
    Pss(f64, u64, u64),
}

impl SoakSample {
    /// Requests served when the sample was taken.
    pub fn requests(&self) -> u64 {
        match *self {
            SoakSample::Owned(_, r, _, _) | SoakSample::Pss(_, r, _) => r,
        }
    }

    /// The memory figure named by `column` (`pss_bytes` or [`OWNED_COLUMN`]),
    /// if the sample has it.
    pub fn memory(&self, column: &str) -> Option<u64> {
        match (*self, column) {
            (SoakSample::Owned(_, _, p, _) | SoakSample::Pss(_, _, p), "pss_bytes") => Some(p),
            (SoakSample::Owned(_, _, _, o), OWNED_COLUMN) => Some(o),
            _ => None,
        }
    }
}

impl SoakDetail {
    /// The column the fit used: `fitted`, else Σ PSS (older records).
    pub fn fitted_column(&self) -> &str {
        self.fitted.as_deref().unwrap_or("pss_bytes")
    }
}

/// A `command` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct CommandDetail {
    /// The argv that ran.
    pub command: Vec<String>,
    /// Every timed execution, in order.
    pub executions: Vec<CommandExecution>,
    /// The executions' on-CPU stacks, sampled (`--profile`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::RunProfile>,
}

/// One timed execution of a command.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct CommandExecution {
    /// Wall-clock seconds.
    pub wall_time_s: f64,
    /// User CPU seconds.
    pub user_time_s: f64,
    /// System CPU seconds.
    pub system_time_s: f64,
    /// Peak RSS from `wait4`, bytes.
    pub max_rss_bytes: u64,
    /// Exit status; null when a signal ended it (or, in records from
    /// before it was kept, absent).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Σ PSS peak, when the execution lived long enough to be sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_peak_bytes: Option<u64>,
    /// Instructions executed (Cachegrind's Ir, summed over the command's
    /// processes, the shell's start-up subtracted), with `measure =
    /// "instructions"`; the times are then those under Cachegrind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<u64>,
    /// The kernel's counters of the execution's whole tree (its rusage,
    /// `/proc/PID/io`, perf events); a counter not counted is absent.
    #[serde(default, skip_serializing_if = "Counts::is_empty")]
    pub counters: Counts,
}

/// An `idle` run: memory read once after the settle time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct IdleDetail {
    /// The target's tree; absent without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<IdleTarget>,
    /// System memory used as `free` computes it; with `scope = "system"`
    /// or without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_used_bytes: Option<u64>,
}

/// The target's tree as an `idle` run read it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct IdleTarget {
    /// Root PID.
    pub pid: u32,
    /// Processes in the tree.
    pub processes: u32,
    /// Σ PSS.
    pub pss_bytes: u64,
    /// Σ RSS.
    pub rss_bytes: u64,
    /// Σ USS.
    pub uss_bytes: u64,
}

/// A `system` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct SystemDetail {
    /// The suite's report.
    pub system: SystemReport,
}

impl RunDetail {
    /// The HTTP report of an HTTP run.
    pub fn http(&self) -> Option<&HttpReport> {
        match self {
            RunDetail::Http(d) => Some(&d.http),
            _ => None,
        }
    }

    /// The sampled process tree of an HTTP or watch run.
    pub fn target(&self) -> Option<&TreeDetail> {
        match self {
            RunDetail::Http(d) => d.target.as_ref(),
            RunDetail::Watch(d) => Some(&d.target),
            _ => None,
        }
    }

    /// Where the throughput of an HTTP run settled.
    pub fn throughput_settling(&self) -> Option<&SettlingDetail> {
        match self {
            RunDetail::Http(d) => d.throughput_settling.as_ref(),
            _ => None,
        }
    }

    /// Where the CPU of an HTTP or watch run settled.
    pub fn settling(&self) -> Option<&SettlingDetail> {
        match self {
            RunDetail::Http(d) => d.settling.as_ref(),
            RunDetail::Watch(d) => d.settling.as_ref(),
            _ => None,
        }
    }

    /// The soak part of a soak run.
    pub fn soak(&self) -> Option<&SoakDetail> {
        match self {
            RunDetail::Http(d) => d.soak.as_ref(),
            _ => None,
        }
    }

    /// The harness's part of an imported run.
    pub fn imported(&self) -> Option<&ImportedRun> {
        match self {
            RunDetail::Imported(d) => Some(d),
            _ => None,
        }
    }

    /// The executions of a command run (none for other kinds).
    pub fn executions(&self) -> &[CommandExecution] {
        match self {
            RunDetail::Command(d) => &d.executions,
            _ => &[],
        }
    }
}

/// `record` with its keys in alphabetical order at every level, as run
/// records printed (in `results show`, exports) while they were JSON values.
pub fn sorted_keys<S: Serializer>(record: &Option<RunDetail>, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(record)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// A field that may be absent (`None`) or null (`Some(None)`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A non-finite `f64` is written to JSON as null; read it back as NaN.
fn nan_from_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree() -> TreeDetail {
        TreeDetail {
            pid: 7,
            duration_s: 1.5,
            samples: 3,
            cpu_seconds_proc: 0.25,
            cpu_seconds_cgroup: None,
            cpu_percent_max: 40.0,
            pss_start_bytes: 1,
            pss_peak_bytes: 3,
            pss_end_bytes: 2,
            pss_mean_bytes: 2,
            rss_peak_bytes: 4,
            uss_peak_bytes: 1,
            processes_max: 1,
            threads_max: 2,
            root_exited: false,
            counters: Counts::default(),
            series: vec![WatchPoint {
                t_s: 0.1,
                cpu_percent: 12.5,
                size: crate::probe::TreeSize {
                    pss_bytes: 3,
                    ..Default::default()
                },
                ..WatchPoint::default()
            }],
        }
    }

    #[test]
    fn server_metrics_per_request() {
        let s = TreeDetail {
            pid: 7,
            duration_s: 2.0,
            cpu_seconds_proc: 1.0,
            pss_start_bytes: 10,
            pss_peak_bytes: 30,
            pss_end_bytes: 20,
            ..TreeDetail::default()
        };
        let m = s.server_metrics(500);
        assert_eq!(m.pid, 7);
        assert!((m.cpu_ms_per_request.unwrap() - 2.0).abs() < 1e-9);
        assert!((m.cpu_percent_mean - 50.0).abs() < 1e-9);
        // No response: its CPU per response is unknown, not zero.
        let none = s.server_metrics(0);
        assert_eq!(none.cpu_ms_per_request, None);
        assert!((none.cpu_percent_mean - 50.0).abs() < 1e-9);
        assert_eq!(
            (m.pss_start_bytes, m.pss_peak_bytes, m.pss_end_bytes),
            (10, 30, 20)
        );
    }

    fn settling() -> SettlingDetail {
        SettlingDetail {
            series: "cpu_percent".into(),
            warmup_s: 1.0,
            found: Some(Settling {
                settled_at_s: 0.5,
                steady: true,
                changes: 1,
            }),
        }
    }

    fn round_trip(d: &RunDetail) -> RunDetail {
        let text = serde_json::to_string(d).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn every_kind_round_trips_as_itself_with_its_tag() {
        let details = [
            RunDetail::Watch(Box::new(WatchDetail {
                target: tree(),
                settling: Some(settling()),
            })),
            RunDetail::Command(CommandDetail {
                command: vec!["true".into()],
                executions: vec![CommandExecution {
                    wall_time_s: 0.01,
                    user_time_s: 0.0,
                    system_time_s: 0.001,
                    max_rss_bytes: 1 << 20,
                    exit_code: None,
                    pss_peak_bytes: Some(5),
                    instructions: Some(123_456),
                    counters: Counts::default(),
                }],
                profile: None,
            }),
            RunDetail::Idle(IdleDetail {
                target: None,
                system_used_bytes: Some(1 << 30),
            }),
        ];
        for (d, kind) in details.iter().zip(["watch", "command", "idle"]) {
            assert_eq!(&round_trip(d), d);
            assert_eq!(serde_json::to_value(d).unwrap()["kind"], kind);
        }
    }

    #[test]
    fn soak_samples_read_with_and_without_the_owned_column() {
        let soak: SoakDetail = serde_json::from_value(json!({
            "samples": [[0.1, 10, 300, 200], [0.2, 20, 310, 210]],
            "verdict": "flat",
        }))
        .unwrap();
        assert_eq!(soak.samples[1].requests(), 20);
        assert_eq!(soak.samples[1].memory(OWNED_COLUMN), Some(210));
        assert_eq!(soak.fitted_column(), "pss_bytes");
        let old: SoakDetail = serde_json::from_value(json!({
            "samples": [[0.1, 10, 300]],
            "verdict": "growing",
        }))
        .unwrap();
        assert_eq!(old.samples[0], SoakSample::Pss(0.1, 10, 300));
        assert_eq!(old.samples[0].memory(OWNED_COLUMN), None);
        assert_eq!(old.verdict, TrendVerdict::Growing);
    }

    /// A record no variant takes whole — an unknown kind, a known kind with
    /// a field this version does not know, no kind at all — is kept as it
    /// was read and written back unchanged.
    #[test]
    fn records_no_variant_takes_are_kept_whole() {
        for v in [
            json!({"kind": "criterion_json", "tool": "hyperfine"}),
            json!({"kind": "idle", "system_used_bytes": 5, "swap_used_bytes": 1}),
            json!({"series": [{"t_s": 0.0, "cpu_percent": 1.0}]}),
        ] {
            let d: RunDetail = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(d, RunDetail::Unrecognised(v.clone()));
            assert_eq!(serde_json::to_value(&d).unwrap(), v);
        }
    }

    #[test]
    fn accessors_answer_for_their_kinds_only() {
        let w = RunDetail::Watch(Box::new(WatchDetail {
            target: tree(),
            settling: Some(settling()),
        }));
        assert_eq!(w.target().map(|t| t.pid), Some(7));
        assert_eq!(
            w.settling().and_then(|s| s.found).map(|f| f.changes),
            Some(1)
        );
        assert!(w.http().is_none() && w.soak().is_none() && w.executions().is_empty());
        let idle = RunDetail::Idle(IdleDetail {
            target: None,
            system_used_bytes: None,
        });
        assert!(idle.target().is_none() && idle.settling().is_none());
    }
}
