//! The `kurabe` binary: a thin clap front end.
//!
//! Each subcommand lives in `commands/<name>.rs` with an `Args` struct (clap
//! derive, only here) and a `run(args) -> anyhow::Result<ExitCode>` that turns
//! the args into the libraries' typed config, calls them and renders the
//! result. This file picks the exit code of every ending and error (their
//! numbers are `kurabe_model::ending`'s): 0 ok, 1 a check failed, 2 usage
//! or setup error (clap's own errors exit 2 too), 70 (EX_SOFTWARE) an
//! internal error (a load worker's panic). A closed stdout (`| head`) is
//! success.

// The `///` comments on the clap structs are `--help` text, written for the
// terminal (`http://host[:port]/`, `<table>`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod commands;
mod flags;
mod live;

mod signal;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use kurabe_http::outcome::{is_interrupted, is_worker_panic};
use kurabe_model::ending::error_status;
use kurabe_report::error_text::{error_line, is_broken_pipe, short_usage_error};

/// kurabe (比べ, "compare"): is A faster, leaner or cheaper than B?
#[derive(Debug, Parser)]
#[command(
    name = "kurabe",
    version,
    about,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load-test an HTTP server (ab-compatible flags and report, plus percentiles and JSON).
    Http(Box<commands::http::Args>),
    /// Replay an access log (nginx/Apache combined, common, any nginx log_format) or HAR file against a base URL at the recorded times.
    Replay(Box<commands::replay::Args>),
    /// Run the built-in tunable HTTP target server.
    Serve(commands::serve::Args),
    /// A complete load test against the built-in server, no other software needed.
    Demo(commands::demo::Args),
    /// CPU and memory of a process tree over time (a PID, the server on a port, or a command).
    Watch(commands::watch::Args),
    /// System memory the way `free` shows it (current, 3.3.10–4.0.0 and ≤3.3.9 formulas), plus top processes by PSS.
    Mem(commands::mem::Args),
    /// UnixBench-style index of this machine, import and compare UnixBench reports.
    System(commands::system::Args),
    /// Benchmark and compare commands (hyperfine's options), with CPU, memory, interleaving and verdicts.
    Cmd(Box<commands::cmd::Args>),
    /// Run an experiment plan: variants × workloads × rounds, interleaved, stored, with verdicts.
    Run(Box<commands::run::Args>),
    /// This machine's noise on a workload: it runs against itself (A/A) for a while; the spread, the drift, what an experiment can detect, and the rounds and noise bands to use.
    Noise(Box<commands::noise::Args>),
    /// Find the first git commit where a metric of a plan changes (builds each commit once in a cached worktree).
    Bisect(Box<commands::bisect::Args>),
    /// History in the results store: list, show, compare, export, import, rm.
    Results(commands::results::Args),
    /// One experiment as a table, Markdown, JSON, CSV or HTML with charts.
    Report(commands::report::Args),
    /// A plan's metrics over commits and time on one machine, with change points found in the per-run samples.
    History(commands::history::Args),
    /// CI gate: an experiment against its baseline's recent history; exit 1 on any regression.
    Check(commands::check::Args),
    /// A static dashboard of the whole store: plans, hosts, metrics with sparklines and change points; opens from file://.
    Site(commands::site::Args),
    /// A load worker for distributed runs (`kurabe http --workers N`): takes shares of runs from the PostgreSQL store.
    Worker(commands::worker::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::completions::Args),
    /// Print the manual page of kurabe or one of its commands (roff), or write them all.
    Man(commands::man::Args),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    kurabe_store::proctitle::hide_passwords();
    kurabe_http::outcome::quiet_worker_panics();
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => return usage_error(&err),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err.format(&mut Cli::command())),
    };
    // The flags given (not defaulted), for the libraries' checks of
    // flag combinations.
    let given = flags::given(&Cli::command(), &matches);
    // From here a signal ends kurabe with 128 + the signal whatever it is
    // doing: at once while it reads its inputs, gracefully once a command
    // has work to stop (`signal::install_stop`).
    if let Err(err) = signal::install_early() {
        return setup_error(&err);
    }
    let result = match cli.command {
        Command::Http(args) => commands::http::run(*args, &given),
        Command::Replay(args) => commands::replay::run(*args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Watch(args) => commands::watch::run(args),
        Command::Mem(args) => commands::mem::run(args),
        Command::System(args) => commands::system::run(args),
        Command::Cmd(args) => commands::cmd::run(*args),
        Command::Run(args) => commands::run::run(*args),
        Command::Noise(args) => commands::noise::run(*args, &given),
        Command::Bisect(args) => commands::bisect::run(*args),
        Command::Results(args) => commands::results::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::History(args) => commands::history::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Site(args) => commands::site::run(args),
        Command::Worker(args) => commands::worker::run(args),
        Command::Completions(args) => commands::completions::run(args, Cli::command()),
        Command::Man(args) => commands::man::run(args, Cli::command()),
    };
    result.unwrap_or_else(|err| setup_error(&err))
}

/// The exit status of `ending` (`kurabe_model::ending` numbers it), its
/// notice told.
pub(crate) fn exit(ending: kurabe_model::ending::Ending) -> ExitCode {
    let (code, notice) = ending.status(signal::status());
    notice.into_iter().for_each(tell);
    ExitCode::from(code)
}

/// Tell the user `notice` on stderr, in kurabe-report's words.
pub(crate) fn tell(notice: kurabe_model::notice::Notice) {
    eprintln!("{}", kurabe_report::notice::line(&notice));
}

/// A setup error: one line on stderr and exit 2 (70 when a load worker
/// panicked); a closed stdout is success.
fn setup_error(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(&**err) {
        return ExitCode::SUCCESS;
    }
    // A signal before the load began: nothing ran, nothing to say.
    if is_interrupted(&**err) {
        return signal::exit_code();
    }
    eprintln!("kurabe: error: {}", error_line(&**err));
    // A load worker's panic is a bug in kurabe, not the input.
    ExitCode::from(error_status(is_worker_panic(&**err)))
}

/// Print clap's error in at most three lines, or help/version as clap would.
///
/// Clap's own rendering spans up to eight (blank lines, usage, "for more
/// information"); kept are what tells the fix: the first line with the
/// possible values, clap's suggestion ("a similar subcommand exists: 'http'"),
/// and which `--help` to read.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            ExitCode::from(2)
        }
        _ => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            let help = help_command(&args);
            eprint!("{}", short_usage_error(&err.render().to_string(), &help));
            ExitCode::from(2)
        }
    }
}

/// "kurabe results list": the subcommands named in `args`, walked down from the root.
fn help_command(args: &[String]) -> String {
    let mut cmd = Cli::command();
    let mut path = vec!["kurabe".to_owned()];
    for arg in args {
        let Some(sub) = cmd.find_subcommand(arg).cloned() else {
            continue;
        };
        path.push(sub.get_name().to_owned());
        cmd = sub;
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A flag given counts under each of its spellings; a defaulted or
    /// absent one does not.
    #[test]
    fn given_flags_are_named_by_every_spelling() {
        let given = |argv: &[&str]| {
            let m = Cli::command().try_get_matches_from(argv).unwrap();
            flags::given(&Cli::command(), &m)
        };
        let g = given(&["kurabe", "noise", "-c", "2", "http://h/"]);
        assert!(g.has("-c") && g.has("--concurrency") && g.has("CMD|URL|PLAN"));
        assert!(!g.has("-d") && !g.has("--duration"));
        let g = given(&["kurabe", "http", "http://a/", "http://b/", "--save"]);
        assert!(g.has("URL_B") && g.has("--save") && !g.has("-s"));
    }

    /// Every flag read from the environment (KURABE_STORE may hold a
    /// postgres:// URL with a password) hides the value in `--help`.
    #[test]
    fn no_help_text_shows_an_environment_value() {
        fn walk(cmd: &clap::Command, path: &str, seen: &mut usize) {
            for arg in cmd.get_arguments() {
                if arg.get_env().is_some() {
                    *seen += 1;
                    assert!(
                        arg.is_hide_env_values_set(),
                        "{path} --{}: add hide_env_values = true",
                        arg.get_id()
                    );
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), seen);
            }
        }
        let mut seen = 0;
        walk(&Cli::command(), "kurabe", &mut seen);
        assert!(seen >= 2, "the walk found the --store flags");
    }
}
