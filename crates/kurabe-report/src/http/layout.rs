//! Which renderer writes one `kurabe http` run: the report format, shaped
//! by ab's layout flags (`-d`/`-S` for the text, `-w` with `-x`/`-y`/`-z`
//! replacing it with ab's HTML table).
//!
//! Owns the pick only; the renderers are this module's siblings. Must not
//! know flag syntax: the binary fills [`AbLayout`].

use kurabe_model::http::HttpReport;

use super::{AbHtml, AbText};
use crate::{Csv, Format, Json, Markdown, Render};

/// ab's layout switches over the chosen format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbLayout {
    /// `-d` and `-S`: what the text report shows.
    pub text: AbText,
    /// `-w` with the `-x`/`-y`/`-z` attributes: ab's HTML table instead.
    pub html: Option<AbHtml>,
}

/// The renderer of one HTTP run in `format`, shaped by `layout` (ab's HTML
/// table wins over the format; [`Format::Html`] is that table too).
pub fn http_renderer(format: Format, layout: &AbLayout) -> Box<dyn Render<HttpReport>> {
    if let Some(html) = &layout.html {
        return Box::new(html.clone());
    }
    match format {
        Format::Text => Box::new(layout.text),
        Format::Json => Box::new(Json),
        Format::Markdown => Box::new(Markdown),
        Format::Csv => Box::new(Csv),
        Format::Html => Box::new(AbHtml::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::to_string;

    #[test]
    fn the_html_table_wins_over_the_format() {
        let r = crate::fixtures::http();
        let layout = AbLayout {
            html: Some(AbHtml::default()),
            ..AbLayout::default()
        };
        let html = to_string(&*http_renderer(Format::Text, &layout), &r);
        assert!(html.contains("<table"), "{html}");
        let text = to_string(&*http_renderer(Format::Text, &AbLayout::default()), &r);
        assert_eq!(text, to_string(&AbText::default(), &r));
    }
}
