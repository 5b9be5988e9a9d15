//! Which renderer draws a report kind in a chosen [`Format`], for the
//! record kinds whose commands offer a few formats (`watch`, `mem`,
//! `system`, `bisect`, `http A B`), and the formats' names on the command line.
//!
//! Owns these choices so a command only names the format it was given.
//! Must not render: each renderer lives in its report kind's files.

use std::str::FromStr;

use kurabe_model::probe::{MemReport, WatchReport};
use kurabe_model::record::Experiment;
use kurabe_model::stats::bisect::BisectReport;

use crate::{Csv, Format, Free, FreeUnit, Json, Markdown, Render, Terminal};

impl FromStr for Format {
    type Err = String;

    /// `text`, `md`, `json`, `csv` or `html`, as `--format` spells them.
    fn from_str(name: &str) -> Result<Format, String> {
        match name {
            "text" => Ok(Format::Text),
            "md" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "html" => Ok(Format::Html),
            _ => Err(format!(
                "unknown format `{name}`: text, md, json, csv or html"
            )),
        }
    }
}

/// `kurabe watch`: the summary (text), the time series (CSV) or the whole report (JSON).
pub fn watch_renderer(format: Format) -> Box<dyn Render<WatchReport>> {
    match format {
        Format::Text => Box::new(Terminal { color: false }),
        Format::Csv => Box::new(Csv),
        _ => Box::new(Json),
    }
}

/// `kurabe mem`: free's layout in `unit`, or the JSON record.
pub fn mem_renderer(format: Format, unit: FreeUnit) -> Box<dyn Render<MemReport>> {
    match format {
        Format::Json => Box::new(Json),
        _ => Box::new(Free { unit }),
    }
}

/// A record with a terminal, a Markdown and a JSON form (a system report,
/// a system comparison, a bisect report); `color` for the terminal only.
pub fn record_renderer<R>(format: Format, color: bool) -> Box<dyn Render<R>>
where
    Terminal: Render<R>,
    Markdown: Render<R>,
    Json: Render<R>,
{
    match format {
        Format::Text => Box::new(Terminal { color }),
        Format::Markdown => Box::new(Markdown),
        _ => Box::new(Json),
    }
}

/// `kurabe bisect`: the steps and answer for a terminal (`color`), or JSON.
pub fn bisect_renderer(format: Format, color: bool) -> Box<dyn Render<BisectReport>> {
    match format {
        Format::Json => Box::new(Json),
        _ => Box::new(Terminal { color }),
    }
}

/// `kurabe http A B`: the experiment's report in `format` (`color`: the
/// terminal table's), or for JSON that report plus every run's full HTTP
/// record, rendered.
pub fn http_compare_doc(
    exp: &Experiment,
    urls: &[String],
    rounds: u32,
    format: Format,
    color: bool,
) -> String {
    let report = crate::experiment_report(exp);
    if format == Format::Json {
        let doc = crate::http_compare(exp, urls, rounds, report);
        return crate::to_string(&Json, &doc);
    }
    crate::to_string(&*crate::renderer(format, color), &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_read_back() {
        for (name, f) in [
            ("text", Format::Text),
            ("md", Format::Markdown),
            ("html", Format::Html),
        ] {
            assert_eq!(name.parse::<Format>(), Ok(f));
        }
        assert!("markdown".parse::<Format>().is_err());
    }
}
