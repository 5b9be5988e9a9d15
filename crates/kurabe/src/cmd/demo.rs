//! `kurabe demo` (not built yet).

use std::process::ExitCode;

/// Arguments of `kurabe demo`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `kurabe demo`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'kurabe demo' is not available in this build yet")
}
