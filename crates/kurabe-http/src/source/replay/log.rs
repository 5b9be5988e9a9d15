//! Access logs read one line at a time into [`Recorded`] requests.
//!
//! What a line gives: the method and target from `$request`
//! (`GET /p?q HTTP/1.1`) or from `$request_method` with `$request_uri`;
//! the start time from `$msec` (millisecond precision, best),
//! `$time_iso8601` or `$time_local` (whole seconds), less
//! `$request_time` when the format has it (nginx writes its times when
//! a request ends); the status from `$status`; a body from
//! `$request_body` (nginx's `\xHH` escapes undone) with `$content_type`
//! as its `Content-Type`. A POST, PUT or PATCH in a format without
//! `$request_body` is skipped as [`Skip::NoBody`], not sent empty.
//!
//! Owns the meaning of a line's values. Must not hold the file: memory
//! grows with the requests kept, not with the lines read; a line longer
//! than [`MAX_LINE_BYTES`] is skipped as malformed without being held.

use std::io::{BufRead, Read};

use super::format::LogFormat;
use super::{origin_form, sendable, time, wants_body, Recorded, Recording, Skip};

/// A log that cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The format lacks what replay needs.
    #[error("--log-format '{format}': {problem}")]
    Format {
        /// The format's name or text.
        format: String,
        /// What it lacks.
        problem: String,
    },
    /// The log's requests pass what a replay holds
    /// ([`super::MAX_HELD_BYTES`]).
    #[error("{}", super::too_large(.source_name, "line", *.line))]
    TooLarge {
        /// The file as given.
        source_name: String,
        /// The line whose request passed the limit.
        line: u64,
    },
    /// Reading failed.
    #[error("cannot read the log {source_name}: {err}")]
    Io {
        /// The file as given.
        source_name: String,
        /// Why.
        err: std::io::Error,
    },
}

/// Which formats a line may be in.
#[derive(Debug, Clone)]
pub struct Formats {
    formats: Vec<LogFormat>,
}

impl Formats {
    /// `combined`, then `common`, for each line (the default).
    pub fn auto() -> Formats {
        Formats {
            formats: ["combined", "common"]
                .iter()
                .map(|f| LogFormat::parse(f).expect("built-in formats compile"))
                .collect(),
        }
    }

    /// One format, checked for what replay needs.
    pub fn one(f: LogFormat) -> Result<Formats, LogError> {
        let fail = |problem: &str| LogError::Format {
            format: f.name.clone(),
            problem: problem.to_owned(),
        };
        if !(f.has("request") || (f.has("request_method") && f.has("request_uri"))) {
            return Err(fail("replay needs the method and the path: add $request, or $request_method with $request_uri"));
        }
        if !["msec", "time_local", "time_iso8601"]
            .iter()
            .any(|v| f.has(v))
        {
            return Err(fail(
                "replay needs when each request came: add $msec (best), $time_iso8601 or $time_local",
            ));
        }
        Ok(Formats { formats: vec![f] })
    }

    /// What messages call the formats.
    pub fn name(&self) -> String {
        match self.formats.as_slice() {
            [one] => one.name.clone(),
            _ => "combined or common".to_owned(),
        }
    }
}

/// The longest line read (a request body can be logged, and a body is
/// at most [`crate::request::MAX_BODY_BYTES`]).
pub const MAX_LINE_BYTES: u64 = crate::request::MAX_BODY_BYTES;

/// Read every line of `input` (`source_name` for messages) in `formats`.
pub fn read<R: BufRead>(
    mut input: R,
    source_name: &str,
    formats: &Formats,
) -> Result<Recording, LogError> {
    let mut rec = Recording::new("line");
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let (n, whole) = next_line(&mut input, &mut buf).map_err(|err| LogError::Io {
            source_name: source_name.to_owned(),
            err,
        })?;
        if n == 0 {
            break;
        }
        line += 1;
        if !whole {
            rec.tally.read += 1;
            let excerpt = String::from_utf8_lossy(&buf[..60]);
            rec.tally.skip(Skip::Malformed, line, &excerpt);
            continue;
        }
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        rec.tally.read += 1;
        let text = String::from_utf8_lossy(bytes);
        match parse_line(&text, line, formats) {
            Ok(r) => rec.keep(r).map_err(|full| LogError::TooLarge {
                source_name: source_name.to_owned(),
                line: full.place,
            })?,
            Err(why) => rec.tally.skip(why, line, &text),
        }
    }
    Ok(rec.finish())
}

/// The next line of `input` into `buf`, at most [`MAX_LINE_BYTES`] of
/// it: the bytes it took, and whether it is whole (a longer one is read
/// past, not held).
fn next_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let n = (&mut *input)
        .take(MAX_LINE_BYTES + 1)
        .read_until(b'\n', buf)?;
    if n as u64 > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
        return Ok((n + input.skip_until(b'\n')?, false));
    }
    Ok((n, true))
}

/// One line: a request, or why it is skipped.
pub fn parse_line(text: &str, place: u64, formats: &Formats) -> Result<Recorded, Skip> {
    let mut best = Err(Skip::OtherFormat);
    for f in &formats.formats {
        let Some(values) = f.split(text) else {
            continue;
        };
        let v = Values(values);
        if !v.numbers_are_numbers() {
            continue;
        }
        best = request(&v, place);
        if best.is_ok() {
            break;
        }
    }
    best
}

/// A line's variable values.
struct Values<'f, 'l>(Vec<(&'f str, &'l str)>);

impl Values<'_, '_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    /// Values nginx writes as numbers are numbers (or `-`): a line in a
    /// longer format does not pass for a shorter one whose last field took
    /// the rest.
    fn numbers_are_numbers(&self) -> bool {
        self.0.iter().all(|(k, v)| match *k {
            "status" => v.len() == 3 && v.bytes().all(|b| b.is_ascii_digit()),
            "body_bytes_sent" | "bytes_sent" | "request_length" => {
                *v == "-" || v.bytes().all(|b| b.is_ascii_digit())
            }
            "msec" | "request_time" => *v == "-" || time::seconds_us(v).is_some(),
            _ => true,
        })
    }
}

fn request(v: &Values<'_, '_>, place: u64) -> Result<Recorded, Skip> {
    let (method, raw_target) = match v.get("request") {
        Some(line) => request_line(line)?,
        None => (
            v.get("request_method").unwrap_or("").to_owned(),
            v.get("request_uri").unwrap_or("").to_owned(),
        ),
    };
    if method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'-' || b == b'_')
    {
        return Err(Skip::Malformed);
    }
    if method == "CONNECT" {
        return Err(Skip::Connect);
    }
    let target = origin_form(&raw_target)
        .filter(|t| sendable(t))
        .ok_or(Skip::Malformed)?;
    let at_us = started(v).ok_or(Skip::OtherFormat)?;
    let mut headers = Vec::new();
    let body = match v.get("request_body") {
        Some(b) if wants_body(&method) || b != "-" => {
            let ct = v
                .get("content_type")
                .or_else(|| v.get("http_content_type"))
                .filter(|c| *c != "-" && crate::header::check("Content-Type", c).is_ok());
            if let Some(ct) = ct {
                headers.push(("Content-Type".to_owned(), ct.to_owned()));
            }
            Some(if b == "-" { Vec::new() } else { unescape(b) }.into())
        }
        Some(_) => None,
        None if wants_body(&method) => return Err(Skip::NoBody),
        None => None,
    };
    Ok(Recorded {
        place,
        at_us,
        method,
        target,
        headers,
        body,
        status: v.get("status").and_then(|s| s.parse().ok()),
    })
}

/// `METHOD TARGET HTTP/x` (or HTTP/0.9's `GET /`), escapes undone.
fn request_line(line: &str) -> Result<(String, String), Skip> {
    let bytes = unescape(line);
    let line = String::from_utf8(bytes).map_err(|_| Skip::Malformed)?;
    let mut words = line.split(' ');
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some(m), Some(t), None, None) => Ok((m.to_owned(), t.to_owned())),
        (Some(m), Some(t), Some(p), None) if p.starts_with("HTTP/") => {
            Ok((m.to_owned(), t.to_owned()))
        }
        _ => Err(Skip::Malformed),
    }
}

/// When the request started, in µs since the epoch.
fn started(v: &Values<'_, '_>) -> Option<i64> {
    let logged = if let Some(m) = v.get("msec") {
        time::msec(m)?
    } else if let Some(t) = v.get("time_iso8601") {
        time::iso8601(t)?
    } else {
        time::clf(v.get("time_local")?)?
    };
    let took = v
        .get("request_time")
        .and_then(time::seconds_us)
        .unwrap_or(0);
    Some(logged - took)
}

/// nginx's `\xHH` and Apache's `\"`, `\\` escapes undone.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            match b[i + 1] {
                b'x' => {
                    if let (Some(h), Some(l)) = (
                        b.get(i + 2).and_then(|&c| hex(c)),
                        b.get(i + 3).and_then(|&c| hex(c)),
                    ) {
                        out.push((h * 16 + l) as u8);
                        i += 4;
                        continue;
                    }
                }
                c @ (b'"' | b'\\') => {
                    out.push(c);
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NGINX: &str = r#"127.0.0.1 - - [02/Dec/2026:04:30:01 +0000] "GET /a?b=1 HTTP/1.1" 200 612 "-" "curl/8.5"
127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] "GET http://elsewhere.example/b HTTP/1.1" 404 0 "-" "-"

10.0.0.1 - frank [02/Dec/2026:04:30:02 +0000] "HEAD /c HTTP/1.0" 200 0
127.0.0.1 - - [02/Dec/2026:04:30:03 +0000] "POST /form HTTP/1.1" 302 0 "-" "-"
127.0.0.1 - - [02/Dec/2026:04:30:03 +0000] "CONNECT h:443 HTTP/1.1" 400 0 "-" "-"
127.0.0.1 - - [02/Dec/2026:04:30:03 +0000] "\x16\x03\x01\x00\xF4\x01" 400 157 "-" "-"
127.0.0.1 - - [02/Dec/2026:04:30:03 +0000] "-" 400 0 "-" "-"
Dec  2 04:30:03 host sshd[1]: not an access log
"#;

    fn read_str(text: &str, f: &Formats) -> Recording {
        read(text.as_bytes(), "access.log", f).unwrap()
    }

    #[test]
    fn combined_and_common_lines_become_requests_in_time_order() {
        let r = read_str(NGINX, &Formats::auto());
        let got: Vec<(u64, &str, &str, Option<u16>)> = r
            .requests
            .iter()
            .map(|r| (r.place, r.method.as_str(), r.target.as_str(), r.status))
            .collect();
        assert_eq!(
            got,
            [
                (2, "GET", "/b", Some(404)),
                (1, "GET", "/a?b=1", Some(200)),
                (4, "HEAD", "/c", Some(200)),
            ]
        );
        assert_eq!(r.requests[1].at_us - r.requests[0].at_us, 1_000_000);
        assert_eq!(r.duration_us(), 2_000_000);
        assert_eq!(r.tally.read, 8, "the blank line is not counted");
        assert_eq!(r.tally.count(Skip::NoBody), 1);
        assert_eq!(r.tally.count(Skip::Connect), 1);
        assert_eq!(r.tally.count(Skip::Malformed), 2);
        assert_eq!(r.tally.count(Skip::OtherFormat), 1);
        let listed = &r
            .tally
            .skipped
            .iter()
            .find(|s| s.reason == Skip::NoBody)
            .unwrap()
            .first;
        assert_eq!(listed[0].0, 5);
        assert!(listed[0].1.contains("POST /form"));
    }

    #[test]
    fn msec_request_time_and_request_body_in_a_custom_format() {
        let f = LogFormat::parse(
            r#"$msec $request_time "$request" $status "$content_type" "$request_body""#,
        )
        .unwrap();
        let f = Formats::one(f).unwrap();
        let text = concat!(
            "1764649800.250 0.050 \"POST /api HTTP/1.1\" 201 \"application/json\" \"{\\x22a\\x22:1}\"\n",
            "1764649800.300 0.000 \"PUT /empty HTTP/1.1\" 204 \"-\" \"-\"\n",
            "1764649800.400 0.000 \"GET /g HTTP/1.1\" 200 \"-\" \"-\"\n",
        );
        let r = read_str(text, &f);
        assert_eq!(r.tally.total(), 0, "{:?}", r.tally);
        let [post, put, get] = &r.requests[..] else {
            panic!("{r:?}")
        };
        assert_eq!(
            post.at_us, 1_764_649_800_200_000,
            "start = $msec - $request_time"
        );
        assert_eq!(post.body.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(
            post.headers,
            [("Content-Type".into(), "application/json".into())]
        );
        assert_eq!(put.body.as_deref(), Some(&b""[..]), "- is an empty body");
        assert_eq!(get.body, None);
        assert_eq!(get.at_us - post.at_us, 200_000);
    }

    #[test]
    fn method_and_uri_variables_replace_request() {
        let f =
            LogFormat::parse("$time_iso8601 $request_method $uri$is_args$args $status").unwrap();
        let r = read_str(
            "2026-12-02T04:30:00+00:00 DELETE /item/7?x=1 204\n",
            &Formats::one(f).unwrap(),
        );
        assert_eq!(r.requests[0].method, "DELETE");
        assert_eq!(r.requests[0].target, "/item/7?x=1");
    }

    #[test]
    fn a_format_without_request_or_time_is_refused() {
        let e = Formats::one(LogFormat::parse("$remote_addr [$time_local]").unwrap()).unwrap_err();
        assert!(e.to_string().contains("add $request"), "{e}");
        let e = Formats::one(LogFormat::parse("$remote_addr \"$request\"").unwrap()).unwrap_err();
        assert!(e.to_string().contains("add $msec"), "{e}");
    }

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape(r#"a\x22b\"c\\d\xZZ"#), b"a\"b\"c\\d\\xZZ");
        assert_eq!(unescape(r"end\x2"), b"end\\x2");
    }
}
