//! Request sets (`--targets FILE`): vegeta's two targets formats read
//! unchanged, and oha's plain list of URLs.
//!
//! - `http` (vegeta's default): `METHOD URL`, then `Name: value` header
//!   lines and at most one `@body-file` line; a blank line or the next
//!   `METHOD URL` ends a target; `#` lines are comments. kurabe's
//!   annotations are comments too, so vegeta reads the same file:
//!   `# @name checkout`, `# @weight 3`, `# @check status==200` apply to the
//!   target they precede (or, inside a target's lines, to that target).
//! - `json` (vegeta's `-format json`): one object a line with `method`,
//!   `url`, `header` (`{"Name": ["value", …]}`) and base64 `body`, and
//!   kurabe's `name`, `weight` and `checks`.
//! - `urls` (oha's `--urls-from-file`): one URL a line, GET.
//!
//! Owns reading a set as a stream ([`Reader`] holds one target at a time,
//! so a 1 GB file starts at once and costs no memory; [`Reader::offset`]
//! lets a caller index target starts instead of keeping bodies), and the
//! errors, each `FILE:LINE: what was expected`. Must not fetch anything
//! or read body files: a body file is returned as a path (relative to the
//! working directory, as vegeta reads it) for the caller to check.

use std::io::BufRead;
use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;

use crate::header;

/// A targets file's format (`--targets-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// vegeta's `http` format (the default).
    #[default]
    Http,
    /// vegeta's `json` format: one object a line.
    Json,
    /// oha's list: one URL a line.
    Urls,
}

impl Format {
    /// Every format, by its `--targets-format` name.
    pub const ALL: [(&'static str, Format); 3] = [
        ("http", Format::Http),
        ("json", Format::Json),
        ("urls", Format::Urls),
    ];

    /// Parse `http`, `json` or `urls`.
    pub fn parse(name: &str) -> Option<Format> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

/// A request body: a file to read, or the bytes themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// `@path` in the http format.
    File(PathBuf),
    /// base64 `body` in the json format, decoded.
    Inline(Vec<u8>),
}

/// One target of a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetDef {
    /// Upper-case method.
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// Headers in order.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Body>,
    /// Name in reports (`# @name`, `name`); `None`: reported by URL.
    pub name: Option<String>,
    /// Relative weight (`# @weight`, `weight`), at least 1; `None` when
    /// the target gives none (it weighs 1). A set in which any target
    /// gives one is drawn by weight unless an order is given.
    pub weight: Option<u32>,
    /// Response checks of this target (`# @check`, `checks`), unparsed.
    pub checks: Vec<String>,
    /// Line the target starts on, 1-based.
    pub line: u64,
}

impl TargetDef {
    fn new(method: &str, url: &str, line: u64) -> TargetDef {
        TargetDef {
            method: method.to_ascii_uppercase(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: None,
            name: None,
            weight: None,
            checks: Vec::new(),
            line,
        }
    }
}

/// A set that cannot be read: where, and what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum TargetsError {
    /// A line that does not parse.
    #[error("{source_name}:{line}: {problem}")]
    Line {
        /// The file's name as given (`-` is standard input).
        source_name: String,
        /// 1-based line.
        line: u64,
        /// What was expected.
        problem: String,
    },
    /// The file cannot be read.
    #[error("cannot read the targets file {source_name}: {err}")]
    Io {
        /// The file's name as given.
        source_name: String,
        /// Why.
        err: std::io::Error,
    },
}

/// kurabe's annotations waiting for the target they precede.
#[derive(Debug, Default)]
struct Notes {
    name: Option<String>,
    weight: Option<u32>,
    checks: Vec<String>,
}

impl Notes {
    fn apply(self, t: &mut TargetDef) {
        if self.name.is_some() {
            t.name = self.name;
        }
        if self.weight.is_some() {
            t.weight = self.weight;
        }
        t.checks.extend(self.checks);
    }
}

/// Reads a set one target at a time.
pub struct Reader<R> {
    input: R,
    format: Format,
    source_name: String,
    /// Lines read so far.
    line: u64,
    /// Bytes read so far.
    read: u64,
    /// Where the target returned last started, in bytes.
    offset: u64,
    /// A request line read ahead (it ended the previous target): text, line, offset.
    ahead: Option<(String, u64, u64)>,
    buf: Vec<u8>,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `input` in `format`; `source_name` is what errors call it.
    pub fn new(input: R, format: Format, source_name: &str) -> Reader<R> {
        Reader {
            input,
            format,
            source_name: source_name.to_owned(),
            line: 0,
            read: 0,
            offset: 0,
            ahead: None,
            buf: Vec::new(),
        }
    }

    /// A reader of `input` that starts at byte `offset`, line `line` + 1
    /// of its file: a place [`Reader::resume`] gave (an index's mark).
    pub fn at(input: R, format: Format, source_name: &str, offset: u64, line: u64) -> Reader<R> {
        Reader {
            line,
            read: offset,
            offset,
            ..Reader::new(input, format, source_name)
        }
    }

    /// Byte offset where the target returned last starts (for an index of
    /// a large file: seek there and read one target).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the next target's text starts (its annotations included), as
    /// (byte offset, lines before it): a [`Reader::at`] there reads the
    /// targets this one would read next.
    pub fn resume(&self) -> (u64, u64) {
        match &self.ahead {
            Some((_, line, offset)) => (*offset, line - 1),
            None => (self.read, self.line),
        }
    }

    fn fail(&self, line: u64, problem: impl Into<String>) -> TargetsError {
        TargetsError::Line {
            source_name: self.source_name.clone(),
            line,
            problem: problem.into(),
        }
    }

    /// The next line without its end, with its number and offset; `None` at the end.
    fn next_line(&mut self) -> Result<Option<(String, u64, u64)>, TargetsError> {
        if let Some(a) = self.ahead.take() {
            return Ok(Some(a));
        }
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|err| TargetsError::Io {
                source_name: self.source_name.clone(),
                err,
            })?;
        if n == 0 {
            return Ok(None);
        }
        let start = self.read;
        self.read += n as u64;
        self.line += 1;
        let mut bytes = &self.buf[..];
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes)
            .map_err(|_| self.fail(self.line, "invalid UTF-8: targets files are UTF-8 text"))?;
        Ok(Some((text.to_owned(), self.line, start)))
    }

    fn next_http(&mut self) -> Result<Option<TargetDef>, TargetsError> {
        let mut notes = Notes::default();
        let mut target: Option<TargetDef> = None;
        while let Some((text, line, offset)) = self.next_line()? {
            let t = text.trim();
            if let Some(comment) = t.strip_prefix('#') {
                self.annotation(comment.trim(), line, &mut notes)?;
                continue;
            }
            let Some(cur) = target.as_mut() else {
                if t.is_empty() {
                    continue;
                }
                let mut new = self.request_line(t, line)?;
                std::mem::take(&mut notes).apply(&mut new);
                self.offset = offset;
                target = Some(new);
                continue;
            };
            if t.is_empty() {
                break;
            }
            if request_line_shape(t) {
                self.ahead = Some((text, line, offset));
                break;
            }
            self.target_line(t, line, cur)?;
        }
        if let Some(t) = target.as_mut() {
            notes.apply(t);
        }
        Ok(target)
    }

    /// `METHOD URL`.
    fn request_line(&self, t: &str, line: u64) -> Result<TargetDef, TargetsError> {
        let mut words = t.split_whitespace();
        let (Some(method), Some(url), None) = (words.next(), words.next(), words.next()) else {
            return Err(self.fail(
                line,
                format!("'{t}': expected METHOD URL, e.g. GET http://host/path"),
            ));
        };
        if !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(self.fail(
                line,
                format!("'{method}': expected a method such as GET or POST"),
            ));
        }
        self.check_url(url, line)?;
        Ok(TargetDef::new(method, url, line))
    }

    /// A header line or `@body-file` inside a target.
    fn target_line(&self, t: &str, line: u64, cur: &mut TargetDef) -> Result<(), TargetsError> {
        if let Some(path) = t.strip_prefix('@') {
            if cur.body.is_some() {
                return Err(self.fail(line, "a second @body-file: a target has one body"));
            }
            cur.body = Some(Body::File(PathBuf::from(path.trim())));
            return Ok(());
        }
        let Some((name, value)) = t.split_once(':') else {
            return Err(self.fail(
                line,
                format!("'{t}': expected a header (Name: value), @body-file or a blank line"),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        header::check(name, value).map_err(|e| self.fail(line, e.to_string()))?;
        cur.headers.push((name.to_owned(), value.to_owned()));
        Ok(())
    }

    /// `# @name X`, `# @weight N`, `# @check EXPR`; other comments are comments.
    fn annotation(&self, c: &str, line: u64, notes: &mut Notes) -> Result<(), TargetsError> {
        let Some(rest) = c.strip_prefix('@') else {
            return Ok(());
        };
        let (key, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let value = value.trim();
        match key {
            "name" if !value.is_empty() => notes.name = Some(value.to_owned()),
            "weight" => notes.weight = Some(self.weight(value, line)?),
            "check" if !value.is_empty() => notes.checks.push(value.to_owned()),
            "name" | "check" => return Err(self.fail(line, format!("# @{key} needs a value"))),
            _ => {
                return Err(self.fail(
                    line,
                    format!(
                        "unknown annotation '@{key}': kurabe reads # @name, # @weight and # @check"
                    ),
                ))
            }
        }
        Ok(())
    }

    fn weight(&self, v: &str, line: u64) -> Result<u32, TargetsError> {
        v.parse::<u32>()
            .ok()
            .filter(|w| *w >= 1)
            .ok_or_else(|| self.fail(line, format!("weight '{v}': a whole number, at least 1")))
    }

    fn check_url(&self, url: &str, line: u64) -> Result<(), TargetsError> {
        crate::target::Target::parse(url)
            .map(|_| ())
            .map_err(|e| self.fail(line, e.to_string()))
    }

    fn next_json(&mut self) -> Result<Option<TargetDef>, TargetsError> {
        loop {
            let Some((text, line, offset)) = self.next_line()? else {
                return Ok(None);
            };
            if text.trim().is_empty() {
                continue;
            }
            let j: JsonTarget = serde_json::from_str(&text).map_err(|e| {
                self.fail(
                    line,
                    format!("expected one JSON object with method and url: {e}"),
                )
            })?;
            self.offset = offset;
            return self.json_target(j, line).map(Some);
        }
    }

    fn json_target(&self, j: JsonTarget, line: u64) -> Result<TargetDef, TargetsError> {
        let method = j.method.as_deref().unwrap_or("GET");
        if !method.bytes().all(|b| b.is_ascii_alphabetic()) || method.is_empty() {
            return Err(self.fail(line, format!("method '{method}': expected GET, POST, …")));
        }
        self.check_url(&j.url, line)?;
        let mut t = TargetDef::new(method, &j.url, line);
        for (name, values) in j.header {
            for value in values {
                header::check(&name, &value).map_err(|e| self.fail(line, e.to_string()))?;
                t.headers.push((name.clone(), value));
            }
        }
        if let Some(b) = j.body.filter(|b| !b.is_empty()) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map_err(|e| self.fail(line, format!("body: expected base64 ({e})")))?;
            t.body = Some(Body::Inline(bytes));
        }
        t.name = j.name;
        if let Some(w) = j.weight {
            t.weight = Some(self.weight(&w.to_string(), line)?);
        }
        t.checks = j.checks;
        Ok(t)
    }

    fn next_url(&mut self) -> Result<Option<TargetDef>, TargetsError> {
        loop {
            let Some((text, line, offset)) = self.next_line()? else {
                return Ok(None);
            };
            let t = text.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            self.check_url(t, line)?;
            self.offset = offset;
            return Ok(Some(TargetDef::new("GET", t, line)));
        }
    }
}

/// Whether a line inside a target starts the next one (`METHOD http…`).
pub(crate) fn request_line_shape(t: &str) -> bool {
    let mut words = t.split_whitespace();
    matches!(
        (words.next(), words.next()),
        (Some(m), Some(u)) if m.bytes().all(|b| b.is_ascii_uppercase())
            && (u.starts_with("http://") || u.starts_with("https://"))
    )
}

/// One line of vegeta's json format, with kurabe's extra keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    header: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    weight: Option<u64>,
    #[serde(default)]
    checks: Vec<String>,
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<TargetDef, TargetsError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.format {
            Format::Http => self.next_http(),
            Format::Json => self.next_json(),
            Format::Urls => self.next_url(),
        }
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(format: Format, text: &str) -> Result<Vec<TargetDef>, TargetsError> {
        Reader::new(text.as_bytes(), format, "t.txt").collect()
    }

    fn err(format: Format, text: &str) -> String {
        read(format, text).unwrap_err().to_string()
    }

    #[test]
    fn vegetas_http_format_with_kurabes_annotations() {
        let text = "GET http://goku:9090/path/to/dragon?item=ball\n\
                    X-Account-ID: 8675309\n\
                    \n\
                    # @name remove\n\
                    # @weight 3\n\
                    DELETE http://goku:9090/path/to/remove\n\
                    Confirmation-Token: 90215\n\
                    Authorization: Token DEADBEEF\n\
                    POST http://goku:9090/things\r\n\
                    @/path/to/newthing.json\n\
                    # @check status==201\n";
        let t = read(Format::Http, text).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].headers, [("X-Account-ID".into(), "8675309".into())]);
        assert_eq!(
            (t[1].name.as_deref(), t[1].weight, t[1].line),
            (Some("remove"), Some(3), 6)
        );
        assert_eq!(t[1].headers.len(), 2);
        assert_eq!(t[2].method, "POST");
        assert_eq!(t[2].body, Some(Body::File("/path/to/newthing.json".into())));
        assert_eq!(t[2].checks, ["status==201"]);
        assert_eq!(t[0].weight, None);
    }

    #[test]
    fn offsets_point_at_each_targets_first_line() {
        let text = "GET http://h/a\nX: 1\n\nGET http://h/b\nGET http://h/c\n";
        let mut r = Reader::new(text.as_bytes(), Format::Http, "t");
        let mut offsets = vec![];
        while let Some(t) = r.next() {
            t.unwrap();
            offsets.push(r.offset() as usize);
        }
        let starts: Vec<usize> = ["GET http://h/a", "GET http://h/b", "GET http://h/c"]
            .iter()
            .map(|l| text.find(l).unwrap())
            .collect();
        assert_eq!(offsets, starts);
    }

    #[test]
    fn a_reader_resumed_where_another_stopped_reads_the_same_targets() {
        let text =
            "# @name a\nGET http://h/a\nX: 1\n\n# @weight 2\nGET http://h/b\nGET http://h/c\n\n";
        let mut r = Reader::new(text.as_bytes(), Format::Http, "t");
        let all: Vec<TargetDef> = Reader::new(text.as_bytes(), Format::Http, "t")
            .map(Result::unwrap)
            .collect();
        for skip in 0..all.len() {
            let (off, line) = r.resume();
            let rest = &text.as_bytes()[off as usize..];
            let again: Vec<TargetDef> = Reader::at(rest, Format::Http, "t", off, line)
                .map(Result::unwrap)
                .collect();
            assert_eq!(again, all[skip..], "after {skip}");
            r.next().unwrap().unwrap();
        }
    }

    #[test]
    fn vegetas_json_format() {
        let text = r#"{"method":"POST","url":"http://h/x","header":{"X-A":["1","2"]},"body":"aGVsbG8="}
{"url":"http://h/y","name":"why","weight":2}
"#;
        let t = read(Format::Json, text).unwrap();
        assert_eq!(t[0].body, Some(Body::Inline(b"hello".to_vec())));
        assert_eq!(t[0].headers.len(), 2);
        assert_eq!(
            (t[1].method.as_str(), t[1].name.as_deref(), t[1].weight),
            ("GET", Some("why"), Some(2))
        );
    }

    #[test]
    fn ohas_url_list() {
        let t = read(Format::Urls, "http://h/a\n\nhttps://h/b?q=1\n").unwrap();
        assert_eq!(
            t.iter().map(|t| t.url.as_str()).collect::<Vec<_>>(),
            ["http://h/a", "https://h/b?q=1"]
        );
    }

    #[test]
    fn bad_lines_name_the_file_the_line_and_what_was_expected() {
        assert!(err(Format::Http, "GET\n").starts_with("t.txt:1: 'GET': expected METHOD URL"));
        assert!(err(Format::Http, "GET http://h/\nnot a header\n").starts_with("t.txt:2:"));
        assert!(err(Format::Http, "GET ftp://h/\n").contains("invalid URL"));
        assert!(err(Format::Http, "GET http://h/\nX-A: a\0b\n").contains("control character"));
        assert!(err(Format::Http, "# @weight 0\nGET http://h/\n").contains("at least 1"));
        assert!(err(Format::Http, "# @nmae x\n").contains("unknown annotation"));
        assert!(
            err(Format::Json, "{\"url\": 1}\n").starts_with("t.txt:1: expected one JSON object")
        );
        assert!(err(Format::Json, "{\"url\":\"http://h/\",\"body\":\"!!\"}\n").contains("base64"));
        assert!(err(Format::Json, "{\"url\":\"http://h/\",\"bdy\":\"\"}\n").contains("bdy"));
        let bad_utf8: &[u8] = b"GET http://h/\xff\n";
        let e = Reader::new(bad_utf8, Format::Http, "t")
            .next()
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid UTF-8"), "{e}");
        assert!(err(Format::Urls, "http://h/\nhttp://a b/\n").starts_with("t.txt:2:"));
    }
}
