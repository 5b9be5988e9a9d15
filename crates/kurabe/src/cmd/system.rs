//! `kurabe system` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe system`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe system`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe system' is not available in this build yet")
}
