//! `kurabe watch` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe watch`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe watch`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe watch' is not available in this build yet")
}
