//! Result records of the process and system probes (`kurabe watch`, `kurabe mem`).
//!
//! Field names carry their unit (`_bytes`, `_s`, `_percent`). Σ means "summed
//! over every process of the watched tree". PSS (proportional set size) is the
//! memory headline: it splits shared pages between the processes that map
//! them, so Σ PSS is the tree's real footprint; Σ RSS counts a page shared by
//! N forked workers N times. This module holds data only: the sampler lives in
//! `kurabe-probe`, the renderers in the binary.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the headline CPU seconds of a watch came from (most trustworthy first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    /// The run's private cgroup CPU counter (counts double-forked and unreaped children too).
    Cgroup,
    /// `wait4` rusage of the started command (the kernel's own accounting, like `/usr/bin/time`).
    Rusage,
    /// Sum of per-interval `/proc/PID/stat` deltas over the tree (utime+stime+cutime+cstime).
    Proc,
}

/// Why a watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WatchEnd {
    /// The watched root process exited.
    Exited,
    /// `--duration` elapsed.
    Duration,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// Exit status of a command started by `kurabe watch -- CMD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ExitStatus {
    /// Exit code when it exited normally.
    #[schemars(required, transform = crate::schema::nullable)]
    pub code: Option<i32>,
    /// Signal number when it was killed by a signal (e.g. 9 when kurabe killed it at `--duration`).
    #[schemars(required, transform = crate::schema::nullable)]
    pub signal: Option<i32>,
}

impl ExitStatus {
    /// The status a shell reports for it: the exit code, or 128 + the signal
    /// (`None` when neither is known).
    pub fn shell_status(&self) -> Option<i32> {
        self.code.or(self.signal.map(|s| 128 + s))
    }
}

impl WatchReport {
    /// True when the started command's cgroup counted an OOM kill.
    pub fn oom_killed(&self) -> bool {
        self.oom_kills.is_some_and(|n| n > 0)
    }

    /// The label a saved watch goes under without `--save=LABEL`:
    /// `watch CMD ARGS`, or `watch pid N`.
    pub fn label(&self) -> String {
        match &self.command {
            Some(argv) => format!("watch {}", argv.join(" ")),
            None => format!("watch pid {}", self.pid),
        }
    }
}

impl MemReport {
    /// The label a saved `kurabe mem` goes under without `--save=LABEL`.
    pub fn label(&self) -> String {
        format!("mem {} {}", self.host, self.arch)
    }
}

/// How an OOM kill reads, with the memory limit that caused it:
/// "OOM-killed at the 20 MiB limit" (one wording for `watch` and `run`).
pub fn oom_killed_text(limit_bytes: Option<u64>) -> String {
    const MIB: u64 = 1 << 20;
    match limit_bytes {
        Some(b) if b % MIB == 0 => format!("OOM-killed at the {} MiB limit", b / MIB),
        Some(b) => format!("OOM-killed at the {:.1} MiB limit", b as f64 / MIB as f64),
        None => "OOM-killed".into(),
    }
}

/// Resource limits a started command ran under (its private cgroup).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct LimitsApplied {
    /// CPU quota in cores (`--cpus`), as CFS quota / period.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cpus: Option<f64>,
    /// CPU list (`--cpuset`), kernel list syntax such as `0` or `0-1`.
    #[schemars(required, transform = crate::schema::nullable)]
    pub cpuset: Option<String>,
    /// Memory limit (`--memory`), bytes.
    #[schemars(required, transform = crate::schema::nullable)]
    pub memory_bytes: Option<u64>,
    /// cgroup hierarchy version used: 1 or 2.
    #[schemars(range(min = 1, max = 2))]
    pub cgroup_version: u8,
}

/// What the sampler itself cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct SamplerCost {
    /// CPU time spent inside the sampler (thread CPU clock), seconds.
    pub cpu_seconds: f64,
    /// Sampler CPU per process per sample, microseconds.
    pub us_per_process_sample: f64,
    /// Sampler CPU as percent of one core over the watch.
    pub cpu_percent: f64,
    /// `smaps_rollup` reads skipped to stay in the CPU budget (the last PSS value was reused).
    pub pss_reads_deferred: u64,
}

/// One point of the time series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct WatchPoint {
    /// Seconds since the watch started.
    pub t_s: f64,
    /// CPU over the interval that ended here, percent of one core (100 = one core busy).
    pub cpu_percent: f64,
    /// CPU seconds since the watch started (cumulative).
    pub cpu_seconds: f64,
    /// The tree's memory and process counts at this point, as sampled;
    /// written flat, beside the fields above.
    #[serde(flatten)]
    pub size: TreeSize,
}

/// How big a process tree is at one moment: its memory summed over the
/// processes (Σ) and how many processes and threads it has. The process-tree
/// sampler measures it (kurabe-probe's `Sample`), a watch's series keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct TreeSize {
    /// Σ RSS (over-counts pages shared between processes).
    pub rss_bytes: u64,
    /// Σ PSS.
    pub pss_bytes: u64,
    /// Σ Pss_Anon.
    pub pss_anon_bytes: u64,
    /// Σ Pss_File.
    pub pss_file_bytes: u64,
    /// Σ Pss_Shmem.
    pub pss_shmem_bytes: u64,
    /// Σ USS (Private_Clean + Private_Dirty): what killing the tree would free.
    pub uss_bytes: u64,
    /// Σ Swap.
    pub swap_bytes: u64,
    /// Processes in the tree.
    pub processes: u32,
    /// Threads in the tree.
    pub threads: u32,
}

/// Everything one `kurabe watch` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe watch report",
    description = "CPU and memory of a process tree over time (`kurabe watch --format json`). Σ = summed over the tree. Units are in the field names."
)]
pub struct WatchReport {
    /// Schema version of this record ([`crate::SCHEMA_VERSION`]).
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe version that produced the record.
    pub tool_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Host the watch ran on.
    pub host: crate::host::HostFacts,
    /// The command started (`kurabe watch -- CMD ARGS`), absent for `-p`/`--port`.
    #[schemars(required, transform = crate::schema::nullable)]
    pub command: Option<Vec<String>>,
    /// PID of the tree's root process.
    pub pid: u32,
    /// TCP port the root was found by (`--port`).
    #[schemars(required, transform = crate::schema::nullable)]
    pub port: Option<u16>,
    /// Length of the watch, seconds.
    pub duration_s: f64,
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// Samples taken.
    pub samples: u64,
    /// Online CPUs (for the share of all cores).
    pub ncpus: u32,
    /// CPU time (user + system) of the whole tree during the watch, seconds.
    pub cpu_seconds: f64,
    /// Where `cpu_seconds` came from.
    pub cpu_source: CpuSource,
    /// The same figure from `/proc` deltas only (for cross-checking the headline).
    pub cpu_seconds_proc: f64,
    /// Mean CPU, percent of one core: `cpu_seconds / duration_s × 100`.
    pub cpu_percent_mean: f64,
    /// 95th percentile of per-interval CPU, percent of one core.
    pub cpu_percent_p95: f64,
    /// Highest per-interval CPU, percent of one core.
    pub cpu_percent_max: f64,
    /// Mean CPU as a share of all cores, percent (`cpu_percent_mean / ncpus`).
    pub cpu_share_of_all_cores_percent: f64,
    /// False when some process's `smaps_rollup` was unreadable and its RSS stood in for PSS/USS.
    pub pss_available: bool,
    /// Mean Σ PSS over samples.
    pub pss_mean_bytes: u64,
    /// Highest Σ PSS sampled.
    pub pss_peak_bytes: u64,
    /// Highest Σ RSS sampled.
    pub rss_peak_bytes: u64,
    /// True when the tree had several processes and Σ RSS exceeded Σ PSS by more than 10 %:
    /// pages they share were counted once per process.
    pub rss_overcounts: bool,
    /// Highest Σ USS sampled.
    pub uss_peak_bytes: u64,
    /// Peak RSS of the root process itself (VmHWM), when it was readable.
    #[schemars(required, transform = crate::schema::nullable)]
    pub root_hwm_bytes: Option<u64>,
    /// Peak memory charged to the run's cgroup (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`).
    #[schemars(required, transform = crate::schema::nullable)]
    pub cgroup_memory_peak_bytes: Option<u64>,
    /// Most processes seen in one sample.
    pub processes_max: u32,
    /// Most threads seen in one sample.
    pub threads_max: u32,
    /// The kernel's counters of the tree over the watch (faults, context
    /// switches, I/O calls and bytes, migrations, …); a counter not
    /// counted is absent.
    #[serde(
        default,
        skip_serializing_if = "crate::tree_counters::Counts::is_empty"
    )]
    pub counters: crate::tree_counters::Counts,
    /// Limits the command ran under, if any were asked for.
    #[schemars(required, transform = crate::schema::nullable)]
    pub limits: Option<LimitsApplied>,
    /// Exit status of the started command.
    #[schemars(required, transform = crate::schema::nullable)]
    pub exit: Option<ExitStatus>,
    /// OOM kills counted in the started command's cgroup (v1 `memory.oom_control`
    /// `oom_kill`, v2 `memory.events` `oom_kill`); absent without a memory cgroup.
    #[serde(default)]
    #[schemars(required, transform = crate::schema::nullable)]
    pub oom_kills: Option<u64>,
    /// Why the watch ended.
    pub ended: WatchEnd,
    /// The signal that stopped the watch when `ended` is `interrupted` (2 SIGINT, 15 SIGTERM, 1 SIGHUP).
    #[serde(default)]
    #[schemars(required, transform = crate::schema::nullable)]
    pub stop_signal: Option<i32>,
    /// Things the reader should know (root exited early, PSS unreadable, no cgroup, …).
    pub notes: Vec<String>,
    /// The sampler's own cost.
    pub sampler: SamplerCost,
    /// The time series, one point per sample.
    pub series: Vec<WatchPoint>,
}

/// One process in `kurabe mem`'s top list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct ProcessMemory {
    /// Process ID.
    pub pid: u32,
    /// Short name (`/proc/PID/comm`).
    pub name: String,
    /// Command line, space-joined (may be empty for kernel threads).
    pub command: String,
    /// Proportional set size.
    pub pss_bytes: u64,
    /// Resident set size.
    pub rss_bytes: u64,
    /// Unique set size (Private_Clean + Private_Dirty).
    pub uss_bytes: u64,
    /// Swapped-out memory.
    pub swap_bytes: u64,
}

/// System memory the way `free` shows it, in every procps generation, plus top processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    title = "kurabe mem report",
    description = "System memory the way free shows it, every procps generation, plus top processes by PSS (`kurabe mem --format json`)."
)]
pub struct MemReport {
    /// Schema version of this record ([`crate::SCHEMA_VERSION`]).
    #[schemars(range(min = 1))]
    pub schema_version: u32,
    /// kurabe version that produced the record.
    pub tool_version: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Machine architecture.
    pub arch: String,
    /// When the snapshot was taken, RFC 3339 UTC.
    pub time: String,
    /// MemTotal.
    pub total_bytes: u64,
    /// MemFree.
    pub free_bytes: u64,
    /// MemAvailable (MemFree on kernels without it, as procps does).
    pub available_bytes: u64,
    /// Buffers.
    pub buffers_bytes: u64,
    /// Cached (page cache, without slab).
    pub cached_bytes: u64,
    /// SReclaimable (reclaimable slab, part of free's "buff/cache" since procps 3.3.12).
    pub sreclaimable_bytes: u64,
    /// free's "buff/cache" column: Buffers + Cached + SReclaimable.
    pub buff_cache_bytes: u64,
    /// Shmem (free's "shared").
    pub shared_bytes: u64,
    /// "used" of procps ≥ 4.0.1: MemTotal − MemAvailable.
    pub used_bytes: u64,
    /// "used" of procps 3.3.12–4.0.0: MemTotal − MemFree − Buffers − (Cached + SReclaimable).
    pub used_legacy_bytes: u64,
    /// procps ≤ 3.3.9 "-/+ buffers/cache" used: MemTotal − MemFree − Buffers − Cached.
    pub used_minus_buffers_cache_bytes: u64,
    /// SwapTotal.
    pub swap_total_bytes: u64,
    /// SwapFree.
    pub swap_free_bytes: u64,
    /// SwapTotal − SwapFree.
    pub swap_used_bytes: u64,
    /// Largest processes by PSS, largest first.
    pub top_processes: Vec<ProcessMemory>,
    /// Processes whose `smaps_rollup` could not be read (another user's, without root).
    pub processes_unreadable: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_wording_names_the_limit() {
        assert_eq!(
            oom_killed_text(Some(20 << 20)),
            "OOM-killed at the 20 MiB limit"
        );
        assert_eq!(
            oom_killed_text(Some(1_500_000)),
            "OOM-killed at the 1.4 MiB limit"
        );
        assert_eq!(oom_killed_text(None), "OOM-killed");
    }

    #[test]
    fn enums_are_snake_case_and_points_round_trip() {
        assert_eq!(
            serde_json::to_string(&CpuSource::Rusage).unwrap(),
            "\"rusage\""
        );
        assert_eq!(
            serde_json::to_string(&WatchEnd::Interrupted).unwrap(),
            "\"interrupted\""
        );
        let p = WatchPoint {
            t_s: 0.5,
            cpu_percent: 99.5,
            size: TreeSize {
                pss_bytes: 4096,
                processes: 2,
                ..TreeSize::default()
            },
            ..WatchPoint::default()
        };
        let json = serde_json::to_string(&p).unwrap();
        // The size is written flat, as before it was a type of its own.
        assert!(
            json.starts_with("{\"t_s\":0.5,\"cpu_percent\":99.5,\"cpu_seconds\":0.0,\"rss_bytes\":0,\"pss_bytes\":4096,"),
            "{json}"
        );
        assert!(!json.contains("size"), "{json}");
        assert_eq!(serde_json::from_str::<WatchPoint>(&json).unwrap(), p);
    }
}
