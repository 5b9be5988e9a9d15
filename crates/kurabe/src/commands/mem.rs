//! `kurabe mem`: system memory the way `free` shows it, in every procps
//! generation's meaning of "used", plus the top processes by PSS.
//!
//! The numbers and formulas live in `kurabe_probe::meminfo` (with the procps
//! version boundaries); this file parses free-style unit flags and picks
//! the renderer (`kurabe_report::Free`, or JSON).

use std::process::ExitCode;

use kurabe_model::record::SavedRecord;
use kurabe_report::{mem_renderer, write_rendered, Format, FreeFlags, FreeUnit};

use crate::flags::format;

/// Arguments of `kurabe mem`.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub save: crate::flags::SaveArgs,
    /// Show amounts in bytes.
    #[arg(short = 'b', long, group = "unit")]
    pub bytes: bool,
    /// Show amounts in kibibytes (the default, like free).
    #[arg(short = 'k', long, group = "unit")]
    pub kibi: bool,
    /// Show amounts in mebibytes.
    #[arg(short = 'm', long, group = "unit")]
    pub mebi: bool,
    /// Show amounts in gibibytes.
    #[arg(short = 'g', long, group = "unit")]
    pub gibi: bool,
    /// Show amounts human-readable (B, Ki, Mi, Gi, Ti), like free -h.
    #[arg(short = 'h', long, group = "unit")]
    pub human: bool,
    /// Use powers of 1000 instead of 1024 (kB, MB, GB), like free --si.
    #[arg(long)]
    pub si: bool,
    /// How many processes to list by PSS (0 = none).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Output format: text (free's layout plus the legacy lines and the top processes) or json (the versioned record).
    #[arg(long, value_parser = format(&["text", "json"]), default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub out: crate::flags::OutputArg,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// Run `kurabe mem`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = kurabe_probe::mem_report::read(args.top, env!("CARGO_PKG_VERSION"))?;
    let renderer = mem_renderer(args.format, unit(&args));
    write_rendered(args.out.path(), &*renderer, &report)?;
    let label = report.label();
    args.save
        .save_if_asked(&label, || SavedRecord::Mem(Box::new(report)))?;
    Ok(ExitCode::SUCCESS)
}

/// The unit flags as the report's plain values.
fn unit(a: &Args) -> FreeUnit {
    let flags = FreeFlags {
        bytes: a.bytes,
        mebi: a.mebi,
        gibi: a.gibi,
        human: a.human,
        si: a.si,
    };
    flags.unit()
}
