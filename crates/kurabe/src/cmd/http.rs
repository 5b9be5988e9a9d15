//! `kurabe http` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe http`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe http`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe http' is not available in this build yet")
}
