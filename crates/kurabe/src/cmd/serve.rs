//! `kurabe serve` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe serve`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe serve' is not available in this build yet")
}
