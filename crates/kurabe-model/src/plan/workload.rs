//! `[[workload]]`: what is done to each variant in each run.
//!
//! A workload table has a `name`, optional `metrics` and exactly one kind
//! key — `http`, `command`, `watch`, `idle` or `system` — whose table holds
//! that kind's settings. Each kind knows which metrics it can produce.
//! An `http` table is a [`LoadSpec`]: this file owns none of its fields.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{CommandLine, HumanDuration};
use crate::load::LoadSpec;

/// One workload: a name, the metrics to report, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WorkloadRepr", into = "WorkloadRepr")]
pub struct Workload {
    /// Name in reports; unique within the plan.
    pub name: String,
    /// Metrics to report; `None` means the kind's defaults.
    pub metrics: Option<Vec<String>>,
    /// What to do.
    pub kind: WorkloadKind,
}

/// The kinds of workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// HTTP load against the target: the same [`LoadSpec`] `kurabe http`'s
    /// flags build (same field names, same grammar). Boxed: it is several
    /// times larger than the other kinds.
    Http(Box<LoadSpec>),
    /// Run and time a command (what hyperfine does).
    Command(CommandWorkload),
    /// Sample CPU and memory of the target (or a command) for a while.
    Watch(WatchWorkload),
    /// Start the target, let it settle, measure its memory.
    Idle(IdleWorkload),
    /// The UnixBench-style system index.
    System(SystemWorkload),
}

fn one() -> u32 {
    1
}

/// Settings of a `command` workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct CommandWorkload {
    /// The command to time; placeholders are substituted.
    pub command: CommandLine,
    /// Timed executions per run, default 1.
    #[serde(default = "one")]
    pub runs: u32,
    /// Untimed executions before the timed ones, default 0.
    #[serde(default)]
    pub warmup_runs: u32,
    /// Working directory, relative to the plan file's folder; default that folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Longest one execution may take before it is killed and counted failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<HumanDuration>,
    /// Run before every execution, untimed (hyperfine's `--prepare`), e.g.
    /// to drop caches; placeholders are substituted. Its failure fails the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<CommandLine>,
    /// Record a non-zero exit status instead of failing the run
    /// (hyperfine's `--ignore-failure`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignore_failure: bool,
    /// File fed to the command's standard input (default: none, /dev/null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<PathBuf>,
    /// Where the command's standard output and error go.
    #[serde(default, skip_serializing_if = "CommandOutput::is_default")]
    pub output: CommandOutput,
    /// Give every execution an environment of a random size (0–4 KiB of
    /// padding in `KURABE_ENV_PAD`): the size of the environment moves the
    /// stack and can bias a comparison (Mytkowicz et al., "Producing wrong
    /// data without doing anything obviously wrong", ASPLOS 2009).
    #[serde(default, skip_serializing_if = "is_false")]
    pub randomize_env: bool,
    /// Per-execution cost subtracted from wall, user and system time
    /// (clamped at 0): `kurabe cmd` puts the shell's own start-up here,
    /// measured before the runs, as hyperfine does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtract: Option<ExecCost>,
    /// Pass kurabe's store secrets (`KURABE_STORE`, `PGPASSWORD`) on to
    /// the command with the rest of kurabe's environment. `kurabe cmd`
    /// does, as hyperfine passes the whole environment (users time `psql`
    /// with `PGPASSWORD` set); plans leave them out unless they set this.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pass_secrets: bool,
    /// What each execution is measured by: its times (the default) or the
    /// instructions it executes, counted under Cachegrind (`measure =
    /// "instructions"`, `kurabe cmd --measure instructions`).
    #[serde(default, skip_serializing_if = "Measure::is_time")]
    pub measure: Measure,
}

/// What a command's executions are measured by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Wall, user and system time, max RSS (hyperfine's figures).
    #[default]
    Time,
    /// Instructions executed by the command and its children, counted by
    /// valgrind's Cachegrind (`--cache-sim=no`): deterministic where time
    /// is noise, about 50 times slower to run.
    Instructions,
}

impl Measure {
    /// Every measure, in the order help texts list them.
    pub const ALL: [Measure; 2] = [Measure::Time, Measure::Instructions];

    /// The name a plan and `--measure` use.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Time => "time",
            Measure::Instructions => "instructions",
        }
    }

    /// True for the default, time.
    pub fn is_time(&self) -> bool {
        *self == Measure::Time
    }
}

impl std::str::FromStr for Measure {
    type Err = String;

    /// `time` or `instructions`.
    fn from_str(s: &str) -> Result<Measure, String> {
        Measure::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("expected time or instructions, got `{s}`"))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where a command's standard output and error go (hyperfine's `--output`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CommandOutput {
    /// Discarded: /dev/null (the default).
    #[default]
    Null,
    /// Through a pipe that kurabe reads and discards (programs that
    /// detect /dev/null and skip work do the work).
    Pipe,
    /// kurabe's own stdout and stderr (`--show-output`).
    Inherit,
    /// Appended to this file.
    File(PathBuf),
}

impl CommandOutput {
    fn is_default(&self) -> bool {
        *self == CommandOutput::Null
    }

    /// Parse hyperfine's `--output` value: `null`, `pipe`, `inherit` or a file.
    pub fn parse(text: &str) -> CommandOutput {
        match text {
            "null" => CommandOutput::Null,
            "pipe" => CommandOutput::Pipe,
            "inherit" => CommandOutput::Inherit,
            file => CommandOutput::File(PathBuf::from(file)),
        }
    }
}

impl Serialize for CommandOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CommandOutput::Null => s.serialize_str("null"),
            CommandOutput::Pipe => s.serialize_str("pipe"),
            CommandOutput::Inherit => s.serialize_str("inherit"),
            CommandOutput::File(p) => s.serialize_str(&p.to_string_lossy()),
        }
    }
}

impl<'de> Deserialize<'de> for CommandOutput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|t| CommandOutput::parse(&t))
    }
}

/// A fixed cost per execution: seconds, and instructions when counted.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ExecCost {
    /// Wall-clock seconds.
    #[serde(default)]
    pub wall_s: f64,
    /// User CPU seconds.
    #[serde(default)]
    pub user_s: f64,
    /// System CPU seconds.
    #[serde(default)]
    pub system_s: f64,
    /// Instructions (with `measure = "instructions"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub instructions: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// Settings of a `watch` workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct WatchWorkload {
    /// How long to sample.
    pub duration: HumanDuration,
    /// Sampling interval, default 100 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<HumanDuration>,
    /// Command to start and watch; default: watch the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// Time to let the watched tree run before sampling starts (not
    /// counted), e.g. a browser's launch cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<HumanDuration>,
    /// Working directory of `command`, relative to the plan file's folder; default that folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

/// Settings of an `idle` workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct IdleWorkload {
    /// Time to let the target settle after it is ready, default 5 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<HumanDuration>,
    /// Whose memory: the target's tree (default) or the whole system's.
    #[serde(default)]
    pub scope: MemoryScope,
}

/// Whose memory an `idle` workload measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// Σ PSS of the target's process tree.
    #[default]
    Target,
    /// System memory used, as `free` computes it (the "memory after boot" case).
    System,
}

impl SystemWorkload {
    /// The score and, for a verdict per test, the index of every test the
    /// workload runs (all 12 when `tests` is empty; tests named by an alias
    /// rather than their id get no per-test row).
    pub fn default_metrics(&self) -> Vec<String> {
        let runs = |id: &str| self.tests.is_empty() || self.tests.iter().any(|t| t.trim() == id);
        std::iter::once("system_index".to_string())
            .chain(
                crate::stats::metric::SYSTEM_TEST_METRICS
                    .iter()
                    .filter(|(id, _)| runs(id))
                    .map(|(_, m)| m.to_string()),
            )
            .collect()
    }
}

/// Settings of a `system` workload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct SystemWorkload {
    /// Tests to run by name; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
    /// Parallel copies; default: one pass with 1 and one with every core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<u32>,
    /// Shorter test durations (less precise).
    #[serde(default)]
    pub quick: bool,
    /// UnixBench's own fixed durations and passes instead of the precision rule.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unixbench: bool,
    /// Precision rule: passes until the score's (and each test's) 95 %
    /// interval is within this fraction (`"2%"`, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<super::Fraction>,
    /// Time budget per copy count for the precision rule (default `9m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<super::HumanDuration>,
}

impl WorkloadKind {
    /// The kind's key in TOML.
    pub fn key(&self) -> &'static str {
        match self {
            WorkloadKind::Http(_) => "http",
            WorkloadKind::Command(_) => "command",
            WorkloadKind::Watch(_) => "watch",
            WorkloadKind::Idle(_) => "idle",
            WorkloadKind::System(_) => "system",
        }
    }

    /// Metrics this kind can produce.
    pub fn available_metrics(&self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Http(h) if h.find_rate.is_some() => &["capacity_per_second"],
            WorkloadKind::Http(_) => &[
                "requests_per_second",
                "latency_mean_us",
                "latency_p50_us",
                "latency_p90_us",
                "latency_p99_us",
                "latency_p999_us",
                "failed_requests",
                "failed_percent",
                "check_pass_percent",
                "non_2xx_responses",
                "cpu_ms_per_request",
                "cpu_percent_mean",
                "cpu_time_ms",
                "pss_peak_bytes",
                "pss_steady_bytes",
                "rss_peak_bytes",
                "uss_peak_bytes",
                "pss_slope_bytes_per_request",
                "pss_growth_mb_per_hour",
                "pss_growing",
            ],
            // Σ PSS only from executions that live long enough (100 ms) to be sampled.
            WorkloadKind::Command(c) if c.measure == Measure::Instructions => &[
                "instructions",
                "wall_time_s",
                "user_time_s",
                "system_time_s",
                "max_rss_bytes",
            ],
            WorkloadKind::Command(_) => &[
                "wall_time_s",
                "user_time_s",
                "system_time_s",
                "max_rss_bytes",
                "pss_peak_bytes",
            ],
            WorkloadKind::Watch(_) => &[
                "cpu_percent_mean",
                "cpu_time_ms",
                "pss_peak_bytes",
                "pss_steady_bytes",
                "rss_peak_bytes",
                "uss_peak_bytes",
            ],
            WorkloadKind::Idle(_) => &[
                "pss_steady_bytes",
                "rss_peak_bytes",
                "uss_peak_bytes",
                "system_used_bytes",
            ],
            WorkloadKind::System(_) => &[
                "system_index",
                "system_index_dhry2reg",
                "system_index_whetstone_double",
                "system_index_execl",
                "system_index_fstime",
                "system_index_fsbuffer",
                "system_index_fsdisk",
                "system_index_pipe",
                "system_index_context1",
                "system_index_spawn",
                "system_index_shell1",
                "system_index_shell8",
                "system_index_syscall",
            ],
        }
    }

    /// Metrics reported when the plan does not choose.
    pub fn default_metrics(&self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Http(h) if h.find_rate.is_some() => &["capacity_per_second"],
            WorkloadKind::Http(_) => &[
                "requests_per_second",
                "latency_p50_us",
                "latency_p99_us",
                "cpu_ms_per_request",
                "pss_peak_bytes",
            ],
            WorkloadKind::Command(c) if c.measure == Measure::Instructions => &["instructions"],
            WorkloadKind::Command(_) => &["wall_time_s", "max_rss_bytes"],
            WorkloadKind::Watch(_) => &["cpu_percent_mean", "pss_peak_bytes"],
            WorkloadKind::Idle(IdleWorkload {
                scope: MemoryScope::System,
                ..
            }) => &["system_used_bytes"],
            WorkloadKind::Idle(_) => &["pss_steady_bytes"],
            WorkloadKind::System(_) => &["system_index"],
        }
    }
}

impl Workload {
    /// Metrics this workload reports: its selection or its kind's defaults.
    pub fn selected_metrics(&self) -> Vec<String> {
        match (&self.metrics, &self.kind) {
            (Some(m), _) => m.clone(),
            (None, WorkloadKind::System(sw)) => sw.default_metrics(),
            (None, _) => self
                .kind
                .default_metrics()
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// The TOML shape: one optional key per kind, exactly one must be present.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
struct WorkloadRepr {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    http: Option<LoadSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<CommandWorkload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    watch: Option<WatchWorkload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle: Option<IdleWorkload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<SystemWorkload>,
}

impl TryFrom<WorkloadRepr> for Workload {
    type Error = String;

    fn try_from(r: WorkloadRepr) -> Result<Self, String> {
        let mut kinds = Vec::new();
        if let Some(w) = r.http {
            kinds.push(WorkloadKind::Http(Box::new(w)));
        }
        if let Some(w) = r.command {
            kinds.push(WorkloadKind::Command(w));
        }
        if let Some(w) = r.watch {
            kinds.push(WorkloadKind::Watch(w));
        }
        if let Some(w) = r.idle {
            kinds.push(WorkloadKind::Idle(w));
        }
        if let Some(w) = r.system {
            kinds.push(WorkloadKind::System(w));
        }
        if kinds.len() != 1 {
            let given: Vec<&str> = kinds.iter().map(WorkloadKind::key).collect();
            return Err(format!(
                "workload `{}` needs exactly one of `http`, `command`, `watch`, `idle` or `system`, found {}",
                r.name,
                if given.is_empty() { "none".to_owned() } else { given.join(" and ") }
            ));
        }
        Ok(Workload {
            name: r.name,
            metrics: r.metrics,
            kind: kinds.remove(0),
        })
    }
}

impl From<Workload> for WorkloadRepr {
    fn from(w: Workload) -> Self {
        let mut r = WorkloadRepr {
            name: w.name,
            metrics: w.metrics,
            http: None,
            command: None,
            watch: None,
            idle: None,
            system: None,
        };
        match w.kind {
            WorkloadKind::Http(k) => r.http = Some(*k),
            WorkloadKind::Command(k) => r.command = Some(k),
            WorkloadKind::Watch(k) => r.watch = Some(k),
            WorkloadKind::Idle(k) => r.idle = Some(k),
            WorkloadKind::System(k) => r.system = Some(k),
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::metric;

    #[test]
    fn every_kind_metric_is_in_the_catalogue() {
        let command = CommandWorkload {
            command: CommandLine::Shell("true".into()),
            runs: 1,
            warmup_runs: 0,
            cwd: None,
            timeout: None,
            prepare: None,
            ignore_failure: false,
            stdin: None,
            output: CommandOutput::Null,
            randomize_env: false,
            subtract: None,
            pass_secrets: false,
            measure: Measure::Time,
        };
        let kinds = [
            WorkloadKind::Http(Box::default()),
            WorkloadKind::Command(command.clone()),
            WorkloadKind::Command(CommandWorkload {
                measure: Measure::Instructions,
                ..command
            }),
            WorkloadKind::Watch(WatchWorkload {
                duration: HumanDuration::default(),
                interval: None,
                command: None,
                warmup: None,
                cwd: None,
            }),
            WorkloadKind::Idle(IdleWorkload {
                settle: None,
                scope: MemoryScope::System,
            }),
            WorkloadKind::System(SystemWorkload::default()),
        ];
        for k in kinds {
            for m in k.available_metrics() {
                assert!(
                    metric::lookup(m).is_some(),
                    "{} metric {m} not in catalogue",
                    k.key()
                );
            }
            for m in k.default_metrics() {
                assert!(
                    k.available_metrics().contains(m),
                    "{} default {m} not available",
                    k.key()
                );
            }
        }
    }

    #[test]
    fn a_command_is_measured_by_time_unless_the_plan_says_instructions() {
        let parse = |t: &str| -> Result<Workload, _> { serde_json::from_str(t) };
        let w = parse(r#"{"name":"w","command":{"command":"true"}}"#).unwrap();
        let WorkloadKind::Command(c) = &w.kind else {
            panic!("not a command")
        };
        assert_eq!(c.measure, Measure::Time);
        assert!(!serde_json::to_string(&w).unwrap().contains("measure"));
        let w =
            parse(r#"{"name":"w","command":{"command":"true","measure":"instructions"}}"#).unwrap();
        assert_eq!(w.kind.default_metrics(), ["instructions"]);
        assert!(parse(r#"{"name":"w","command":{"command":"true","measure":"cycles"}}"#).is_err());
        assert_eq!("instructions".parse(), Ok(Measure::Instructions));
        assert!("cycles".parse::<Measure>().is_err());
    }

    #[test]
    fn soak_and_watch_warmup_parse_as_durations() {
        let w: Workload = serde_json::from_str(r#"{"name":"w","http":{"soak":"10m"}}"#).unwrap();
        let WorkloadKind::Http(h) = &w.kind else {
            panic!("not http")
        };
        assert_eq!(h.soak.map(|d| d.0.as_secs()), Some(600));
        assert!(w
            .kind
            .available_metrics()
            .contains(&"pss_slope_bytes_per_request"));
        let w: Workload =
            serde_json::from_str(r#"{"name":"w","watch":{"duration":"5s","warmup":"2s"}}"#)
                .unwrap();
        let WorkloadKind::Watch(wt) = &w.kind else {
            panic!("not watch")
        };
        assert_eq!(wt.warmup.map(|d| d.0.as_secs()), Some(2));
    }

    #[test]
    fn exactly_one_kind() {
        let json = r#"{"name":"w","http":{},"idle":{}}"#;
        let err = serde_json::from_str::<Workload>(json)
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs exactly one of"), "{err}");
        assert!(err.contains("found http and idle"), "{err}");
        let err = serde_json::from_str::<Workload>(r#"{"name":"w"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("found none"), "{err}");
        let w: Workload = serde_json::from_str(r#"{"name":"w","http":{"requests":10}}"#).unwrap();
        assert_eq!(w.kind.key(), "http");
        assert_eq!(w.selected_metrics()[0], "requests_per_second");
        // Round-trips through the same shape.
        let back: Workload = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn system_workloads_report_the_score_and_one_index_per_test_run() {
        let all = SystemWorkload::default().default_metrics();
        assert_eq!(all.len(), 13);
        assert_eq!(all[0], "system_index");
        let two = SystemWorkload {
            tests: vec!["syscall".into(), "whetstone-double".into()],
            ..SystemWorkload::default()
        };
        assert_eq!(
            two.default_metrics(),
            [
                "system_index",
                "system_index_whetstone_double",
                "system_index_syscall"
            ]
        );
        let kind = WorkloadKind::System(SystemWorkload::default());
        for m in &all {
            assert!(kind.available_metrics().contains(&m.as_str()), "{m}");
        }
    }
}
