//! The time series of a [`WatchReport`] as CSV, one row per sample.

use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::probe::WatchReport;

use crate::{Csv, Render};

impl Render<WatchReport> for Csv {
    fn render(&self, r: &WatchReport, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(series(r).as_bytes())
    }
}

/// The time series as CSV.
fn series(r: &WatchReport) -> String {
    let mut o = String::from(
        "t_s,cpu_percent,cpu_seconds,rss_bytes,pss_bytes,pss_anon_bytes,pss_file_bytes,pss_shmem_bytes,uss_bytes,swap_bytes,processes,threads\n",
    );
    for p in &r.series {
        let z = &p.size;
        let _ = writeln!(
            o,
            "{:.3},{:.2},{:.4},{},{},{},{},{},{},{},{},{}",
            p.t_s,
            p.cpu_percent,
            p.cpu_seconds,
            z.rss_bytes,
            z.pss_bytes,
            z.pss_anon_bytes,
            z.pss_file_bytes,
            z.pss_shmem_bytes,
            z.uss_bytes,
            z.swap_bytes,
            z.processes,
            z.threads
        );
    }
    o
}
