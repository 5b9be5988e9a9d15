//! What a `kurabe http` run leaves behind: the `-g` file begun before the
//! load, the `-e` percentile file and the report written after it.
//!
//! Owns these edge decisions for the single and distributed runs alike.
//! Must not render: the bytes come from `kurabe-report`.

use std::path::Path;

use anyhow::Context;
use kurabe_http::load::GnuplotFile;
use kurabe_http::load::Taps;
use kurabe_model::http::HttpReport;
use kurabe_report::write::{write_output, write_rendered, Pending};
use kurabe_report::{AbPercentCsv, SeriesCsv};

use super::args::Args;
use kurabe_model::notice::Notice;

/// Start the `-g` file (a temp file until the run succeeds, or a FIFO/device)
/// and hand it to the load as a tap.
pub(super) fn open_gnuplot(path: Option<&Path>) -> anyhow::Result<(Option<Pending>, Taps)> {
    let Some(path) = path else {
        return Ok((None, Taps::default()));
    };
    let pending = Pending::begin(path).context("-g")?;
    let file = pending
        .file()
        .try_clone()
        .with_context(|| format!("-g: cannot open '{}'", path.display()))?;
    let taps = Taps {
        gnuplot: Some(GnuplotFile {
            path: path.to_owned(),
            file: std::sync::Arc::new(file),
            header: kurabe_report::ab_gnuplot::HEADER,
            line: kurabe_report::ab_gnuplot::line,
        }),
        head_trace: None,
    };
    Ok((Some(pending), taps))
}

/// True (with a note naming `flag`) when no response arrived: there are no
/// latencies, so a percentile or per-request file would be made up.
pub(super) fn no_response(report: &HttpReport, flag: &str) -> bool {
    let none = report.complete_requests == 0;
    if none {
        crate::tell(Notice::NotWritten { flag: flag.into() });
    }
    none
}

/// Write the `-e` percentile file and the `--series-csv` file (if asked) and the rendered report to `-o FILE` or stdout.
pub(crate) fn write_outputs(
    args: &Args,
    report: &HttpReport,
    rendered: &str,
) -> anyhow::Result<()> {
    let percentiles = (args.percentiles_csv.as_deref()).filter(|_| !no_response(report, "-e"));
    write_rendered(("-e", percentiles), &AbPercentCsv, report)?;
    let series = args.series_csv.as_deref();
    write_rendered(("--series-csv", series), &SeriesCsv, report)?;
    Ok(write_output(args.out.path(), rendered)?)
}
