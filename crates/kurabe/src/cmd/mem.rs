//! `kurabe mem` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe mem`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe mem`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe mem' is not available in this build yet")
}
