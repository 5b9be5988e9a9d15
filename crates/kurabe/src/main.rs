//! The `kurabe` binary: a thin clap front end.
//!
//! Each subcommand lives in `cmd/<name>.rs` with an `Args` struct (clap
//! derive, only here) and a `run(args) -> anyhow::Result<ExitCode>` that turns
//! the args into the libraries' typed config, calls them and renders the
//! result. This file owns exit codes: 0 ok, 1 a check failed, 2 usage or setup
//! error (clap's own errors exit 2 too). A closed stdout (`| head`) is success.

mod cmd;
mod flags;
mod load;
mod output;
mod render;
mod save;
mod signal;
mod store;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Http(Box<cmd::http::Args>),
    /// Run the built-in tunable HTTP target server.
    Serve(cmd::serve::Args),
    /// A complete load test against the built-in server, no other software needed.
    Demo(cmd::demo::Args),
    /// CPU and memory of a process tree over time (a PID, the server on a port, or a command).
    Watch(cmd::watch::Args),
    /// System memory the way `free` shows it (current, 3.3.10–4.0.0 and ≤3.3.9 formulas), plus top processes by PSS.
    Mem(cmd::mem::Args),
    /// UnixBench-style index of this machine, import and compare UnixBench reports.
    System(cmd::system::Args),
    /// Benchmark and compare commands (hyperfine's options), with CPU, memory, interleaving and verdicts.
    Cmd(Box<cmd::bench::Args>),
    /// Run an experiment plan: variants × workloads × rounds, interleaved, stored, with verdicts.
    Run(Box<cmd::run::Args>),
    /// History in the results store: list, show, compare, export, import, rm.
    Results(cmd::results::Args),
    /// One experiment as a table, Markdown, JSON, CSV or HTML with charts.
    Report(cmd::report::Args),
    /// A load worker for distributed runs (`kurabe http --workers N`): takes shares of runs from the PostgreSQL store.
    Worker(cmd::worker::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let result = match cli.command {
        Command::Http(args) => cmd::http::run(*args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Watch(args) => cmd::watch::run(args),
        Command::Mem(args) => cmd::mem::run(args),
        Command::System(args) => cmd::system::run(args),
        Command::Cmd(args) => cmd::bench::run(*args),
        Command::Run(args) => cmd::run::run(*args),
        Command::Results(args) => cmd::results::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Worker(args) => cmd::worker::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("kurabe: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Print clap's error as one line (plus where to look), or help/version as clap would.
///
/// Clap's own rendering spans several lines (tip, usage, "for more
/// information"); scripts and people want the first line and the fix.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = err.render().to_string();
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':') {
                if let Some(next) = lines.next() {
                    first = format!("{first} {next}");
                }
            }
            eprintln!("kurabe: error: {first} (see 'kurabe --help' or 'kurabe <command> --help')");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
