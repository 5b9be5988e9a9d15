//! HAR 1.2 files (`.har`, what browsers' developer tools and proxies
//! export) read into [`Recorded`] requests: `startedDateTime`, the
//! request's method, URL (path and query only), headers and `postData`
//! (`text`, base64 when `encoding` is `base64`; form `params` without
//! `text` as `application/x-www-form-urlencoded`).
//!
//! Headers that belong to the original connection are dropped: HTTP/2
//! pseudo-headers (`:authority`), `Host` (the base URL's host is sent),
//! `Content-Length` (the engine writes it) and the hop-by-hop ones.
//!
//! Owns the HAR shape (serde, reading only the fields used; entries are
//! deserialised one at a time, the file is never held as text or as a
//! JSON tree) and the cap on a request body
//! ([`crate::request::MAX_BODY_BYTES`]): a `postData.text` is lifted out
//! of the text and decoded as it is read (`har_lift.rs`), so a body
//! is held once, decoded, and one of gigabytes is refused as soon as its
//! decoded size passes the limit, with its size. Must not fetch anything.

use std::cell::Cell;
use std::fmt;
use std::io::Read;

use super::har_lift::{self, Lift, Lifted, Spacing, Stopped, PLACEHOLDER};

use base64::Engine as _;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::{origin_form, sendable, time, wants_body, Recorded, Recording, Skip};

use crate::request::MAX_BODY_BYTES;

/// A HAR file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    /// Not JSON, or not HAR's shape.
    #[error("{source_name}: not a HAR 1.2 file ({detail}): give a .har export, or an access log with --log-format")]
    NotHar {
        /// The file as given.
        source_name: String,
        /// What the JSON reader found (it says the line and column).
        detail: String,
    },
    /// An entry's request body is over [`MAX_BODY_BYTES`].
    #[error("{source_name}: entry {entry}'s request body is {size} bytes, more than the {} a request body may have: drop the entry or cut its body", kurabe_input::Bytes(MAX_BODY_BYTES))]
    BodyTooLarge {
        /// The file as given.
        source_name: String,
        /// The entry, 1-based.
        entry: u64,
        /// The body's size: decoded, or as text when it is not base64.
        size: u64,
    },
    /// The entries' requests pass what a replay holds
    /// ([`super::MAX_HELD_BYTES`]).
    #[error("{}", super::too_large(.source_name, "entry", *.entry))]
    TooLarge {
        /// The file as given.
        source_name: String,
        /// The entry whose request passed the limit, 1-based.
        entry: u64,
    },
}

thread_local! {
    /// The body over the limit that stopped the read: the entry and the
    /// body's size (decoded).
    static OVER: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
    /// The entry whose request passed what a replay holds, if one did.
    static FULL: Cell<Option<u64>> = const { Cell::new(None) };
}

/// `postData.text`: lifted out of the file and decoded as it is read
/// ([`har_lift`]; serde sees its [`PLACEHOLDER`]). A text that is
/// canonical base64 (as HAR tools write a binary body, line-wrapped or
/// not) is held once, decoded (the text is put back only when `encoding`
/// turns out not to be base64; the decoding is exact and the whitespace
/// noted, so it is the same text). A text
/// serde reads itself (a key written with escapes, not lifted) is
/// decoded the same way from serde's buffer.
enum BodyText {
    /// The text, decoded from base64, and the whitespace that was in it.
    Decoded(Vec<u8>, Spacing),
    /// The text as given (not canonical base64).
    Text(String),
}

impl BodyText {
    /// Of `text`: decoded when it is canonical base64, kept when not.
    fn of(text: &str) -> Option<Vec<u8>> {
        let plausible = text.len() >= 4 && text.len() % 4 == 0;
        plausible
            .then(|| base64::engine::general_purpose::STANDARD.decode(text).ok())
            .flatten()
    }

    /// The text as the file gave it.
    fn into_text(self) -> String {
        match self {
            BodyText::Decoded(b, spacing) => {
                spacing.put_back(&base64::engine::general_purpose::STANDARD.encode(b))
            }
            BodyText::Text(t) => t,
        }
    }
}

impl<'de> Deserialize<'de> for BodyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BodyText, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

/// Reads a [`BodyText`] from the string serde hands on.
struct TextVisitor;

impl Visitor<'_> for TextVisitor {
    type Value = BodyText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<BodyText, E> {
        if v == PLACEHOLDER {
            if let Some(lifted) = har_lift::take() {
                return Ok(match lifted {
                    Lifted::Decoded(b, spacing) => BodyText::Decoded(b, spacing),
                    Lifted::Text(t) => BodyText::Text(t),
                });
            }
        }
        Ok(match BodyText::of(v) {
            Some(bytes) => BodyText::Decoded(bytes, Spacing::default()),
            None => BodyText::Text(v.to_owned()),
        })
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<BodyText, E> {
        Ok(match BodyText::of(&v) {
            Some(bytes) => BodyText::Decoded(bytes, Spacing::default()),
            None => BodyText::Text(v),
        })
    }
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    request: Request,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(rename = "postData", default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: i64,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    #[serde(default)]
    text: Option<BodyText>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    params: Vec<NameValue>,
}

/// Read a HAR file from `input` (`source_name` for messages); a request
/// body over [`MAX_BODY_BYTES`] stops the read.
pub fn read<R: Read>(input: R, source_name: &str) -> Result<Recording, HarError> {
    let mut rec = Recording::new("entry");
    let input = std::io::BufReader::new(Lift::new(input));
    let mut de = serde_json::Deserializer::from_reader(input);
    OVER.set(None);
    FULL.set(None);
    let read = de.deserialize_map(Top(&mut rec)).and_then(|()| de.end());
    let Err(e) = read else {
        return Ok(rec.finish());
    };
    let source_name = source_name.to_owned();
    let stopped = har_lift::stopped();
    if let Some(Stopped::TooLarge { entry }) = stopped {
        return Err(HarError::TooLarge { source_name, entry });
    }
    if let Some(entry) = FULL.take() {
        return Err(HarError::TooLarge { source_name, entry });
    }
    let over = match stopped {
        Some(Stopped::BodyTooLarge { entry, size }) => Some((entry, size)),
        _ => OVER.take(),
    };
    Err(match over {
        Some((entry, size)) => HarError::BodyTooLarge {
            source_name,
            entry,
            size,
        },
        None => HarError::NotHar {
            source_name,
            detail: e.to_string(),
        },
    })
}

/// The top object: `log` is read, anything else skipped.
struct Top<'a>(&'a mut Recording);

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a HAR object with a log")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "log" {
                map.next_value_seed(Log(&mut *self.0))?;
                seen = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen {
            return Err(de::Error::missing_field("log"));
        }
        Ok(())
    }
}

/// `log`: `entries` read one at a time.
struct Log<'a>(&'a mut Recording);

impl<'de> de::DeserializeSeed<'de> for Log<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Log<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a HAR log object with entries")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" {
                map.next_value_seed(Entries(&mut *self.0))?;
                seen = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen {
            return Err(de::Error::missing_field("entries"));
        }
        Ok(())
    }
}

/// `entries`: each turned into a request or a skip as it is read.
struct Entries<'a>(&'a mut Recording);

impl<'de> de::DeserializeSeed<'de> for Entries<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of HAR entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let rec = self.0;
        while let Some(e) = seq.next_element::<Entry>()? {
            if let Some(size) = e.body_size().filter(|s| *s > MAX_BODY_BYTES) {
                OVER.set(Some((rec.tally.read + 1, size)));
                return Err(de::Error::custom("a request body over the limit"));
            }
            rec.tally.read += 1;
            let place = rec.tally.read;
            let excerpt = format!("{} {}", e.request.method, e.request.url);
            match entry(e, place).map(|r| rec.keep(r)) {
                Ok(Ok(())) => {}
                Ok(Err(full)) => {
                    FULL.set(Some(full.place));
                    return Err(de::Error::custom("more requests than a replay holds"));
                }
                Err(why) => rec.tally.skip(why, place, &excerpt),
            }
        }
        Ok(())
    }
}

impl Entry {
    /// The size of its request body decoded, if it has a text.
    fn body_size(&self) -> Option<u64> {
        let p = self.request.post_data.as_ref()?;
        let base64 = p
            .encoding
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
        Some(match (p.text.as_ref()?, base64) {
            (BodyText::Decoded(b, _), true) => b.len() as u64,
            (BodyText::Decoded(b, s), false) => (b.len().div_ceil(3) * 4) as u64 + s.count(),
            (BodyText::Text(text), true) => {
                let solid = text.bytes().filter(|&b| !har_lift::is_space(b)).count();
                let t =
                    text.trim_end_matches(|c: char| c.is_ascii() && har_lift::is_space(c as u8));
                let pad = t.bytes().rev().take_while(|b| *b == b'=').count();
                (solid / 4 * 3).saturating_sub(pad) as u64
            }
            (BodyText::Text(text), false) => text.len() as u64,
        })
    }
}

/// One entry: a request, or why it is skipped.
fn entry(e: Entry, place: u64) -> Result<Recorded, Skip> {
    let method = e.request.method.to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
        return Err(Skip::Malformed);
    }
    if method == "CONNECT" {
        return Err(Skip::Connect);
    }
    let url = e.request.url.trim();
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        return Err(Skip::NotHttp);
    }
    let target = origin_form(url)
        .filter(|t| sendable(t))
        .ok_or(Skip::Malformed)?;
    let at_us = time::iso8601(&e.started).ok_or(Skip::Malformed)?;
    let mut headers = Vec::new();
    for h in e.request.headers {
        if dropped(&h.name) {
            continue;
        }
        crate::header::check(&h.name, &h.value).map_err(|_| Skip::Malformed)?;
        headers.push((h.name, h.value));
    }
    let body = match e.request.post_data {
        Some(p) => Some(body(p, &mut headers)?.into()),
        None if wants_body(&method) => Some(Default::default()),
        None => None,
    };
    Ok(Recorded {
        place,
        at_us,
        method,
        target,
        headers,
        body,
        status: e
            .response
            .and_then(|r| u16::try_from(r.status).ok())
            .filter(|s| (100..=999).contains(s)),
    })
}

/// `postData`'s bytes; its `mimeType` as `Content-Type` when the
/// headers have none.
fn body(p: PostData, headers: &mut Vec<(String, String)>) -> Result<Vec<u8>, Skip> {
    let bytes = match (p.text, p.encoding.as_deref()) {
        (Some(BodyText::Decoded(b, _)), Some(enc)) if enc.eq_ignore_ascii_case("base64") => b,
        (Some(BodyText::Text(t)), Some(enc)) if enc.eq_ignore_ascii_case("base64") => {
            let solid: Vec<u8> = t.bytes().filter(|&b| !har_lift::is_space(b)).collect();
            base64::engine::general_purpose::STANDARD
                .decode(solid)
                .map_err(|_| Skip::Malformed)?
        }
        (Some(t), _) => t.into_text().into_bytes(),
        (None, _) if p.mime_type.starts_with("application/x-www-form-urlencoded") => p
            .params
            .iter()
            .map(|kv| format!("{}={}", form(&kv.name), form(&kv.value)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes(),
        (None, _) if p.params.is_empty() => Vec::new(),
        (None, _) => return Err(Skip::NoBody),
    };
    let has_type = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
    if !has_type
        && !p.mime_type.is_empty()
        && crate::header::check("Content-Type", &p.mime_type).is_ok()
    {
        headers.push(("Content-Type".to_owned(), p.mime_type));
    }
    Ok(bytes)
}

/// Percent-encoding for a form value (HAR's `params` are decoded).
fn form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Headers of the original connection, not of the request.
fn dropped(name: &str) -> bool {
    name.starts_with(':')
        || [
            "host",
            "content-length",
            "connection",
            "keep-alive",
            "proxy-connection",
            "transfer-encoding",
            "te",
            "trailer",
            "upgrade",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HAR: &str = r#"{"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
      "pages": [],
      "entries": [
        {"startedDateTime": "2026-12-02T04:30:00.500Z",
         "request": {"method": "POST", "url": "https://shop.example/api/cart?x=1#top",
           "httpVersion": "HTTP/2",
           "headers": [{"name": ":authority", "value": "shop.example"},
                       {"name": "Host", "value": "shop.example"},
                       {"name": "Cookie", "value": "s=1"},
                       {"name": "Content-Length", "value": "5"}],
           "postData": {"mimeType": "application/octet-stream", "text": "AAEC/w==", "encoding": "base64"}},
         "response": {"status": 201}},
        {"startedDateTime": "2026-12-02T04:30:00.250Z",
         "request": {"method": "get", "url": "http://shop.example/", "headers": []},
         "response": {"status": 0}},
        {"startedDateTime": "2026-12-02T04:30:01Z",
         "request": {"method": "POST", "url": "http://shop.example/login", "headers": [],
           "postData": {"mimeType": "application/x-www-form-urlencoded", "params": [{"name": "u", "value": "a b&c"}]}}},
        {"startedDateTime": "2026-12-02T04:30:01Z",
         "request": {"method": "GET", "url": "data:image/png;base64,AAAA", "headers": []}},
        {"startedDateTime": "2026-12-02T04:30:01Z",
         "request": {"method": "GET", "url": "wss://shop.example/live", "headers": []}},
        {"startedDateTime": "yesterday",
         "request": {"method": "GET", "url": "http://shop.example/x", "headers": []}}
      ]}}"#;

    #[test]
    fn entries_become_requests_with_headers_and_bodies() {
        let r = read(HAR.as_bytes(), "t.har").unwrap();
        assert_eq!(r.tally.read, 6);
        let [get, post, login] = &r.requests[..] else {
            panic!("{r:?}")
        };
        assert_eq!(
            (get.place, get.method.as_str(), get.target.as_str()),
            (2, "GET", "/")
        );
        assert_eq!(get.status, None, "status 0 is a failed request");
        assert_eq!(post.at_us - get.at_us, 250_000);
        assert_eq!(post.target, "/api/cart?x=1");
        assert_eq!(post.body.as_deref(), Some(&[0u8, 1, 2, 255][..]));
        assert_eq!(
            post.headers,
            [
                ("Cookie".into(), "s=1".into()),
                ("Content-Type".into(), "application/octet-stream".into())
            ]
        );
        assert_eq!(post.status, Some(201));
        assert_eq!(login.body.as_deref(), Some(&b"u=a+b%26c"[..]));
        assert_eq!(r.tally.count(Skip::NotHttp), 2);
        assert_eq!(r.tally.count(Skip::Malformed), 1);
    }

    #[test]
    fn not_json_or_not_a_har_is_one_line_with_the_place() {
        for (text, want) in [
            ("GET / HTTP/1.1\n", "line 1 column 1"),
            ("{\"log\": {\"entries\": [}}", "line 1 column 22"),
            ("{\"x\": 1}", "missing field `log`"),
            ("{\"log\": {}}", "missing field `entries`"),
            (r#"{"log":{"entries":[]}} x"#, "trailing characters"),
        ] {
            let e = read(text.as_bytes(), "t.har").unwrap_err().to_string();
            assert!(e.starts_with("t.har: not a HAR 1.2 file ("), "{e}");
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_text_that_looks_like_base64_is_the_text_unless_encoded() {
        let entry = |text: &str, encoding: &str| {
            format!(
                r#"{{"log":{{"entries":[{{"startedDateTime":"2026-12-02T04:30:00Z","request":{{"method":"POST","url":"http://h/","headers":[],"postData":{{"mimeType":"text/plain","text":"{text}"{encoding}}}}}}}]}}}}"#
            )
        };
        let body = |text: &str, encoding: &str| {
            let r = read(entry(text, encoding).as_bytes(), "t.har").unwrap();
            r.requests[0].body.clone().unwrap().to_vec()
        };
        let b64 = r#","encoding":"base64""#;
        assert_eq!(body("aGk=", ""), b"aGk=");
        assert_eq!(body("aGk=", b64), b"hi");
        assert_eq!(body("abcd", ""), b"abcd");
        assert_eq!(body(" aGk= ", b64), b"hi");
        assert_eq!(body("hi there", ""), b"hi there");
        assert_eq!(body("aGk=\\n", ""), b"aGk=\n");
        assert_eq!(body("aG k=\\r\\n", b64), b"hi");
        assert_eq!(body("aG k=\\r\\n", ""), b"aG k=\r\n");
        assert_eq!(body("    ", ""), b"    ");
    }

    /// A HAR of one POST whose `postData` is `post` (JSON), its response
    /// `response`.
    fn one_post(post: &str, response: &str) -> String {
        format!(
            r#"{{"log":{{"entries":[{{"startedDateTime":"2026-12-02T04:30:00Z","request":{{"method":"POST","url":"http://h/","headers":[{{"name":"X-A","value":"1"}}],"postData":{post}}},"response":{response}}},{{"startedDateTime":"2026-12-02T04:30:01Z","request":{{"method":"GET","url":"http://h/2","headers":[]}}}}]}}}}"#
        )
    }

    /// Bodies are lifted out of the text and decoded as they are read:
    /// base64 longer than a batch (with `\/` escapes, as some tools write
    /// a slash), text with every kind of escape, a text before or after
    /// its encoding, a key written with escapes (read by serde itself),
    /// and a response's large text passed over.
    #[test]
    fn bodies_are_lifted_and_decoded_as_they_are_read() {
        use base64::Engine as _;
        let raw: Vec<u8> = (0..300_001u32).map(|i| (i * 7 % 251) as u8).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
        let escaped = b64.replace('/', "\\/");
        let body = |post: &str, response: &str| {
            let har = one_post(post, response);
            let r = read(har.as_bytes(), "t.har").unwrap();
            assert_eq!(r.requests.len(), 2, "{r:?}");
            assert_eq!(r.requests[1].target, "/2");
            r.requests[0].body.clone().unwrap().to_vec()
        };
        let enc = r#""encoding":"base64""#;
        let post = format!(r#"{{"mimeType":"a/b","text":"{escaped}",{enc}}}"#);
        assert_eq!(body(&post, "{}"), raw);
        let post = format!(r#"{{{enc},"mimeType":"a/b","text":"{b64}"}}"#);
        assert_eq!(body(&post, "{}"), raw);
        let post = format!(r#"{{"mimeType":"a/b","text":"{b64}"}}"#);
        assert_eq!(body(&post, "{}"), b64.as_bytes(), "not encoded: the text");
        // Line-wrapped (as MIME writes base64), the breaks as JSON escapes.
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(76)
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect();
        let wrapped = lines.join("\\r\\n");
        let post = format!(r#"{{"mimeType":"a/b","text":"{wrapped}",{enc}}}"#);
        assert!(body(&post, "{}") == raw, "line-wrapped base64, decoded");
        let post = format!(r#"{{"mimeType":"a/b","text":" {wrapped}\n"}}"#);
        let text = format!(" {}\n", lines.join("\r\n"));
        let got = body(&post, "{}");
        let at = got.iter().zip(text.as_bytes()).position(|(a, b)| a != b);
        assert!(
            got == text.as_bytes(),
            "not encoded: the text ({} of {} bytes, first difference at {at:?})",
            got.len(),
            text.len()
        );
        let text = r#"a\"b\\c\/d\n\u00e9\ud83d\ude00 \t"#;
        let post = format!(r#"{{"mimeType":"text/plain","text":"{text}"}}"#);
        assert_eq!(body(&post, "{}"), "a\"b\\c/d\né😀 \t".as_bytes());
        let post = r#"{"mimeType":"text/plain","t\u0065xt":"aGk=",
            "encoding":"base64"}"#;
        let response = format!(r#"{{"status":200,"content":{{"text":"{b64}"}}}}"#);
        assert_eq!(body(post, &response), b"hi");
    }

    #[test]
    fn an_empty_entries_list_reads_as_nothing() {
        let r = read(r#"{"log":{"entries":[]}}"#.as_bytes(), "t.har").unwrap();
        assert_eq!((r.tally.read, r.requests.len()), (0, 0));
    }
}
