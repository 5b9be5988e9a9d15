//! The experiment plan: what `kurabe run plan.toml` reads.
//!
//! Owns the serde types of a plan (every table `deny_unknown_fields`, so a
//! typo is an error, not a silently ignored key), matrix expansion into
//! concrete variants, placeholder substitution, and validation after parse
//! (unique names, baseline exists, limits sane, metrics known, checks that
//! refer to real things). Problems carry a [`FieldPath`] such as
//! `variant[1].limits.cpus` so the loader can point at the file's line.
//!
//! It must not read files or parse TOML text (that is `kurabe-lab`), nor run
//! anything.

mod check;
mod validate;
mod workload;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::quantity::{
    parse_duration, parse_fraction, parse_positive_duration, parse_size, ByteSize, Fraction,
    HumanDuration, DURATION_EXPECTED, FRACTION_EXPECTED, SIZE_EXPECTED,
};
pub use check::{Bound, Check, CheckStat, Threshold};
pub use validate::{FieldPath, PathSeg, Problem};
pub use workload::{
    CommandOutput, CommandWorkload, ExecCost, IdleWorkload, Measure, MemoryScope, SystemWorkload,
    WatchWorkload, Workload, WorkloadKind,
};

/// Placeholder replaced by a free TCP port allocated for each run.
pub const PORT_PLACEHOLDER: &str = "port";

/// Placeholder replaced by the git work tree a variant runs from: the cached
/// worktree of its `rev`, or the top level of the plan's own work tree.
pub const WORKTREE_PLACEHOLDER: &str = "worktree";

/// Placeholder replaced by the path of the running kurabe executable, so a
/// plan can use kurabe's own tools (`kurabe serve`) as the target.
pub const KURABE_PLACEHOLDER: &str = "kurabe";

/// A whole experiment plan, as written in TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Plan {
    /// Name of the experiment, shown in reports and the store.
    pub name: String,
    /// Free text for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Rounds: every variant runs once per round, in interleaved order.
    #[serde(default = "default_repeat")]
    pub repeat: u32,
    /// Time each run spends under load before measuring starts (not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<HumanDuration>,
    /// Variant every other variant is compared against; default the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// What a failed run does to the experiment.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// Seed of the run order; default chosen at start and recorded with the experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Noise band for every metric (default 2 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_band: Option<Fraction>,
    /// Per-metric noise band overrides, metric name → band.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub noise_bands: BTreeMap<String, Fraction>,
    /// The program under test, started fresh for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// How to build a variant's `rev` in its worktree (`[build]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// Variants to compare (`[[variant]]`).
    #[serde(default, rename = "variant", skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// Parameter matrix: every combination of values becomes a variant.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub matrix: BTreeMap<String, Vec<MatrixValue>>,
    /// Workloads run against every variant (`[[workload]]`).
    #[serde(default, rename = "workload")]
    pub workloads: Vec<Workload>,
    /// Pass/fail checks for CI (`[[check]]`).
    #[serde(default, rename = "check", skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

fn default_repeat() -> u32 {
    5
}

/// What a failed run does to the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Record the failure and go on with the next run.
    #[default]
    Continue,
    /// Record the failure and stop the experiment (marked failed).
    Stop,
}

/// The program under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Target {
    /// Command line; `{port}` and matrix placeholders are substituted (shell-quoted in a string).
    pub command: CommandLine,
    /// How to tell the target is ready for work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<Ready>,
    /// Working directory, relative to the plan file's folder; default that
    /// folder (not the directory kurabe is started from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Environment added for every variant.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Signal that asks the target to stop.
    #[serde(default)]
    pub stop_signal: StopSignal,
    /// Time between the stop signal and SIGKILL of the whole tree.
    #[serde(default = "default_stop_grace")]
    pub stop_grace: HumanDuration,
    /// Longest wait for readiness before the run counts as failed.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout: HumanDuration,
}

fn default_stop_grace() -> HumanDuration {
    HumanDuration(std::time::Duration::from_secs(5))
}

fn default_startup_timeout() -> HumanDuration {
    HumanDuration(std::time::Duration::from_secs(30))
}

/// How a git revision is built before its variant runs (`[build]`): run
/// once per commit in the commit's cached worktree, which is its working
/// directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Build {
    /// Command line (`"cargo build --release"`); `{worktree}` is substituted.
    pub command: CommandLine,
    /// Environment added to the build's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// A command: a string (run by `/bin/sh -c`) or an argument list (run directly).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `"ruby app.rb -p {port}"`, run through the shell.
    Shell(String),
    /// `["ruby", "app.rb", "-p", "{port}"]`, run without a shell.
    Argv(Vec<String>),
}

impl CommandLine {
    /// True when there is nothing to run.
    pub fn is_empty(&self) -> bool {
        match self {
            CommandLine::Shell(s) => s.trim().is_empty(),
            CommandLine::Argv(v) => v.first().is_none_or(|p| p.is_empty()),
        }
    }

    /// Every string of the command, for placeholder checks.
    pub fn parts(&self) -> Vec<&str> {
        match self {
            CommandLine::Shell(s) => vec![s.as_str()],
            CommandLine::Argv(v) => v.iter().map(String::as_str).collect(),
        }
    }

    /// The command with `{key}` placeholders replaced; in a shell line
    /// each value is quoted for the shell (`a b` stays one word, `$(…)`
    /// stays text), as list-form arguments are passed untouched.
    pub fn substitute(&self, vars: &BTreeMap<String, String>) -> CommandLine {
        match self {
            CommandLine::Shell(s) => {
                let quoted: BTreeMap<String, String> = vars
                    .iter()
                    .map(|(k, v)| (k.clone(), shell_quote(v)))
                    .collect();
                CommandLine::Shell(substitute(s, &quoted))
            }
            CommandLine::Argv(v) => {
                CommandLine::Argv(v.iter().map(|a| substitute(a, vars)).collect())
            }
        }
    }
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandLine;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a command string or a list of arguments")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CommandLine::Shell(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut argv = Vec::new();
                while let Some(arg) = seq.next_element::<String>()? {
                    argv.push(arg);
                }
                Ok(CommandLine::Argv(argv))
            }
        }
        d.deserialize_any(V)
    }
}

/// How to tell the target is ready: a string is a URL; a table names the kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ready {
    /// `ready = "http://127.0.0.1:{port}/"` or `{ url = … }`: polled until it answers.
    Url(String),
    /// `ready = { tcp = 8080 }` or `{ tcp = "{port}" }`: polled until it accepts.
    Tcp(PortSpec),
    /// `ready = { log = "listening on" }`: wait for the line in stdout or stderr.
    Log(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadyTable {
    url: Option<String>,
    tcp: Option<PortSpec>,
    log: Option<String>,
}

impl<'de> Deserialize<'de> for Ready {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ready;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a URL string, or a table with one of `url`, `tcp` or `log`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Ready::Url(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let t = ReadyTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (t.url, t.tcp, t.log) {
                    (Some(u), None, None) => Ok(Ready::Url(u)),
                    (None, Some(p), None) => Ok(Ready::Tcp(p)),
                    (None, None, Some(l)) => Ok(Ready::Log(l)),
                    _ => Err(de::Error::custom(
                        "expected exactly one of `url`, `tcp` or `log` in `ready`",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A TCP port: fixed, or `"{port}"` for the one allocated per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PortSpec {
    /// A fixed port number.
    Fixed(u16),
    /// The per-run port (`"{port}"`).
    #[serde(serialize_with = "serialize_allocated")]
    Allocated,
}

fn serialize_allocated<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("{port}")
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const EXPECTED: &str = "a port number 1–65535 or \"{port}\"";
        impl Visitor<'_> for V {
            type Value = PortSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if v == "{port}" {
                    Ok(PortSpec::Allocated)
                } else {
                    Err(E::custom(format!("expected {EXPECTED}, got `{v}`")))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                match u16::try_from(v) {
                    Ok(p) if p > 0 => Ok(PortSpec::Fixed(p)),
                    _ => Err(E::custom(format!("expected {EXPECTED}, got {v}"))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }
        }
        d.deserialize_any(V)
    }
}

/// Signal sent to stop the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StopSignal {
    /// SIGTERM, the polite default.
    #[default]
    #[serde(rename = "TERM", alias = "SIGTERM")]
    Term,
    /// SIGINT, what Ctrl-C sends (some servers only shut down cleanly on it).
    #[serde(rename = "INT", alias = "SIGINT")]
    Int,
    /// SIGQUIT (graceful stop for nginx and unicorn).
    #[serde(rename = "QUIT", alias = "SIGQUIT")]
    Quit,
    /// SIGHUP.
    #[serde(rename = "HUP", alias = "SIGHUP")]
    Hup,
    /// SIGKILL: no grace at all.
    #[serde(rename = "KILL", alias = "SIGKILL")]
    Kill,
}

/// One variant as written; a matrix turns one into several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Variant {
    /// Name in reports; must be unique after matrix expansion.
    pub name: String,
    /// Environment added to the target's (and workload command's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Values of `{KEY}` placeholders for this variant (every variant sets
    /// the same keys), substituted like matrix parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
    /// An existing server this variant stands for, in a plan without
    /// `[target]` (blue/green, two regions, two CDNs): http workloads'
    /// `path` is requested on it. Any http:// or https:// URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The HTTP version its http workloads speak (`"1.1"`, `"2"`, `"3"`),
    /// in place of theirs: one server's HTTP/2 against its HTTP/3 is two
    /// variants with one `url` (what `kurabe http --http-version 2
    /// --http-version 3 URL URL` plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_version: Option<crate::load::HttpVersion>,
    /// Arguments appended to the target command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Replaces the target command entirely for this variant; in a plan
    /// without `[target]`, replaces the command of its `command` workloads
    /// (what `kurabe cmd 'A' 'B'` builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// Resource limits applied to the target (a per-run cgroup); without
    /// `[target]`, to the executions of `command` workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// A git revision (tag, branch, commit) of the plan's repository: the
    /// variant runs from that commit's cached worktree (`{worktree}`),
    /// built once by `[build]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
}

/// Resource limits of a variant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Limits {
    /// CPU quota in cores (0.5 = half a core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// CPUs the target may run on, cpuset syntax (`"0-1,3"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<String>,
    /// Memory limit (`"512M"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
}

impl Limits {
    /// The limits flags give (`--cpus`, `--cpuset`, `--memory`); `None`
    /// when none was given.
    pub fn given(cpus: Option<f64>, cpuset: Option<String>, memory: Option<u64>) -> Option<Limits> {
        let memory = memory.map(ByteSize);
        let limits = Limits {
            cpus,
            cpuset,
            memory,
        };
        (limits != Limits::default()).then_some(limits)
    }
}

/// One value of a matrix parameter; numbers and booleans become their text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MatrixValue {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Text(String),
}

impl fmt::Display for MatrixValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatrixValue::Int(v) => write!(f, "{v}"),
            MatrixValue::Float(v) => write!(f, "{v}"),
            MatrixValue::Bool(v) => write!(f, "{v}"),
            MatrixValue::Text(v) => f.write_str(v),
        }
    }
}

/// A concrete variant after matrix expansion, placeholders substituted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct ResolvedVariant {
    /// Unique name.
    pub name: String,
    /// Matrix parameters of this variant (`fps` → `77`); the runner
    /// substitutes them, with `{port}`, into the target's command and env.
    pub params: BTreeMap<String, String>,
    /// Environment, substituted.
    pub env: BTreeMap<String, String>,
    /// The existing server it stands for, substituted.
    pub url: Option<String>,
    /// The HTTP version its http workloads speak instead of theirs.
    pub http_version: Option<crate::load::HttpVersion>,
    /// Extra target arguments, substituted.
    pub args: Vec<String>,
    /// Command override, substituted.
    pub command: Option<CommandLine>,
    /// Resource limits.
    pub limits: Option<Limits>,
    /// Git revision it runs from, substituted.
    pub rev: Option<String>,
    /// Index of the `[[variant]]` it came from (None: the matrix alone made it).
    pub source: Option<usize>,
}

/// Most variants a plan may expand to (`[[variant]]` × every `[matrix]`
/// combination): beyond this a plan is a typo, not an experiment, and
/// expanding it would exhaust memory before anything runs.
pub const MAX_VARIANTS: u64 = 10_000;

/// Most runs one experiment may schedule (variants × workloads × rounds).
pub const MAX_RUNS: u64 = 100_000;

impl Plan {
    /// The first command workload that writes to kurabe's own terminal
    /// (`output = "inherit"`), which a live view owning it cannot share.
    pub fn inherits_terminal(&self) -> Option<&Workload> {
        self.workloads.iter().find(
            |w| matches!(&w.kind, WorkloadKind::Command(c) if c.output == CommandOutput::Inherit),
        )
    }

    /// How many variants [`Plan::resolved_variants`] would make, computed
    /// without making them; `None` when the product overflows `u64`.
    pub fn variant_count(&self) -> Option<u64> {
        let templates = if self.variants.is_empty() && !self.matrix.is_empty() {
            1
        } else {
            self.variants.len() as u64
        };
        self.matrix
            .values()
            .try_fold(templates, |n, values| n.checked_mul(values.len() as u64))
    }

    /// Variants × workloads × `repeat` rounds; `None` on overflow.
    pub fn run_count(&self, repeat: u32) -> Option<u64> {
        self.variant_count()?
            .checked_mul(self.workloads.len() as u64)?
            .checked_mul(u64::from(repeat))
    }

    /// The variants the experiment runs: `[[variant]]` × `[matrix]`.
    ///
    /// Without a matrix, the variants as written. With a matrix, every
    /// variant (or one unnamed variant if none is written) once per
    /// combination of values, in the order the keys and values are written
    /// (keys alphabetically, since TOML tables are unordered). A name without
    /// a placeholder gets the parameters appended: `ruby fps=77`.
    pub fn resolved_variants(&self) -> Vec<ResolvedVariant> {
        let combos = matrix_combinations(&self.matrix);
        let templates: Vec<(Option<usize>, Variant)> =
            if self.variants.is_empty() && !self.matrix.is_empty() {
                let unnamed = Variant {
                    name: String::new(),
                    env: BTreeMap::new(),
                    vars: BTreeMap::new(),
                    url: None,
                    http_version: None,
                    args: Vec::new(),
                    command: None,
                    limits: None,
                    rev: None,
                };
                vec![(None, unnamed)]
            } else {
                self.variants
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(i, v)| (Some(i), v))
                    .collect()
            };
        let mut out = Vec::new();
        for (source, v) in templates {
            for combo in &combos {
                let mut params = v.vars.clone();
                params.extend(combo.iter().map(|(k, val)| (k.clone(), val.clone())));
                let params = &params;
                let mut name = substitute(&v.name, params);
                if name == v.name && !combo.is_empty() {
                    let suffix: Vec<String> =
                        combo.iter().map(|(k, val)| format!("{k}={val}")).collect();
                    name = format!("{} {}", v.name, suffix.join(" ")).trim().to_owned();
                }
                out.push(ResolvedVariant {
                    name,
                    params: params.clone(),
                    env: v
                        .env
                        .iter()
                        .map(|(k, val)| (k.clone(), substitute(val, params)))
                        .collect(),
                    url: v.url.as_ref().map(|u| substitute(u, params)),
                    http_version: v.http_version,
                    args: v.args.iter().map(|a| substitute(a, params)).collect(),
                    command: v.command.as_ref().map(|c| c.substitute(params)),
                    limits: v.limits.clone(),
                    rev: v.rev.as_ref().map(|r| substitute(r, params)),
                    source,
                });
            }
        }
        out
    }

    /// Name of the baseline variant: `baseline`, or the first resolved variant.
    pub fn baseline_name(&self) -> Option<String> {
        self.baseline
            .clone()
            .or_else(|| self.resolved_variants().first().map(|v| v.name.clone()))
    }

    /// Noise band for a metric: per-metric override, plan default, or 2 %.
    pub fn noise_band_for(&self, metric: &str) -> f64 {
        self.noise_bands
            .get(metric)
            .or(self.noise_band.as_ref())
            .map_or(crate::stats::DEFAULT_NOISE_BAND, |f| f.0)
    }

    /// The catalogue definition of `name` with this plan's noise band
    /// applied; `None` for a metric not in the catalogue.
    pub fn metric(&self, name: &str) -> Option<crate::stats::Metric> {
        crate::stats::metric::lookup(name).map(|m| m.with_noise_band(self.noise_band_for(name)))
    }

    /// Check the plan after parsing; every problem names its field.
    pub fn validate(&self) -> Result<(), Vec<Problem>> {
        let problems = validate::validate(self);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// Every combination of matrix values, as key → text maps (one empty map
/// without a matrix). Keys iterate alphabetically; the last key varies fastest.
fn matrix_combinations(
    matrix: &BTreeMap<String, Vec<MatrixValue>>,
) -> Vec<BTreeMap<String, String>> {
    let mut combos = vec![BTreeMap::new()];
    for (key, values) in matrix {
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for value in values {
                let mut c = combo.clone();
                c.insert(key.clone(), value.to_string());
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

/// A generated plan's name, "PREFIX: a vs b": each name once, cut with "…"
/// to 100 characters so that a listing or a report's title line fits.
pub fn joined_name(prefix: &str, names: &[&str]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for n in names {
        if !unique.contains(n) {
            unique.push(n);
        }
    }
    let full = format!("{prefix}: {}", unique.join(" vs "));
    if full.chars().count() <= 100 {
        full
    } else {
        let cut: String = full.chars().take(99).collect();
        format!("{cut}…")
    }
}

/// Quote `arg` for `/bin/sh` when it holds anything but safe characters.
pub fn shell_quote(arg: &str) -> String {
    let safe = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Replace `{key}` with its value for every key in `vars`; other braces stay
/// as they are (shell and awk use braces too).
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (key, value) in vars {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

/// Placeholder names used in `text`: `{name}` with a lowercase identifier
/// inside, not preceded by `$` (so `${HOME}`-style shell expansions are not
/// mistaken for placeholders).
pub fn placeholders(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' && (i == 0 || bytes[i - 1] != b'$') {
            if let Some(len) = text[i + 1..].find('}') {
                let inner = &text[i + 1..i + 1 + len];
                let ident = !inner.is_empty()
                    && inner.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && inner
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                if ident {
                    found.push(inner);
                    i += len + 2;
                    continue;
                }
            }
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitute_replaces_known_keys_only() {
        let v = vars(&[("port", "8080"), ("fps", "77")]);
        assert_eq!(
            substitute("serve -p {port} --fps {fps} | awk '{print $1}' {other}", &v),
            "serve -p 8080 --fps 77 | awk '{print $1}' {other}"
        );
    }

    #[test]
    fn placeholders_skip_shell_expansions_and_code() {
        assert_eq!(
            placeholders("run {port} ${HOME} ${fps} {print $1} {a_1} {}"),
            vec!["port", "a_1"]
        );
    }

    #[test]
    fn matrix_is_a_cartesian_product_in_key_order() {
        let mut m = BTreeMap::new();
        m.insert(
            "fps".to_owned(),
            vec![MatrixValue::Int(77), MatrixValue::Int(12)],
        );
        m.insert(
            "gc".to_owned(),
            vec![MatrixValue::Text("on".into()), MatrixValue::Bool(false)],
        );
        let c = matrix_combinations(&m);
        assert_eq!(
            c,
            vec![
                vars(&[("fps", "77"), ("gc", "on")]),
                vars(&[("fps", "77"), ("gc", "false")]),
                vars(&[("fps", "12"), ("gc", "on")]),
                vars(&[("fps", "12"), ("gc", "false")]),
            ]
        );
        assert_eq!(matrix_combinations(&BTreeMap::new()), vec![BTreeMap::new()]);
    }

    #[test]
    fn variant_and_run_counts_are_computed_without_expanding() {
        let mut plan: Plan =
            serde_json::from_str(r#"{"name": "p", "variant": [{"name": "a"}]}"#).unwrap();
        assert_eq!(plan.variant_count(), Some(1));
        let ten: Vec<MatrixValue> = (0..10).map(MatrixValue::Int).collect();
        for k in 0..9 {
            plan.matrix.insert(format!("k{k}"), ten.clone());
        }
        assert_eq!(plan.variant_count(), Some(1_000_000_000));
        assert_eq!(plan.run_count(3), Some(0), "no workloads");
        for k in 9..21 {
            plan.matrix.insert(format!("k{k}"), ten.clone());
        }
        assert_eq!(plan.variant_count(), None, "10^21 overflows u64");
        plan.variants.clear();
        plan.matrix.clear();
        plan.matrix.insert("x".into(), ten);
        assert_eq!(
            plan.variant_count(),
            Some(10),
            "the matrix alone makes variants"
        );
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(shell_quote("--work-us"), "--work-us");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn command_line_substitution_and_emptiness() {
        let v = vars(&[("port", "1"), ("x", "$(touch x) a")]);
        let c = CommandLine::Argv(vec!["x".into(), "-p{port}".into(), "{x}".into()]).substitute(&v);
        assert_eq!(
            c,
            CommandLine::Argv(vec!["x".into(), "-p1".into(), "$(touch x) a".into()])
        );
        let c = CommandLine::Shell("run -p {port} {x}".into()).substitute(&v);
        assert_eq!(c, CommandLine::Shell("run -p 1 '$(touch x) a'".into()));
        assert!(CommandLine::Shell("  ".into()).is_empty());
        assert!(CommandLine::Argv(vec![]).is_empty());
        assert!(!CommandLine::Shell("true".into()).is_empty());
    }
}
