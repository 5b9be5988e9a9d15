//! Which renderer `kurabe http` (and `fleet`, `demo`) writes with: the
//! flag's values and the pick. The renderers themselves live in
//! `kurabe-report`.

use kurabe_model::http::HttpReport;
use kurabe_report::{AbHtml, AbText, Csv, Json, Markdown, Render};

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

/// ab's layout flags: `-d`/`-S` shape the text report, `-w` (or any of
/// `-x`/`-y`/`-z`) replaces it with ab's HTML table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// `-d` and `-S`.
    pub text: AbText,
    /// `-w` with the `-x`/`-y`/`-z` attributes.
    pub html: Option<AbHtml>,
}

/// The renderer for `format` in `layout`.
pub fn renderer(format: Format, layout: &Layout) -> Box<dyn Render<HttpReport>> {
    if let Some(html) = &layout.html {
        return Box::new(html.clone());
    }
    match format {
        Format::Text => Box::new(layout.text),
        Format::Json => Box::new(Json),
        Format::Md => Box::new(Markdown),
        Format::Csv => Box::new(Csv),
    }
}
