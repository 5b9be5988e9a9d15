//! Where `kurabe http -v` writes ab's log (its lines are
//! `kurabe_http::ab_verbose`'s): stdout beside the text report, stderr
//! beside a document that must stay parseable.
//!
//! Owns printing the `-v` lines. Must not show the `-P` or `-A` password
//! anywhere (`ab_verbose` masks them).

use std::io::Write as _;
use std::sync::Arc;

use kurabe_http::ab_verbose;
use kurabe_http::client::HeadTrace;
use kurabe_report::Format;

/// Print `-v` output where ab prints it, stdout, unless the report there is
/// JSON, CSV or Markdown (then stderr, so the document stays parseable).
/// A closed pipe ends the log quietly (the report write reports it).
pub(super) fn verbose(format: Format, text: &str) {
    let _ = if format == Format::Text {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
}

/// The `-v 2` tap: every response head, logged as ab logs it.
pub(super) fn trace(format: Format, verbosity: u8) -> HeadTrace {
    HeadTrace(Arc::new(move |bytes: &[u8]| {
        verbose(format, &ab_verbose::log_head(bytes, verbosity))
    }))
}
