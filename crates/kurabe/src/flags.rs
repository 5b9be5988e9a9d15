//! Flag groups and value grammars shared by several commands, so each flag
//! is spelled, documented and read the same way wherever it appears
//! (flattened into the commands' `Args` with `#[command(flatten)]`).
//!
//! Owns parsing a flag's text into a typed value with an error that says
//! what to write instead. Must not know which command uses it.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::parser::ValueSource;
use kurabe_lab::saved_result;
use kurabe_model::given::Given;
use kurabe_model::notice::Notice;
use kurabe_model::profile::{ProfileOff, Profiling};
use kurabe_model::record::SavedRecord;
use kurabe_report::Format;

/// The one duration grammar of flags and plans ("2", "2s", "500ms",
/// "1m30s"; a bare number is seconds), defined in `kurabe-model`.
pub(crate) use kurabe_model::plan::parse_duration;

/// The one size grammar of flags and plans ("512M" = 512 × 2²⁰, "500MB" =
/// 500 × 10⁶), defined in `kurabe-model`.
pub(crate) use kurabe_model::plan::parse_size;

/// The flags the command line gave its subcommand (not defaults, not the
/// environment's), each by all its spellings: `-c` and `--concurrency`,
/// a positional argument by its value name (`URL_B`).
pub fn given(cli: &clap::Command, matches: &clap::ArgMatches) -> Given {
    let Some((name, sub)) = matches.subcommand() else {
        return Given::default();
    };
    let args = cli
        .find_subcommand(name)
        .into_iter()
        .flat_map(|c| c.get_arguments());
    Given::new(
        args.filter(|a| sub.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
            .flat_map(spellings),
    )
}

/// `-c`, `--concurrency`; a positional argument's value name.
fn spellings(arg: &clap::Arg) -> Vec<String> {
    let short = arg.get_short().map(|c| format!("-{c}"));
    let long = arg.get_long().map(|l| format!("--{l}"));
    let names = arg.get_value_names().unwrap_or_default();
    let positional = names.first().filter(|_| arg.is_positional());
    [short, long, positional.map(|n| n.to_string())]
        .into_iter()
        .flatten()
        .collect()
}

/// `--format` of a command offering the formats `names` (text, md, json,
/// csv, html: `kurabe_report::Format`'s names).
pub fn format(names: &'static [&'static str]) -> impl TypedValueParser<Value = Format> {
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Format>())
}

/// `-o, --output FILE`: where a command writes its report.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArg {
    /// Write to FILE instead of stdout, atomically: complete or not at all.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArg {
    /// The file, if one was given.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.output.as_deref()
    }
}

/// `--store`: which results store a command reads or writes.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArg {
    /// Results store: a file, sqlite:PATH or postgres://… (password from PGPASSWORD or ~/.pgpass, never here) [default: $XDG_DATA_HOME/kurabe/results.db].
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "KURABE_STORE",
        hide_env_values = true
    )]
    pub store: Option<PathBuf>,
}

/// `--rev`: a label of the code measured, stored with what a command saves.
#[derive(Debug, Clone, clap::Args)]
pub struct RevArg {
    /// Label of the code measured (a CI build id, a tag), stored with the record beside the git commit, branch and dirty flag read from the current directory's work tree.
    #[arg(
        long = "rev",
        value_name = "LABEL",
        env = "KURABE_REV",
        hide_env_values = true
    )]
    pub rev: Option<String>,
}

impl RevArg {
    /// The code measured: the label and the current directory's work tree.
    pub fn current(&self) -> Option<kurabe_model::record::Revision> {
        kurabe_probe::origin::current_rev(self.rev.clone())
    }
}

/// `-q, --quiet` of the commands that print progress lines.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct QuietArg {
    /// No progress lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// `--until-confident` and its time budget (`kurabe run`, `kurabe cmd`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct ConfidentArgs {
    /// Keep adding rounds until every headline metric (every metric a workload selects) is settled: better, worse, or within noise with the whole interval inside the band (not inconclusive). To keep repeated looks honest the stop decision reads a 99 % interval (Bonferroni over at most 5 looks: after the first rounds, then each time the rounds have doubled); the report shows the normal 95 % verdicts.
    #[arg(long)]
    pub until_confident: bool,
    /// Time budget of --until-confident for the whole experiment ("10m", "90s").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m", requires = "until_confident")]
    pub max_time: Duration,
}

impl ConfidentArgs {
    /// The time budget when `--until-confident` was given.
    pub fn budget(&self) -> Option<Duration> {
        self.until_confident.then_some(self.max_time)
    }

    /// The runner's rounds: `--until-confident` within its budget, or the plan's.
    pub fn more_rounds(&self) -> kurabe_lab::MoreRounds {
        kurabe_lab::MoreRounds::until_confident(self.budget())
    }
}

/// `--profile[=required]`: sample every run's on-CPU stacks.
#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArg {
    /// Sample the measured processes' on-CPU stacks in every run (perf events, 999 Hz, user and kernel frames): the commands, or the server behind a loopback URL or a plan's target over the measured load, all its processes and threads. Says which functions account for the difference, per execution or per request. Where perf events are not allowed, one line names the setting to change and the comparison runs without it; --profile=required stops instead (exit 2).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = ["on", "required"])]
    pub profile: Option<String>,
}

impl ProfileArg {
    /// Whether the runs are sampled, said in one line when they cannot
    /// be (or with user frames only; not with `quiet`); an error (exit 2)
    /// when `--profile=required` cannot be met.
    pub fn profiling(&self, quiet: bool) -> anyhow::Result<Profiling> {
        self.told(quiet, kurabe_profile::choose)
    }

    /// [`ProfileArg::profiling`] for one load's server `server`: whether
    /// it may be sampled (another user's process may not), said in one
    /// line when it may not or there is none (exit 2 with
    /// `--profile=required`).
    pub fn profiling_server(&self, server: Option<u32>, quiet: bool) -> anyhow::Result<Profiling> {
        self.told(quiet, |required| {
            kurabe_profile::choose_for(server, required)
        })
    }

    /// What `choose` decides, its notice told
    /// ([`kurabe_profile::asked`]); off without `--profile`.
    fn told(
        &self,
        quiet: bool,
        choose: impl Fn(bool) -> Result<(Profiling, Option<Notice>), ProfileOff>,
    ) -> anyhow::Result<Profiling> {
        let (profiling, notice) = kurabe_profile::asked(self.profile.as_deref(), quiet, choose)
            .map_err(|why| anyhow::anyhow!(kurabe_report::notice::profile_required(&why)))?;
        if let Some(n) = notice {
            crate::tell(n);
        }
        Ok(profiling)
    }
}

/// `--cpus`, `--cpuset`, `--memory`: cgroup limits that emulate a smaller machine.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// CPU quota for the command in cores, e.g. 0.5 (cgroup CFS quota), to emulate a smaller machine.
    #[arg(long, value_name = "CORES")]
    pub cpus: Option<f64>,
    /// CPUs the command may run on, e.g. 0 or 0-1 (cgroup cpuset).
    #[arg(long, value_name = "LIST")]
    pub cpuset: Option<String>,
    /// Memory limit for the command (cgroup): 512M or 512MiB = 512 × 2²⁰ bytes, 500MB = 500 × 10⁶, as in plans.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
}

impl LimitArgs {
    /// The limits as a plan writes them (`None` when no flag was given).
    pub fn plan_limits(&self) -> Option<kurabe_model::plan::Limits> {
        kurabe_model::plan::Limits::given(self.cpus, self.cpuset.clone(), self.memory)
    }
}

/// `--save [LABEL]` with `--store` and `--rev`: keep the single result of
/// http, watch, mem or system in the store. The report is written first;
/// saving comes after, so a store problem never costs the user the
/// numbers they just measured.
#[derive(Debug, Clone, clap::Args)]
pub struct SaveArgs {
    /// Also save the result in the results store, optionally as --save=LABEL (default: a label made from the command); list with `kurabe results list`.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub save: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub rev: RevArg,
}

impl SaveArgs {
    /// With `--save`, open the store now, before anything is measured
    /// (`kurabe_lab::saved_result::check_store`).
    pub fn check_store(&self) -> anyhow::Result<()> {
        let (save, store) = (self.save.as_deref(), self.store.store.as_deref());
        Ok(saved_result::check_store(save, store)?)
    }

    /// Save the record `record` makes when `--save` was given;
    /// `default_label` when no label was.
    pub fn save_if_asked(
        &self,
        default_label: &str,
        record: impl FnOnce() -> SavedRecord,
    ) -> anyhow::Result<()> {
        let (store, rev) = (self.store.store.as_deref(), self.rev.rev.clone());
        let asked = (self.save.as_deref(), default_label);
        let saved = saved_result::save_if_asked(asked, record, store, rev)?;
        saved.into_iter().for_each(crate::tell);
        Ok(())
    }
}
