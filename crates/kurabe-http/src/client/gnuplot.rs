//! ab's `-g` output: one TSV line per request, streamed to the file.
//!
//! Each worker owns a [`GnuplotWriter`] that buffers whole lines and writes
//! them with one `write` on its duplicate of the caller's descriptor; the
//! kernel moves the shared offset under a lock for the whole call, so lines
//! from different workers never interleave in a file and memory stays bounded. Times are UTC (ab uses
//! the local zone; we do not read time-zone data).

use std::fs::File;
use std::io::{self, Write};

use kurabe_model::time::civil_from_days;

/// Header line ab writes.
pub(crate) const HEADER: &str = "starttime\tseconds\tctime\tdtime\tttime\twait\n";
const FLUSH_AT: usize = 60 * 1024;

/// Buffered line writer for one worker.
pub(crate) struct GnuplotWriter {
    file: File,
    buf: Vec<u8>,
}

impl GnuplotWriter {
    /// Write to a duplicate of `file` (the caller has written the header).
    pub fn new(file: &File) -> io::Result<GnuplotWriter> {
        let file = file.try_clone()?;
        Ok(GnuplotWriter {
            file,
            buf: Vec::with_capacity(FLUSH_AT + 256),
        })
    }

    /// One request: wall-clock start (µs since the epoch) and ab's times in µs.
    pub fn line(&mut self, start_unix_us: u64, ctime: u64, dtime: u64, ttime: u64, wait: u64) {
        let secs = start_unix_us / 1_000_000;
        // Writing into a Vec cannot fail.
        let _ = writeln!(
            self.buf,
            "{}\t{}\t{}\t{}\t{}\t{}",
            ctime_string(secs),
            secs,
            ms(ctime),
            ms(dtime),
            ms(ttime),
            ms(wait)
        );
        if self.buf.len() >= FLUSH_AT {
            let _ = self.flush();
        }
    }

    /// Append buffered lines to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r
    }
}

impl Drop for GnuplotWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// ab rounds to whole milliseconds.
fn ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// `ctime(3)`-style "Sun Nov 29 22:29:57 2026" (UTC).
pub(crate) fn ctime_string(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_like_ctime() {
        assert_eq!(ctime_string(0), "Thu Jan  1 00:00:00 1970");
        // 2026-11-29 22:29:57 UTC was a Sunday.
        assert_eq!(ctime_string(1_795_991_397), "Sun Nov 29 22:29:57 2026");
    }

    #[test]
    fn lines_are_appended_whole() {
        let dir = std::env::temp_dir().join(format!("kurabe-gnuplot-{}", std::process::id()));
        std::fs::write(&dir, HEADER).unwrap();
        {
            let f = File::options().append(true).open(&dir).unwrap();
            let mut w = GnuplotWriter::new(&f).unwrap();
            w.line(1_795_991_397_000_000, 1_400, 2_600, 4_000, 2_000);
        }
        let text = std::fs::read_to_string(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(
            text,
            format!("{HEADER}Sun Nov 29 22:29:57 2026\t1795991397\t1\t3\t4\t2\n")
        );
    }
}
