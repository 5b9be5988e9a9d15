//! Renderers of [`WatchReport`] (`kurabe watch`): the text summary
//! ([`crate::Terminal`]), the time series as CSV ([`crate::Csv`]) and as an
//! SVG chart ([`Svg`]); JSON is [`crate::Json`].

mod csv;
mod svg;
mod text;

pub use svg::Svg;

#[cfg(test)]
mod tests {
    use crate::{to_string, Csv, Json, Svg, Terminal};

    /// Snapshots of every format over the fixture (`testdata/watch.json`).
    #[test]
    fn snapshots() {
        let r = crate::fixtures::watch();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| {
            insta::assert_snapshot!("watch_text", to_string(&Terminal { color: false }, &r));
            insta::assert_snapshot!("watch_csv", to_string(&Csv, &r));
            insta::assert_snapshot!("watch_svg", to_string(&Svg, &r));
            insta::assert_snapshot!("watch_json", to_string(&Json, &r));
        });
    }

    /// The summary fits 100 columns, long notes included.
    #[test]
    fn text_fits_one_hundred_columns() {
        let mut r = crate::fixtures::watch();
        r.notes.push("x ".repeat(120));
        let text = to_string(&Terminal { color: false }, &r);
        for line in text.lines() {
            assert!(line.chars().count() <= crate::terminal::WIDTH, "{line}");
        }
    }
}
