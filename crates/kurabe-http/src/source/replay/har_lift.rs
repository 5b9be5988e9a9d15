//! The reader under a HAR's JSON parser: it follows the JSON's structure
//! as the bytes pass and lifts each `log.entries[].request.postData.text`
//! out of the text, decoding it as it arrives (JSON escapes, then base64
//! while the text is canonical base64, as HAR tools write a binary body,
//! whitespace in it, a line-wrapped base64, noted apart and skipped),
//! so that a body is held once, decoded, and never as its text: serde_json
//! holds a string whole before handing it on, which for the largest body
//! was its base64 and the body again. The parser sees [`PLACEHOLDER`] in
//! the text's place and takes the body from [`take`].
//!
//! Bounds, checked as the bytes arrive: a body over
//! [`crate::request::MAX_BODY_BYTES`] decoded (or, as text that is not
//! base64, over the limit as text) stops the read at once, and its size is
//! then counted to the end of its text without holding it; the strings
//! the parser holds of one entry (method, URL, headers, the other fields
//! of the objects it reads) count toward what a replay holds
//! ([`super::MAX_HELD_BYTES`]); strings the parser skips (responses'
//! contents, timings, anything it does not read) pass unheld and
//! uncounted.
//!
//! Owns the lexing, the lifting and those bounds. Must not parse HAR's
//! fields (har.rs does) nor hold more than one body's text.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::Read;

use base64::Engine as _;

use crate::request::MAX_BODY_BYTES;

/// What the parser sees in place of a lifted text: no HAR tool writes a
/// NUL into a body's text.
pub(super) const PLACEHOLDER: &str = "\u{0}kurabe-lifted-body";
const PLACEHOLDER_JSON: &[u8] = b"\"\\u0000kurabe-lifted-body\"";

/// Characters of one `postData.text` read while it is decoded as base64
/// at most: the base64 of the largest body and a sixteenth more
/// (whitespace around it or line breaks in it, which are noted apart, not
/// held as text). A text that is not base64 is held up to the body's
/// limit.
pub(super) const MAX_TEXT_BYTES: u64 = MAX_BODY_BYTES.div_ceil(3) * 4 + MAX_BODY_BYTES / 16;

/// A lifted text: decoded from base64 when it is canonical base64 (but
/// for whitespace), else as given.
#[derive(Debug)]
pub(super) enum Lifted {
    /// Canonical base64, decoded, and the whitespace that was in it.
    Decoded(Vec<u8>, Spacing),
    /// Anything else, as given (JSON escapes decoded).
    Text(String),
}

/// The whitespace in a base64 text (a line-wrapped body), noted so that
/// the text can be given back exactly when `encoding` turns out not to be
/// base64: per whitespace character, how many base64 characters came
/// since the one before (a LEB128 varint), then the character. Two bytes
/// a line break for a text wrapped at 76.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Spacing {
    bytes: Vec<u8>,
    /// Base64 characters before the last one noted.
    last: u64,
    /// Whitespace characters noted.
    count: u64,
}

impl Spacing {
    /// Whitespace `b` after `at` base64 characters.
    fn push(&mut self, at: u64, b: u8) {
        let mut d = at - self.last;
        self.last = at;
        while d >= 0x80 {
            self.bytes.push((d & 0x7f) as u8 | 0x80);
            d >>= 7;
        }
        self.bytes.push(d as u8);
        self.bytes.push(b);
        self.count += 1;
    }

    /// Whitespace characters in the text.
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// `text`, the base64 characters, with the whitespace put back.
    pub(super) fn put_back(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.count as usize);
        let (mut i, mut at, mut from) = (0, 0u64, 0);
        while i < self.bytes.len() {
            let mut shift = 0;
            loop {
                let b = self.bytes[i];
                i += 1;
                at += u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            let to = usize::try_from(at).unwrap_or(usize::MAX).min(text.len());
            out.push_str(&text[from..to]);
            from = to;
            out.push(char::from(self.bytes[i]));
            i += 1;
        }
        out.push_str(&text[from..]);
        out
    }
}

/// Why the read stopped (the error the parser gets says only that it did).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stopped {
    /// Entry `entry`'s body is over the limit: `size` decoded (or as text).
    BodyTooLarge { entry: u64, size: u64 },
    /// Entry `entry`'s strings pass what a replay holds.
    TooLarge { entry: u64 },
}

thread_local! {
    static LIFTED: RefCell<VecDeque<Lifted>> = const { RefCell::new(VecDeque::new()) };
    static STOPPED: Cell<Option<Stopped>> = const { Cell::new(None) };
}

/// The next lifted text, in file order (the parser meets the
/// placeholders in the order they were lifted).
pub(super) fn take() -> Option<Lifted> {
    LIFTED.with_borrow_mut(VecDeque::pop_front)
}

/// Why the last read stopped, if a bound stopped it (cleared).
pub(super) fn stopped() -> Option<Stopped> {
    STOPPED.take()
}

/// What a container is, by where it is in a HAR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Root,
    Log,
    Entries,
    Entry,
    Request,
    Response,
    PostData,
    Pairs,
    Pair,
    /// Skipped by the parser: its strings are neither held nor counted.
    Free,
}

impl Kind {
    /// The parser holds this object's keys and string values.
    fn held(self) -> bool {
        !matches!(self, Kind::Entries | Kind::Pairs | Kind::Free)
    }

    /// The container opened as the value of `key` in `self` (`object`: an
    /// object, else an array).
    fn child(self, key: &[u8], object: bool) -> Kind {
        match (self, key, object) {
            (Kind::Root, b"log", true) => Kind::Log,
            (Kind::Log, b"entries", false) => Kind::Entries,
            (Kind::Entries, _, true) => Kind::Entry,
            (Kind::Entry, b"request", true) => Kind::Request,
            (Kind::Entry, b"response", true) => Kind::Response,
            (Kind::Request, b"postData", true) => Kind::PostData,
            (Kind::Request, b"headers", false) | (Kind::PostData, b"params", false) => Kind::Pairs,
            (Kind::Pairs, _, true) => Kind::Pair,
            _ => Kind::Free,
        }
    }
}

/// An open object or array.
#[derive(Debug)]
struct Frame {
    kind: Kind,
    object: bool,
    /// The last key read (objects; at most [`KEY`] bytes, escapes kept).
    key: Vec<u8>,
    /// An object expects a key next (else a value).
    expects_key: bool,
}

/// Bytes of a key kept to tell the known ones apart.
const KEY: usize = 16;

/// Where the lexer is.
#[derive(Debug)]
enum Lex {
    /// Between strings.
    Between,
    /// In a string passed on: a key, held (counted), after a backslash.
    Str {
        key: bool,
        held: bool,
        escaped: bool,
    },
    /// In a lifted text.
    Lifting(Box<Lifting>),
}

/// The HAR's bytes as the parser reads them, bodies lifted (see the module).
pub(super) struct Lift<R> {
    inner: R,
    input: Vec<u8>,
    out: Vec<u8>,
    at: usize,
    stack: Vec<Frame>,
    lex: Lex,
    /// Entries begun (the one being read is this, 1-based).
    entry: u64,
    /// Bytes of held strings of this entry (or before the first).
    held: u64,
}

impl<R: Read> Lift<R> {
    /// A lifting reader of `inner`.
    pub(super) fn new(inner: R) -> Lift<R> {
        LIFTED.with_borrow_mut(VecDeque::clear);
        STOPPED.set(None);
        Lift {
            inner,
            input: vec![0; 64 << 10],
            out: Vec::with_capacity(64 << 10),
            at: 0,
            stack: Vec::new(),
            lex: Lex::Between,
            entry: 0,
            held: 0,
        }
    }

    /// Stop with `why` (the parser's error says a bound stopped it).
    fn stop(&self, why: Stopped) -> std::io::Error {
        STOPPED.set(Some(why));
        std::io::Error::other("a bound stopped the read")
    }

    /// Lex `block`, appending what the parser reads to `out`.
    fn lex(&mut self, block: &[u8]) -> std::io::Result<()> {
        let mut i = 0;
        while i < block.len() {
            i += match &mut self.lex {
                Lex::Between => {
                    self.between(block[i]);
                    1
                }
                Lex::Str { .. } => self.string(&block[i..])?,
                Lex::Lifting(l) => {
                    let (used, ended) = l.feed(&block[i..]);
                    if ended {
                        self.lifted()?;
                    }
                    used
                }
            };
        }
        Ok(())
    }

    /// A byte between strings.
    fn between(&mut self, b: u8) {
        self.out.push(b);
        match b {
            b'{' | b'[' => self.open(b == b'{'),
            b'}' | b']' => {
                self.stack.pop();
            }
            b':' => {
                if let Some(f) = self.stack.last_mut() {
                    f.expects_key = false;
                }
            }
            b',' => {
                if let Some(f) = self.stack.last_mut() {
                    f.expects_key = f.object;
                }
            }
            b'"' => self.open_string(),
            _ => {}
        }
    }

    /// A container opens.
    fn open(&mut self, object: bool) {
        let kind = match self.stack.last() {
            None if object => Kind::Root,
            None => Kind::Free,
            Some(f) => f.kind.child(&f.key, object),
        };
        if kind == Kind::Entry {
            self.entry += 1;
            self.held = 0;
        }
        self.stack.push(Frame {
            kind,
            object,
            key: Vec::new(),
            expects_key: object,
        });
    }

    /// A string opens (its quote is in `out`): a key, a value, or a text
    /// to lift.
    fn open_string(&mut self) {
        let (key, held, lift) = match self.stack.last_mut() {
            Some(f) if f.object && f.expects_key => {
                f.key.clear();
                (true, f.kind.held(), false)
            }
            Some(f) => (
                false,
                f.kind.held(),
                f.kind == Kind::PostData && f.key == b"text",
            ),
            None => (false, false, false),
        };
        if lift {
            self.out.pop();
            self.lex = Lex::Lifting(Lifting::start());
        } else {
            self.lex = Lex::Str {
                key,
                held,
                escaped: false,
            };
        }
    }

    /// Bytes in a passed-on string, up to its end; how many were used.
    fn string(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let Lex::Str { key, held, escaped } = &mut self.lex else {
            return Ok(0);
        };
        let mut used = 0;
        let mut ended = false;
        for &b in bytes {
            used += 1;
            if *escaped {
                *escaped = false;
            } else if b == b'\\' {
                *escaped = true;
            } else if b == b'"' {
                ended = true;
                break;
            }
        }
        let run = &bytes[..used];
        self.out.extend_from_slice(run);
        if *key {
            if let Some(f) = self.stack.last_mut() {
                let text = &run[..used - usize::from(ended)];
                let room = (KEY + 1).saturating_sub(f.key.len());
                f.key.extend_from_slice(&text[..text.len().min(room)]);
            }
        }
        if *held {
            self.held += used as u64;
            if self.held > super::MAX_HELD_BYTES {
                return Err(self.stop(Stopped::TooLarge { entry: self.entry }));
            }
        }
        if ended {
            self.lex = Lex::Between;
        }
        Ok(used)
    }

    /// A lifted text ended: queued for the parser, the placeholder in its
    /// place (or the read stopped when it was over the limit).
    fn lifted(&mut self) -> std::io::Result<()> {
        let Lex::Lifting(l) = std::mem::replace(&mut self.lex, Lex::Between) else {
            return Ok(());
        };
        if let Some(size) = l.over() {
            let entry = self.entry;
            return Err(self.stop(Stopped::BodyTooLarge { entry, size }));
        }
        let text = l.finish().map_err(std::io::Error::other)?;
        LIFTED.with_borrow_mut(|q| q.push_back(text));
        self.out.extend_from_slice(PLACEHOLDER_JSON);
        Ok(())
    }
}

impl<R: Read> Read for Lift<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            self.out.clear();
            self.at = 0;
            let n = match self.inner.read(&mut self.input) {
                Ok(0) => return Ok(0),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let block = std::mem::take(&mut self.input);
            let lexed = self.lex(&block[..n]);
            self.input = block;
            lexed?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Base64 characters decoded a batch at a time.
const BATCH: usize = 64 << 10;

/// A text being lifted: its JSON escapes decoded as they come, then
/// decoded from base64 while it is canonical base64 (its whitespace
/// noted apart), else kept as text.
#[derive(Debug, Default)]
struct Lifting {
    /// An escape sequence begun (`\`, `\u12`, …) not yet decoded.
    esc: Vec<u8>,
    /// Decoded so far while the text is still base64 (`None`: it is not).
    decoded: Option<Vec<u8>>,
    /// Base64 characters not yet decoded (the last group is kept back:
    /// only the text's last may be padded), or the text as text.
    pending: Vec<u8>,
    /// The whitespace among the base64 characters while decoded.
    spacing: Spacing,
    /// Characters of the text (escapes decoded).
    chars: u64,
    /// Of them, not whitespace.
    solid: u64,
    /// Every character is of base64's alphabet or whitespace.
    alphabet: bool,
    /// Trailing `=` seen (whitespace after them aside).
    pad: u64,
    /// Over the limit: the rest is counted, not held.
    counting: bool,
}

impl Lifting {
    /// A text begun: base64 until a character says otherwise.
    fn start() -> Box<Lifting> {
        Box::new(Lifting {
            decoded: Some(Vec::new()),
            alphabet: true,
            ..Lifting::default()
        })
    }

    /// Take bytes of the JSON string up to its closing quote; how many
    /// were used and whether it ended.
    fn feed(&mut self, bytes: &[u8]) -> (usize, bool) {
        let mut used = 0;
        while used < bytes.len() {
            if !self.esc.is_empty() {
                let b = bytes[used];
                if self.lone_surrogate(b) {
                    // Decoded alone (as a replacement); `b` is read anew.
                    self.flush_escape();
                    continue;
                }
                used += 1;
                self.esc.push(b);
                if self.escape_complete() {
                    self.flush_escape();
                }
                continue;
            }
            let rest = &bytes[used..];
            let stop = rest.iter().position(|&b| b == b'"' || b == b'\\');
            let run = &rest[..stop.unwrap_or(rest.len())];
            self.chars_in(run);
            used += run.len();
            match stop.map(|i| rest[i]) {
                Some(b'"') => return (used + 1, true),
                Some(_) => {
                    self.esc.push(b'\\');
                    used += 1;
                }
                None => {}
            }
        }
        (used, false)
    }

    /// The escape collected is `\uD8xx` (a high surrogate) and `b` does
    /// not begin its low half.
    fn lone_surrogate(&self, b: u8) -> bool {
        self.esc.len() == 6
            && self.esc[1] == b'u'
            && is_high_surrogate(&self.esc[2..6])
            && b != b'\\'
    }

    /// The escape collected is whole: `\n`, `\u00e9`, `\ud83d\ude00`.
    fn escape_complete(&self) -> bool {
        let long = self.esc[1] == b'u';
        match self.esc.len() {
            2 => !long,
            6 => !is_high_surrogate(&self.esc[2..6]),
            n => n >= 12,
        }
    }

    /// Decode the escape sequence collected, as JSON does.
    fn flush_escape(&mut self) {
        let mut quoted = Vec::with_capacity(self.esc.len() + 2);
        quoted.push(b'"');
        quoted.append(&mut self.esc);
        quoted.push(b'"');
        let text = serde_json::from_slice::<String>(&quoted).unwrap_or_else(|_| "\u{fffd}".into());
        self.chars_in(text.as_bytes());
    }

    /// Characters of the text, escapes decoded.
    fn chars_in(&mut self, run: &[u8]) {
        if run.is_empty() {
            return;
        }
        let before = self.solid;
        self.count_in(run);
        if self.counting {
            return;
        }
        if self.decoded.is_some() && self.alphabet {
            self.base64_in(run, before);
        } else {
            self.as_text();
            self.pending.extend_from_slice(run);
        }
        if self.decoded.is_some() && self.pending.len() >= BATCH + 4 {
            self.decode_batch();
        }
        if self.over().is_some() {
            self.counting = true;
            self.pending = Vec::new();
            self.spacing = Spacing::default();
            self.decoded = None;
        }
    }

    /// Count `run`'s characters: all, not whitespace, trailing `=`, and
    /// whether all are of base64's alphabet or whitespace.
    fn count_in(&mut self, run: &[u8]) {
        let spaces = run.iter().filter(|&&b| is_space(b)).count();
        self.chars += run.len() as u64;
        self.solid += (run.len() - spaces) as u64;
        let solid = run.iter().rposition(|&b| !is_space(b));
        if let Some(last) = solid {
            let trailing = run[..=last]
                .iter()
                .rev()
                .take_while(|&&b| b == b'=')
                .count();
            self.pad = if trailing == last + 1 {
                self.pad + trailing as u64
            } else {
                trailing as u64
            };
        }
        if self.alphabet {
            self.alphabet = run
                .iter()
                .all(|&b| is_base64(b) || b == b'=' || is_space(b));
        }
    }

    /// Base64 characters to decode, whitespace among them noted apart
    /// (`before`: base64 characters before `run`).
    fn base64_in(&mut self, run: &[u8], before: u64) {
        if !run.iter().any(|&b| is_space(b)) {
            self.pending.extend_from_slice(run);
            return;
        }
        let mut at = before;
        for &b in run {
            if is_space(b) {
                self.spacing.push(at, b);
            } else {
                self.pending.push(b);
                at += 1;
            }
        }
    }

    /// Decode the pending base64 but its last group (which may be padded).
    fn decode_batch(&mut self) {
        let n = (self.pending.len() - 1) / 4 * 4;
        let Some(out) = self.decoded.as_mut() else {
            return;
        };
        let engine = &base64::engine::general_purpose::STANDARD;
        if engine.decode_vec(&self.pending[..n], out).is_ok() {
            self.pending.drain(..n);
        } else {
            self.as_text();
        }
    }

    /// The text is not canonical base64: kept as text from now on (what
    /// was decoded is encoded back, exactly: the decoding was canonical;
    /// its whitespace put back).
    fn as_text(&mut self) {
        if let Some(decoded) = self.decoded.take() {
            let mut text = base64::engine::general_purpose::STANDARD.encode(decoded);
            text.push_str(std::str::from_utf8(&self.pending).unwrap_or_default());
            let spacing = std::mem::take(&mut self.spacing);
            self.pending = spacing.put_back(&text).into_bytes();
        }
    }

    /// Its size when it is over the limit, for the message: decoded
    /// (as base64 when it reads as base64), else as text.
    fn over(&self) -> Option<u64> {
        let as_base64 = self.alphabet && self.solid % 4 == 0;
        let size = match as_base64 {
            true => (self.solid / 4 * 3).saturating_sub(self.pad),
            false => self.chars,
        };
        // While it is decoded, its whitespace is not held: up to the
        // text's bound; as text, up to the body's.
        let limit = match self.decoded.is_some() {
            true => MAX_TEXT_BYTES,
            false => MAX_BODY_BYTES,
        };
        let decoded = self.decoded.as_ref().map_or(0, Vec::len) as u64;
        let over = self.counting || decoded > MAX_BODY_BYTES || self.chars > limit;
        over.then_some(size.max(decoded))
    }

    /// The text, decoded from base64 when it is canonical base64.
    fn finish(mut self) -> Result<Lifted, String> {
        let canonical = self.decoded.is_some() && self.solid >= 4 && self.pending.len() % 4 == 0;
        if canonical {
            let mut out = self.decoded.take().unwrap_or_default();
            let engine = &base64::engine::general_purpose::STANDARD;
            if engine.decode_vec(&self.pending, &mut out).is_ok() {
                return Ok(Lifted::Decoded(out, self.spacing));
            }
            self.decoded = Some(out);
        }
        self.as_text();
        String::from_utf8(self.pending)
            .map(Lifted::Text)
            .map_err(|_| "a request body's text is not UTF-8".to_owned())
    }
}

/// Whitespace a base64 text may have (line breaks, spaces around it).
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

/// `hex` (four hex digits) is a UTF-16 high surrogate.
fn is_high_surrogate(hex: &[u8]) -> bool {
    std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .is_some_and(|u| (0xD800..0xDC00).contains(&u))
}
