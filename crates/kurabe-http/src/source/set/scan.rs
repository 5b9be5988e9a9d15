//! The fast pass that indexes a large targets file (`weighted`,
//! `random`): where each target starts and what it weighs, found by
//! reading the file in large blocks and splitting lines with `memchr`,
//! without the full parse ([`crate::source::targets::Reader`] allocates, checks
//! URLs, headers and UTF-8 for every line: about 30 s for 1 GB, where
//! this pass takes well under a second from the page cache).
//!
//! It follows the reader's rules for where a target starts and ends (a
//! blank line, or a `METHOD http…` line inside a target; one line a
//! target in `json` and `urls`) and for `# @weight` / `weight`, so its
//! marks are the reader's [`crate::source::targets::Reader::resume`] places. It
//! checks nothing else: a draw parses what it reads, so a line that does
//! not parse ends the run with its `FILE:LINE: …` when a draw reaches it,
//! as the file's order does when the feeder reaches it.
//!
//! Owns the pass. Must not parse targets (the reader does).

use std::io::Read;

use super::index::Index;
use crate::source::targets::{request_line_shape, Format};

/// Bytes read at a time (a longer line grows the buffer).
const BLOCK: usize = 1 << 20;

/// Pieces smaller than this are not split off (a thread would cost
/// more than it saves).
const PIECE_MIN: u64 = 8 << 20;
/// How far past a piece's nominal start a cut is looked for.
const CUT_WINDOW: usize = 1 << 20;

/// The index of what `r` reads, from the file's start.
pub(crate) fn scan(r: impl Read, format: Format) -> std::io::Result<Index> {
    Ok(scan_piece(r, format)?.0.finish())
}

/// The index of the file `f`, its pieces scanned on as many threads as
/// there are CPUs (at most 4): each piece starts where a target surely
/// starts ([`cut_after`]), so its index is the one the whole scan
/// would find there, shifted ([`Index::append`]).
/// Each piece is read by a part of `f` (given up as `f`'s parts are,
/// [`kurabe_input::Shared::stopping_on`], within a block).
pub(crate) fn scan_file(f: &kurabe_input::Shared, format: Format) -> std::io::Result<Index> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let cuts = cuts(f.file(), f.size(), threads as u64, format)?;
    scan_pieces(f, format, &cuts)
}

/// The index of the file `f` scanned in pieces from `cuts` (0, where
/// targets surely start, the file's length), one thread each.
fn scan_pieces(f: &kurabe_input::Shared, format: Format, cuts: &[u64]) -> std::io::Result<Index> {
    let pieces = std::thread::scope(|s| {
        let handles: Vec<_> = cuts
            .windows(2)
            .map(|w| s.spawn(move || scan_piece(f.range(w[0], w[1]), format)))
            .collect();
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        joined
    });
    let (mut ix, mut lines_before) = (Index::new(), 0);
    for (piece, offset) in pieces.into_iter().zip(cuts) {
        let (part, lines) = piece.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        ix.append(part, *offset, lines_before);
        lines_before += lines;
    }
    Ok(ix.finish())
}

/// The index of a piece and its lines.
fn scan_piece(r: impl Read, format: Format) -> std::io::Result<(Index, u64)> {
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
    Ok((s.ix, s.lines))
}

/// The pieces' bounds: 0, the cuts, the file's length (no cut where a
/// piece would be small or no cut is found near its nominal start).
fn cuts(f: &std::fs::File, len: u64, pieces: u64, format: Format) -> std::io::Result<Vec<u64>> {
    let mut cuts = vec![0];
    let step = len / pieces.max(1);
    for k in 1..pieces {
        if step < PIECE_MIN {
            break;
        }
        let mut window = vec![0u8; CUT_WINDOW];
        let n = read_full_at(f, &mut window, k * step)?;
        if let Some(c) = cut_after(&window[..n], format) {
            cuts.push(k * step + c as u64);
        }
    }
    cuts.push(len);
    cuts.dedup();
    Ok(cuts)
}

/// Read at `offset` until `buf` is full or the file ends: bytes read.
fn read_full_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where in `w` (bytes from inside a file, its first line maybe cut) a
/// target surely starts, whatever came before: after a line that ends
/// a target in every state the scan can be in. In `json` a line with
/// text; in `urls` one with text not `#`; in `http` a blank line after
/// a line with text not `#` (that line leaves a target open, the blank
/// line ends it, and no `# @weight` is pending).
fn cut_after(w: &[u8], format: Format) -> Option<usize> {
    let first = memchr::memchr(b'\n', w)? + 1;
    let mut prev_text = false;
    let mut at = first;
    for nl in memchr::memchr_iter(b'\n', &w[first..]) {
        let (line, end) = (w[at..first + nl].trim_ascii(), first + nl + 1);
        let text = line.first().is_some_and(|b| *b != b'#');
        let ends = match format {
            Format::Json => !line.is_empty(),
            Format::Urls => text,
            Format::Http => prev_text && line.is_empty(),
        };
        if ends {
            return Some(end);
        }
        (prev_text, at) = (text, end);
    }
    None
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
        each_newline(&buf[..have], |nl| {
            f(base + at as u64, base + nl as u64 + 1, &buf[at..nl]);
            at = nl + 1;
        });
        buf.copy_within(at..have, 0);
        (base, have) = (base + at as u64, have - at);
        if have == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
    }
}

/// Call `f` with the place of every newline in `b`, in order: 64 bytes
/// at a time as a bit mask (most lines are short: `memchr` a line
/// costs more than the rest of the scan's work on it).
fn each_newline(b: &[u8], mut f: impl FnMut(usize)) {
    let mut chunks = b.chunks_exact(64);
    let mut base = 0;
    for c in &mut chunks {
        let mut m = newline_mask(c);
        while m != 0 {
            f(base + m.trailing_zeros() as usize);
            m &= m - 1;
        }
        base += 64;
    }
    for nl in memchr::memchr_iter(b'\n', chunks.remainder()) {
        f(base + nl);
    }
}

/// Bit `i` set where byte `i` of the 64 in `c` is a newline (eight
/// bytes at a time: a byte of `w` is zero where `c`'s is `\n`, and
/// only there is its high bit left set, gathered into one byte by the
/// multiply).
fn newline_mask(c: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut m = 0u64;
    for (k, word) in c.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ 0x0a0a_0a0a_0a0a_0a0a;
        let zero = !((w & LOW7).wrapping_add(LOW7) | w | LOW7);
        let ones = (zero >> 7) & 0x0101_0101_0101_0101;
        m |= (ones.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (k * 8);
    }
    m
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
    use crate::source::targets::Reader;

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

    /// Every target's start as the reader resumes there: offset, line,
    /// targets and weight before.
    fn starts(text: &str, format: Format) -> Vec<[u64; 4]> {
        let (mut r, mut out, mut w) = (Reader::new(text.as_bytes(), format, "t"), vec![], 0);
        loop {
            let (offset, line) = r.resume();
            let Some(def) = r.next() else {
                return out;
            };
            out.push([offset, line, out.len() as u64, w]);
            w += u64::from(def.unwrap().weight.unwrap_or(1).max(1));
        }
    }

    /// Scanned in pieces cut near every `step`th byte (and near two
    /// such places at once), the index has the whole scan's totals, its
    /// marks are the reader's target starts, the first piece's are the
    /// whole scan's, and no mark is followed by more than `EVERY`
    /// targets without another.
    fn same_in_pieces(text: &str, format: Format, step: usize) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let (whole, targets, weight) = scan(text.as_bytes(), format).unwrap().parts();
        let starts = starts(text, format);
        let shared = kurabe_input::open(f.path(), kurabe_input::Name::new("t"))
            .unwrap()
            .shared();
        let near = |k: usize| cut_after(&text.as_bytes()[k..], format).map(|c| (k + c) as u64);
        let mut cuts: Vec<u64> = (0..text.len()).step_by(step).filter_map(near).collect();
        cuts.dedup();
        for (i, &c) in cuts.iter().enumerate() {
            let later = cuts[i..].iter().find(|&&d| d > c).copied();
            let bounds = [Some(0), Some(c), later, Some(text.len() as u64)];
            let mut bounds: Vec<u64> = bounds.into_iter().flatten().collect();
            bounds.dedup();
            let ix = scan_pieces(&shared, format, &bounds).unwrap();
            let (marks, n, w) = ix.parts();
            assert_eq!((n, w), (targets, weight), "cut at {c}");
            assert!(marks.iter().all(|m| starts.contains(m)), "cut at {c}");
            let before: Vec<_> = whole.iter().filter(|m| m[0] < c).collect();
            assert_eq!(marks.iter().take(before.len()).collect::<Vec<_>>(), before);
            let gaps = marks.windows(2).map(|p| p[1][2] - p[0][2]);
            assert!(gaps
                .chain([n - marks.last().map_or(0, |m| m[2])])
                .all(|g| g <= 64));
        }
    }

    #[test]
    fn the_newlines_are_memchrs() {
        let mut x: u64 = 12345;
        let mut b = vec![0u8; 64 * 300 + 17];
        for v in b.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *v = if x % 3 == 0 { b'\n' } else { (x >> 20) as u8 };
        }
        b[64..128].fill(b'\n');
        b[128..192].fill(0x8a);
        let mut found = vec![];
        each_newline(&b, |i| found.push(i));
        assert_eq!(found, memchr::memchr_iter(b'\n', &b).collect::<Vec<_>>());
    }

    #[test]
    fn a_file_scanned_in_pieces_has_the_whole_scans_targets() {
        let mut http = String::new();
        for i in 0..120 {
            match i % 5 {
                0 => http.push_str(&format!("# @weight {}\nGET http://h/{i}\n\n", 1 + i % 3)),
                1 => http.push_str(&format!("POST http://h/{i}\r\nX: 1\r\n\r\n# @weight 9\n")),
                2 => http.push_str(&format!("\n\n# c\n\nGET http://h/{i}\n  \t\n")),
                3 => http.push_str(&format!(
                    "PUT http://h/{i}\n# @weight 2\nGET http://h/x{i}\n"
                )),
                _ => http.push_str(&format!("GET http://h/{i}\nX: {}\n\n", "b".repeat(i * 9))),
            }
        }
        same_in_pieces(&http, Format::Http, 3);
        let no_blank: String = (0..200).map(|i| format!("GET http://h/{i}\n")).collect();
        same_in_pieces(&no_blank, Format::Http, 7);
        same_in_pieces("GET http://h/a\n\n", Format::Http, 1);
        same_in_pieces("", Format::Http, 1);
        let json: String = (0..150)
            .map(|i| {
                format!(
                    "{{\"url\":\"http://h/{i}\",\"weight\":{}}}\r\n\n",
                    1 + i % 4
                )
            })
            .collect();
        same_in_pieces(&json, Format::Json, 5);
        let urls: String = (0..150).map(|i| format!("# c\nhttp://h/{i}\n\n")).collect();
        same_in_pieces(&urls, Format::Urls, 5);
        same_in_pieces(&urls[..urls.len() - 2], Format::Urls, 5);
    }

    /// A file smaller than a piece is one piece; one large enough is cut
    /// (the cut is where a target starts, checked above).
    #[test]
    fn only_large_files_are_cut() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let t = "GET http://h/a\nX: 1\n\n".repeat(1 << 20);
        std::io::Write::write_all(&mut f, t.as_bytes()).unwrap();
        let len = t.len() as u64;
        let c = cuts(f.as_file(), len, 2, Format::Http).unwrap();
        assert_eq!(c, [0, len / 2 + 21, len]);
        assert_eq!(cuts(f.as_file(), len, 1, Format::Http).unwrap(), [0, len]);
        assert_eq!(cuts(f.as_file(), len, 4, Format::Http).unwrap(), [0, len]);
        let whole = format!("{:?}", scan(t.as_bytes(), Format::Http).unwrap().parts().1);
        let name = kurabe_input::Name::new("t");
        let shared = kurabe_input::open(f.path(), name).unwrap().shared();
        let split = scan_file(&shared, Format::Http).unwrap();
        assert_eq!(format!("{:?}", split.parts().1), whole);
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
