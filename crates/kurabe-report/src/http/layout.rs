//! Which renderer writes one `kurabe http` run: the report format, shaped
//! by ab's layout flags (`-d`/`-S` for the text, `-w` with `-x`/`-y`/`-z`
//! replacing it with ab's HTML table).
//!
//! Owns the pick and the rules of ab's layout flags (`-x`/`-y`/`-z` imply
//! `-w`; the HTML table only in place of the text); the renderers are this
//! module's siblings. Must not know flag syntax: the binary fills
//! [`AbLayoutFlags`].

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

/// ab's layout flags as given: `-d`, `-S`, `-l`, `-w`, `-x`, `-y`, `-z`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbLayoutFlags {
    /// `-d`: no "percentage of the requests served" table.
    pub no_percentiles: bool,
    /// `-S`: no median and standard deviation columns.
    pub no_confidence: bool,
    /// `-l`: variable document length accepted.
    pub variable_length: bool,
    /// `-w`: ab's HTML table.
    pub html: bool,
    /// `-x`: attributes of the `<table>`.
    pub table_attrs: Option<String>,
    /// `-y`: attributes of every `<tr>`.
    pub tr_attrs: Option<String>,
    /// `-z`: attributes of every `<td>` and `<th>`.
    pub td_attrs: Option<String>,
}

/// ab's HTML table asked for together with another report format.
#[derive(Debug, thiserror::Error)]
#[error("-w (or -x/-y/-z) prints ab's HTML table: drop --format, or drop -w")]
pub struct LayoutError;

impl AbLayoutFlags {
    /// `-w`, or any of `-x`/`-y`/`-z`, which imply it as in ab.
    pub fn wants_html(&self) -> bool {
        self.html
            || self.table_attrs.is_some()
            || self.tr_attrs.is_some()
            || self.td_attrs.is_some()
    }

    /// The layout; ab's HTML table only in place of the text `format`.
    pub fn resolve(self, format: Format) -> Result<AbLayout, LayoutError> {
        let html = self.wants_html();
        if html && format != Format::Text {
            return Err(LayoutError);
        }
        let html = html.then(|| {
            let d = AbHtml::default();
            AbHtml {
                table: self.table_attrs.unwrap_or(d.table),
                tr: self.tr_attrs.unwrap_or(d.tr),
                td: self.td_attrs.unwrap_or(d.td),
            }
        });
        let text = AbText {
            percentiles: !self.no_percentiles,
            confidence: !self.no_confidence,
            variable_length: self.variable_length,
        };
        Ok(AbLayout { text, html })
    }
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
    fn attributes_imply_the_html_table_of_the_text_format_only() {
        let flags = AbLayoutFlags {
            td_attrs: Some("x=1".into()),
            no_percentiles: true,
            ..Default::default()
        };
        assert!(flags.wants_html());
        let layout = flags.clone().resolve(Format::Text).unwrap();
        let html = layout.html.unwrap();
        assert_eq!((html.td.as_str(), html.tr), ("x=1", AbHtml::default().tr));
        assert!(!layout.text.percentiles && layout.text.confidence);
        assert!(flags.resolve(Format::Json).is_err());
        let plain = AbLayoutFlags::default().resolve(Format::Json).unwrap();
        assert!(plain.html.is_none());
    }

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
