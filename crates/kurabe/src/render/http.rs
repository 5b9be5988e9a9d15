//! Which renderer `kurabe http` (and `fleet`, `demo`) writes with: the
//! flag's values and the pick. The renderers themselves live in
//! `kurabe-report`.

use kurabe_model::http::HttpReport;
use kurabe_report::{Csv, Json, Markdown, Render, Terminal};

/// Output formats of `kurabe http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// ab's report layout plus kurabe's additions.
    Text,
    /// The versioned `kurabe-model` record, pretty-printed.
    Json,
    /// One Markdown table row of headline figures.
    Md,
    /// A header and one row of headline figures.
    Csv,
}

/// The renderer for `format`.
pub fn renderer(format: Format) -> Box<dyn Render<HttpReport>> {
    match format {
        Format::Text => Box::new(Terminal { color: false }),
        Format::Json => Box::new(Json),
        Format::Md => Box::new(Markdown),
        Format::Csv => Box::new(Csv),
    }
}
