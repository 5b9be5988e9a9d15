//! ab's `-g` tap: one line per request, streamed to the caller's file.
//!
//! Each worker owns a [`GnuplotWriter`] that buffers whole lines and writes
//! them with one `write` on its duplicate of the caller's descriptor; the
//! kernel moves the shared offset under a lock for the whole call, so lines
//! from different workers never interleave in a file and memory stays
//! bounded.
//!
//! Owns the buffering and the writes. Must not compose the lines: the
//! caller's [`GnuplotFile`] brings its header and line (kurabe-report's
//! `ab_gnuplot`), the engine hands over each request's [`RequestTimes`].

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use kurabe_model::load_stats::RequestTimes;

const FLUSH_AT: usize = 60 * 1024;

/// The `-g` destination, opened by the caller (who decides where the bytes
/// land: a temp file renamed into place afterwards, or a FIFO), and what
/// is written there.
#[derive(Debug, Clone)]
pub struct GnuplotFile {
    /// The name the user gave, for messages.
    pub path: PathBuf,
    /// The open file; each worker writes whole lines to its own duplicate.
    pub file: std::sync::Arc<File>,
    /// Written first, before any worker writes a line.
    pub header: &'static str,
    /// Appends one request's line to the buffer.
    pub line: fn(&mut Vec<u8>, &RequestTimes),
}

/// Buffered line writer for one worker.
pub(crate) struct GnuplotWriter {
    file: File,
    line: fn(&mut Vec<u8>, &RequestTimes),
    buf: Vec<u8>,
}

impl GnuplotWriter {
    /// Write to a duplicate of `g`'s file (the header is written already).
    pub fn new(g: &GnuplotFile) -> io::Result<GnuplotWriter> {
        let file = g.file.try_clone()?;
        Ok(GnuplotWriter {
            file,
            line: g.line,
            buf: Vec::with_capacity(FLUSH_AT + 256),
        })
    }

    /// One request: wall-clock start (µs since the epoch) and ab's times in µs.
    pub fn line(&mut self, start_unix_us: u64, ctime: u64, dtime: u64, ttime: u64, wait: u64) {
        let times = RequestTimes {
            start_unix_us,
            connect_us: ctime,
            processing_us: dtime,
            total_us: ttime,
            wait_us: wait,
        };
        (self.line)(&mut self.buf, &times);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of the request's total time only.
    fn total(out: &mut Vec<u8>, t: &RequestTimes) {
        let _ = writeln!(out, "{}", t.total_us);
    }

    #[test]
    fn lines_are_appended_whole() {
        let dir = std::env::temp_dir().join(format!("kurabe-gnuplot-{}", std::process::id()));
        std::fs::write(&dir, "head\n").unwrap();
        {
            let f = File::options().append(true).open(&dir).unwrap();
            let g = GnuplotFile {
                path: dir.clone(),
                file: std::sync::Arc::new(f),
                header: "head\n",
                line: total,
            };
            let mut w = GnuplotWriter::new(&g).unwrap();
            w.line(1_795_991_397_000_000, 1_400, 2_600, 4_000, 2_000);
            w.line(1_795_991_397_000_000, 1_400, 2_600, 5_000, 2_000);
        }
        let text = std::fs::read_to_string(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(text, "head\n4000\n5000\n");
    }
}
