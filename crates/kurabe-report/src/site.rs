//! `kurabe site`: a static dashboard of a whole results store — an index of
//! plans, hosts and metrics with a sparkline and the latest change per
//! series, one page per series (its chart with the steps marked, the
//! changes, the points), and one report page per experiment that the
//! points link to.
//!
//! Pure: [`site_pages`] turns stored experiments into pages (relative path
//! and HTML text); the caller writes them (`write::write_if_changed`, so a
//! regeneration rewrites only pages whose text changed). Every page is
//! self-contained HTML with relative links: it opens from `file://`, needs
//! no server, no network and no script.

use std::io::{self, Write};

use kurabe_model::history::{HistoryReport, HistorySeries};
use kurabe_model::record::Experiment;
use kurabe_model::stats::changepoint::Config;

use crate::chart::sparkline;
use crate::escape::html as esc;
use crate::history::text::{change_short, latest, series_title};
use crate::history::{history_report, HistoryHtml, Hosts};
use crate::html::page_start;
use crate::{experiment_report, to_string, Html};

/// One file of the site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePage {
    /// Path relative to the site's root (`index.html`, `series/….html`).
    pub path: String,
    /// The page.
    pub html: String,
}

/// One plan's history on one machine, with the file name of each series.
struct Section {
    report: HistoryReport,
    files: Vec<String>,
}

/// Every page of the site for `plans` (name and experiments of each).
pub fn site_pages(plans: &[(String, Vec<Experiment>)]) -> Vec<SitePage> {
    let sections: Vec<Section> = plans
        .iter()
        .flat_map(|(name, e)| sections(name, e))
        .collect();
    let mut pages = vec![SitePage {
        path: "index.html".into(),
        html: index(&sections),
    }];
    for s in &sections {
        for (series, file) in s.report.series.iter().zip(&s.files) {
            pages.push(SitePage {
                path: file.clone(),
                html: series_page(&s.report, series),
            });
        }
    }
    for e in plans.iter().flat_map(|(_, e)| e) {
        pages.push(SitePage {
            path: format!("experiments/{}.html", e.id),
            html: to_string(&Html, &experiment_report(e)),
        });
    }
    pages
}

/// A plan's histories, one per host fingerprint, newest machine first.
fn sections(name: &str, experiments: &[Experiment]) -> Vec<Section> {
    let config = Config::default();
    let mut fingerprints: Vec<Option<String>> = Vec::new();
    for e in experiments.iter().rev() {
        let fp = e.host_fingerprint();
        if !fingerprints.contains(&fp) {
            fingerprints.push(fp);
        }
    }
    fingerprints
        .into_iter()
        .map(|fp| {
            let hosts = fp.map_or(Hosts::All, Hosts::Fingerprint);
            let report = history_report(name, experiments, &hosts, &config);
            let files = report
                .series
                .iter()
                .map(|s| series_file(&report, s))
                .collect();
            Section { report, files }
        })
        .collect()
}

/// `series/<readable>-<hash>.html`: readable, and unique per plan, host
/// and series (names may differ only in characters the slug drops).
fn series_file(r: &HistoryReport, s: &HistorySeries) -> String {
    let fp = r.host_fingerprint.as_deref().unwrap_or("all");
    let key = format!(
        "{}\n{fp}\n{}\n{}\n{}",
        r.name, s.workload, s.variant, s.metric
    );
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let readable: String = format!("{}-{}-{}", r.name, s.variant, s.metric)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    format!("series/{readable}-{:08x}.html", hash as u32)
}

fn index(sections: &[Section]) -> String {
    let mut out = Vec::new();
    let _ = write_index(sections, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn write_index(sections: &[Section], out: &mut dyn Write) -> io::Result<()> {
    page_start(out, "Results")?;
    let experiments: usize = sections
        .iter()
        .map(|s| {
            s.report
                .hosts
                .iter()
                .map(|h| h.experiments)
                .max()
                .unwrap_or(0)
        })
        .sum();
    writeln!(out, "<header><h1>Results</h1><p class=\"meta\">{} plan histories · {experiments} experiments</p></header>", sections.len())?;
    if sections.is_empty() {
        writeln!(
            out,
            "<section><p>The store holds no experiment yet.</p></section>"
        )?;
    }
    for s in sections {
        section_table(s, out)?;
    }
    writeln!(out, "</main>\n</body>\n</html>")
}

fn section_table(s: &Section, out: &mut dyn Write) -> io::Result<()> {
    let r = &s.report;
    writeln!(
        out,
        "<section><h2>{}</h2><p class=\"meta\">{}</p><div class=\"scroll\"><table><thead><tr><th>series</th><th>trend</th><th>latest</th><th>latest change</th></tr></thead><tbody>",
        esc(&r.name),
        esc(&crate::history::text::hosts_line(r))
    )?;
    for (series, file) in r.series.iter().zip(&s.files) {
        let values: Vec<f64> = series.points.iter().map(|p| p.value).collect();
        let marks: Vec<usize> = series.changes.iter().map(|c| c.index).collect();
        let latest = latest(series, "–");
        let change = series.changes.last().map_or("–".to_owned(), change_short);
        writeln!(
            out,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"note\">{}</td></tr>",
            esc(file),
            esc(&series_title(series)),
            sparkline(&values, &marks),
            esc(&latest),
            esc(&change)
        )?;
    }
    writeln!(out, "</tbody></table></div></section>")
}

fn series_page(r: &HistoryReport, s: &HistorySeries) -> String {
    let mut out = Vec::new();
    let links = HistoryHtml {
        report_links: Some("../experiments/".into()),
    };
    let _ = (|| -> io::Result<()> {
        page_start(&mut out, &format!("{} · {}", r.name, series_title(s)))?;
        writeln!(
            out,
            "<header><p class=\"meta\"><a href=\"../index.html\">All results</a></p><h1>{}</h1><p class=\"meta\">{}</p></header>",
            esc(&r.name),
            esc(&crate::history::text::hosts_line(r))
        )?;
        links.series(s, &mut out)?;
        writeln!(out, "</main>\n</body>\n</html>")
    })();
    String::from_utf8_lossy(&out).into_owned()
}
