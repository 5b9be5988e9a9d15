//! The fast pass that indexes a large targets file (`weighted`,
//! `random`): where each target starts and what it weighs, found by
//! reading the file in large blocks and splitting lines with `memchr`,
//! without the full parse ([`crate::targets::Reader`] allocates, checks
//! URLs, headers and UTF-8 for every line: about 30 s for 1 GB, where
//! this pass takes well under a second from the page cache).
//!
//! It follows the reader's rules for where a target starts and ends (a
//! blank line, or a `METHOD http…` line inside a target; one line a
//! target in `json` and `urls`) and for `# @weight` / `weight`, so its
//! marks are the reader's [`crate::targets::Reader::resume`] places. It
//! checks nothing else: a draw parses what it reads, so a line that does
//! not parse ends the run with its `FILE:LINE: …` when a draw reaches it,
//! as the file's order does when the feeder reaches it.
//!
//! Owns the pass. Must not parse targets (the reader does).

use std::io::Read;

use super::index::Index;
use crate::targets::{request_line_shape, Format};

/// Bytes read at a time (a longer line grows the buffer).
const BLOCK: usize = 1 << 20;

/// The index of what `r` reads, from the file's start.
pub(crate) fn scan(r: impl Read, format: Format) -> std::io::Result<Index> {
    let mut s = Scan {
        ix: Index::new(),
        format,
        lines: 0,
        start: (0, 0),
        inside: false,
        weight: None,
        json_weight: memchr::memmem::Finder::new(b"weight"),
    };
    lines(r, |offset, end, line| s.line(offset, end, line))?;
    if s.inside {
        s.end_target();
    }
    Ok(s.ix.finish())
}

/// Call `f(offset, end, line)` for every line `r` reads: its start and
/// end offsets (its newline included) and its bytes without the newline.
fn lines(mut r: impl Read, mut f: impl FnMut(u64, u64, &[u8])) -> std::io::Result<()> {
    let mut buf = vec![0u8; BLOCK];
    let (mut have, mut base) = (0usize, 0u64);
    loop {
        let n = match r.read(&mut buf[have..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if have > 0 {
                f(base, base + have as u64, &buf[..have]);
            }
            return Ok(());
        }
        have += n;
        let mut at = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..have]) {
            f(base + at as u64, base + nl as u64 + 1, &buf[at..nl]);
            at = nl + 1;
        }
        buf.copy_within(at..have, 0);
        (base, have) = (base + at as u64, have - at);
        if have == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
    }
}

/// The pass's state.
struct Scan {
    ix: Index,
    format: Format,
    /// Lines seen.
    lines: u64,
    /// Where the target being read (or the next) starts: offset, lines before.
    start: (u64, u64),
    /// A target's lines are being read (`http`).
    inside: bool,
    /// Its last `# @weight`.
    weight: Option<u32>,
    json_weight: memchr::memmem::Finder<'static>,
}

impl Scan {
    fn line(&mut self, offset: u64, end: u64, line: &[u8]) {
        self.lines += 1;
        // `trim_ascii` takes a line's CR with the rest of its white space.
        match self.format {
            Format::Http => self.http_fast(offset, end, line),
            Format::Json => {
                let t = line.trim_ascii();
                if !t.is_empty() {
                    let w = self.json(t);
                    self.one_line_target(end, w);
                }
            }
            Format::Urls => {
                if line.trim_ascii().first().is_some_and(|b| *b != b'#') {
                    self.one_line_target(end, 1);
                }
            }
        }
    }

    /// A line of the `http` format: the common shapes judged by their
    /// first byte, the rest trimmed.
    fn http_fast(&mut self, offset: u64, end: u64, line: &[u8]) {
        match line.first() {
            Some(b) if b.is_ascii_whitespace() => {}
            Some(b'#') | None => {}
            Some(_) if !self.inside => {
                self.inside = true;
                return;
            }
            Some(b) if !b.is_ascii_uppercase() => return,
            Some(_) => {}
        }
        self.http(offset, end, line.trim_ascii());
    }

    /// A target that is one line (`json`, `urls`): the next starts after it.
    fn one_line_target(&mut self, end: u64, weight: u32) {
        self.ix.add(self.start.0, self.start.1, weight);
        self.start = (end, self.lines);
    }

    /// A line of the `http` format, trimmed.
    fn http(&mut self, offset: u64, end: u64, t: &[u8]) {
        if let Some(comment) = t.strip_prefix(b"#") {
            self.note(comment.trim_ascii());
        } else if !self.inside {
            self.inside = !t.is_empty();
        } else if t.is_empty() {
            self.end_target();
            self.start = (end, self.lines);
        } else if starts_target(t) {
            self.end_target();
            self.start = (offset, self.lines - 1);
            self.inside = true;
        }
    }

    fn end_target(&mut self) {
        let w = self.weight.take().unwrap_or(1);
        self.ix.add(self.start.0, self.start.1, w);
        self.inside = false;
    }

    /// `@weight N` (the last one of a target counts, as the reader's).
    fn note(&mut self, c: &[u8]) {
        let Some(rest) = c.strip_prefix(b"@weight") else {
            return;
        };
        if rest.first().is_none_or(u8::is_ascii_whitespace) {
            let w = std::str::from_utf8(rest.trim_ascii()).ok();
            self.weight = Some(w.and_then(|w| w.parse().ok()).unwrap_or(1));
        }
    }

    /// A `json` line's `weight` (1 when it has none or it does not parse:
    /// the draw that reads it says why).
    fn json(&self, t: &[u8]) -> u32 {
        if self.json_weight.find(t).is_none() {
            return 1;
        }
        serde_json::from_slice::<serde_json::Value>(t)
            .ok()
            .and_then(|v| v.get("weight")?.as_u64())
            .and_then(|w| u32::try_from(w).ok())
            .unwrap_or(1)
    }
}

/// A line inside a target that starts the next one (`METHOD http…`),
/// judged by its bytes (header lines are most lines); a method with a
/// byte the bytes cannot judge (non-ASCII, a vertical tab) by the
/// reader's own rule.
fn starts_target(t: &[u8]) -> bool {
    let mut gap = None;
    for (i, &b) in t.iter().enumerate() {
        if b.is_ascii_uppercase() {
            continue;
        }
        if b >= 0x80 || b == 0x0b {
            return std::str::from_utf8(t).is_ok_and(request_line_shape);
        }
        gap = Some(i).filter(|_| b.is_ascii_whitespace());
        break;
    }
    let Some(gap) = gap else {
        return false;
    };
    let url = t[gap..].trim_ascii_start();
    url.starts_with(b"http://") || url.starts_with(b"https://")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::Reader;

    /// The scan's index is the parse's, in every format, read in blocks
    /// smaller than a line or not.
    fn same(text: &str, format: Format) {
        let parsed = Index::build(Reader::new(text.as_bytes(), format, "t")).unwrap();
        let scanned = scan(text.as_bytes(), format).unwrap();
        assert_eq!(format!("{scanned:?}"), format!("{parsed:?}"), "{text}");
        let trickle = scan(OneByte(text.as_bytes()), format).unwrap();
        assert_eq!(format!("{trickle:?}"), format!("{parsed:?}"));
    }

    /// A reader giving one byte a read.
    struct OneByte<'a>(&'a [u8]);

    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *b;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn the_scan_finds_the_readers_targets_and_weights() {
        let mut http = String::from("# lead\n\n\n");
        for i in 0..300 {
            let w = 1 + i % 5;
            match i % 4 {
                0 => http.push_str(&format!("# @weight {w}\nGET http://h/{i}\nX: 1\n\n")),
                1 => http.push_str(&format!("POST http://h/{i}\r\n# @weight {w}\n@b\n")),
                2 => http.push_str(&format!("\n  # @name n\nDELETE http://h/{i}\n\n\n")),
                _ => http.push_str(&format!(
                    "GET http://h/{i}\nHOST: h\nx-low: {}\n   PUT http://h/in{i}\r\n\r\n",
                    "p".repeat(i * 20)
                )),
            }
        }
        same(&http, Format::Http);
        same("GET http://h/a\nGET http://h/b\n# @weight 4", Format::Http);
        let json: String = (0..200)
            .map(|i| match i % 3 {
                0 => format!("{{\"url\":\"http://h/{i}\",\"weight\":{}}}\n\n", 1 + i % 7),
                1 => format!("{{\"url\":\"http://h/weight{i}\"}}\r\n"),
                _ => format!(
                    "{{\"url\":\"http://h/{i}\",\"body\":\"{}\"}}\n",
                    "QUFB".repeat(i)
                ),
            })
            .collect();
        same(&json, Format::Json);
        let urls: String = (0..500)
            .map(|i| format!("# c\nhttp://h/{i}\n\n  http://h/x{i}  \n"))
            .collect();
        same(&urls, Format::Urls);
        same(&urls[..urls.len() - 1], Format::Urls);
    }
}
