//! One module per subcommand: `Args` (clap) + `run`.

pub mod bench;
pub mod bisect;
pub mod check;
pub mod demo;
pub mod history;
pub mod http;
pub mod http_ab;
pub mod mem;
pub mod report;
pub mod results;
pub mod run;
pub mod serve;
pub mod site;
pub mod system;
pub mod watch;
pub mod worker;

/// Check every output location (`flag`, path) before the work starts, so a
/// typo in `-o` costs one line and exit 2, not the whole measurement.
pub(crate) fn check_outputs(outputs: &[(&str, Option<&std::path::Path>)]) -> anyhow::Result<()> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            kurabe_report::write::check_writable(path)
                .map_err(|e| anyhow::anyhow!("{flag}: {e:#}"))?;
        }
    }
    Ok(())
}
