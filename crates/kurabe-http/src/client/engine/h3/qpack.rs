//! QPACK (RFC 9204) as a load generator needs it: requests encoded once
//! with the static table and literals, responses decoded with the static
//! table and literals only. The built-in server (`crate::serve`'s HTTP/3)
//! encodes its responses and decodes requests with the same code.
//!
//! The client advertises a dynamic table of 0 bytes and 0 blocked streams
//! ([`super::frame::control_stream`]), so a server may never reference a
//! dynamic entry; a section that does (a Required Insert Count above 0, a
//! dynamic or post-base index) is refused as QPACK_DECOMPRESSION_FAILED,
//! an `Err`, never a panic. Huffman-coded strings are decoded with
//! `httlib-huffman`, as HPACK's are (see [`crate::client::engine::h2`]).
//!
//! Owns the static table and both directions of field-section coding.
//! Must not know frames or streams.

use httlib_huffman::DecoderSpeed;

/// RFC 9204 Appendix A, by index.
const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

// ----- encoding ------------------------------------------------------------

/// Append an integer with an `n`-bit prefix, `flags` in the first byte's
/// high bits (RFC 7541 §5.1, which QPACK uses).
fn put_int(out: &mut Vec<u8>, n: u8, flags: u8, mut v: u64) {
    let max = (1u64 << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append one field line: indexed when the static table has it, else a
/// literal naming a static entry's name, else a literal with its name
/// (in lower case). No Huffman: encoded once per run, the bytes are what
/// matters less than the CPU of the server decoding them.
pub(crate) fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    let lower = name.to_ascii_lowercase();
    if let Some(i) = STATIC.iter().position(|&(n, v)| n == lower && v == value) {
        return put_int(out, 6, 0xc0, i as u64);
    }
    if let Some(i) = STATIC.iter().position(|&(n, _)| n == lower) {
        put_int(out, 4, 0x50, i as u64);
    } else {
        put_int(out, 3, 0x20, lower.len() as u64);
        out.extend_from_slice(lower.as_bytes());
    }
    put_int(out, 7, 0, value.len() as u64);
    out.extend_from_slice(value.as_bytes());
}

/// A field section of `fields`: the prefix (no dynamic table: Required
/// Insert Count 0, Delta Base 0), then each field line.
pub(crate) fn encode<'f>(fields: impl IntoIterator<Item = (&'f str, &'f str)>) -> Vec<u8> {
    let mut out = vec![0x00, 0x00];
    for (k, v) in fields {
        field(&mut out, k, v);
    }
    out
}

// ----- decoding ------------------------------------------------------------

/// What a load needs of a response's field section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Head {
    /// `:status` (0: none in the section).
    pub status: u16,
    /// `content-length`, when given.
    pub content_length: Option<u64>,
    /// `server`, when asked for and given.
    pub server: Option<String>,
}

/// Why a section could not be decoded: the QPACK or HTTP/3 error code and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub code: u64,
    pub why: String,
}

fn failed(why: &str) -> DecodeError {
    DecodeError {
        code: super::frame::QPACK_DECOMPRESSION_FAILED,
        why: format!("the response headers could not be decoded (QPACK: {why})"),
    }
}

fn malformed(why: String) -> DecodeError {
    DecodeError {
        code: super::frame::H3_MESSAGE_ERROR,
        why,
    }
}

const DYNAMIC: &str = "a dynamic table reference, which the client did not allow \
                       (SETTINGS_QPACK_MAX_TABLE_CAPACITY=0)";

/// A cursor over one field section.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .b
            .get(self.i)
            .ok_or_else(|| failed("a field line cut short by the end of the section"))?;
        self.i += 1;
        Ok(b)
    }

    /// An integer with an `n`-bit prefix (at most 2^62).
    fn int(&mut self, n: u8) -> Result<u64, DecodeError> {
        let max = (1u64 << n) - 1;
        let mut v = u64::from(self.byte()?) & max;
        if v < max {
            return Ok(v);
        }
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift > 56 {
                return Err(failed("an integer over 2^62"));
            }
            v += u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A string literal whose length has an `n`-bit prefix, the Huffman
    /// flag just above it: whether it is coded, its bytes.
    fn string(&mut self, n: u8) -> Result<(bool, &'a [u8]), DecodeError> {
        let huffman = self.b.get(self.i).is_some_and(|b| b & (1 << n) != 0);
        let len = usize::try_from(self.int(n)?).unwrap_or(usize::MAX);
        let s = self
            .i
            .checked_add(len)
            .and_then(|end| self.b.get(self.i..end))
            .ok_or_else(|| failed("a string longer than the section"))?;
        self.i += len;
        Ok((huffman, s))
    }
}

/// A string's octets, Huffman-decoded into `scratch` when coded.
fn octets<'s>(
    scratch: &'s mut Vec<u8>,
    (huffman, s): (bool, &'s [u8]),
) -> Result<&'s [u8], DecodeError> {
    if !huffman {
        return Ok(s);
    }
    scratch.clear();
    httlib_huffman::decode(s, scratch, DecoderSpeed::FourBits)
        .map_err(|e| failed(&format!("a bad Huffman string ({e:?})")))?;
    Ok(scratch)
}

/// A field's name: a static entry's, or a literal's.
enum Name<'a> {
    Static(&'static str),
    Literal((bool, &'a [u8])),
}

/// Decode one response field section. `want_server`: keep `server`;
/// `lines`: when given, every field but the pseudo-headers is appended
/// as `name: value\r\n` (for response checks).
pub(crate) fn decode(
    block: &[u8],
    want_server: bool,
    mut lines: Option<&mut Vec<u8>>,
) -> Result<Head, DecodeError> {
    let mut head = Head::default();
    each_field(block, |name, value| {
        take(&mut head, name, value, want_server)?;
        // Pseudo-headers are the status line's, not fields (as HTTP/2 keeps them).
        if let Some(l) = lines.as_deref_mut().filter(|_| !name.starts_with(b":")) {
            l.extend_from_slice(name);
            l.extend_from_slice(b": ");
            l.extend_from_slice(value);
            l.extend_from_slice(b"\r\n");
        }
        Ok(())
    })?;
    Ok(head)
}

/// Call `f` with each field's name and value of a section that uses the
/// static table and literals only (a request's, for the built-in server,
/// or a response's); the first `Err` (`f`'s or the decoding's) ends it.
pub(crate) fn each_field(
    block: &[u8],
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut r = Reader { b: block, i: 0 };
    if r.int(8)? != 0 {
        return Err(failed(DYNAMIC));
    }
    r.int(7)?; // Delta Base: meaningless without a dynamic table.
    let (mut name_buf, mut value_buf) = (Vec::new(), Vec::new());
    while r.i < block.len() {
        let (name, value) = field_line(&mut r)?;
        let name: &[u8] = match name {
            Name::Static(n) => n.as_bytes(),
            Name::Literal(s) => octets(&mut name_buf, s)?,
        };
        let value = match value {
            Err(v) => v.as_bytes(),
            Ok(s) => octets(&mut value_buf, s)?,
        };
        f(name, value)?;
    }
    Ok(())
}

/// A field value: a static entry's (`Err` side) or a literal to decode.
type Value<'a> = Result<(bool, &'a [u8]), &'static str>;

/// One field line's name and value (RFC 9204 §4.5); dynamic references refused.
fn field_line<'a>(r: &mut Reader<'a>) -> Result<(Name<'a>, Value<'a>), DecodeError> {
    let first = *r.b.get(r.i).unwrap_or(&0);
    let entry = |i: u64| {
        STATIC
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .ok_or_else(|| failed(&format!("static index {i} past the table's 99 entries")))
    };
    if first & 0x80 != 0 {
        // Indexed field line; T (0x40) set: static.
        if first & 0x40 == 0 {
            return Err(failed(DYNAMIC));
        }
        let (n, v) = entry(r.int(6)?)?;
        return Ok((Name::Static(n), Err(v)));
    }
    if first & 0x40 != 0 {
        // Literal with name reference; T (0x10) set: static.
        if first & 0x10 == 0 {
            return Err(failed(DYNAMIC));
        }
        let (n, _) = entry(r.int(4)?)?;
        return Ok((Name::Static(n), Ok(r.string(7)?)));
    }
    if first & 0x20 != 0 {
        // Literal with literal name: H at 0x08, 3-bit length prefix.
        let name = r.string(3)?;
        return Ok((Name::Literal(name), Ok(r.string(7)?)));
    }
    // 0001xxxx indexed post-base, 0000xxxx literal with post-base name:
    // both point into the dynamic table.
    Err(failed(DYNAMIC))
}

/// Keep what the load needs of one decoded field.
fn take(head: &mut Head, name: &[u8], value: &[u8], want_server: bool) -> Result<(), DecodeError> {
    match name {
        b":status" => {
            let s = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            match s {
                Some(code @ 100..=999) if value.len() == 3 => head.status = code,
                _ => {
                    let shown = String::from_utf8_lossy(value);
                    return Err(malformed(format!("a response with :status '{shown}'")));
                }
            }
        }
        b"content-length" => {
            let n = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            match (n, head.content_length) {
                (Some(n), None) => head.content_length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => {
                    let shown = String::from_utf8_lossy(value);
                    return Err(malformed(format!(
                        "a response with content-length '{shown}' (not one number)"
                    )));
                }
            }
        }
        b"server" if want_server => head.server = Some(String::from_utf8_lossy(value).into()),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_static_table_has_the_rfc_anchors() {
        assert_eq!(STATIC.len(), 99);
        assert_eq!(STATIC[0], (":authority", ""));
        assert_eq!(STATIC[17], (":method", "GET"));
        assert_eq!(STATIC[25], (":status", "200"));
        assert_eq!(STATIC[63], (":status", "100"));
        assert_eq!(STATIC[92], ("server", ""));
        assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
    }

    #[test]
    fn a_request_encodes_to_indexes_and_literals() {
        let b = encode([
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "localhost:8443"),
            (":path", "/"),
            ("X-Custom", "1"),
        ]);
        let mut want = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23, 0x50];
        want.push(14);
        want.extend_from_slice(b"localhost:8443");
        want.push(0xc1);
        // A literal name of 8 bytes: the 3-bit prefix's maximum (7), then 8 - 7.
        want.extend_from_slice(&[0x27, 0x01]);
        want.extend_from_slice(b"x-custom");
        want.extend_from_slice(&[0x01, b'1']);
        assert_eq!(b, want);
    }

    #[test]
    fn what_is_encoded_decodes_back() {
        let b = encode([
            (":status", "200"),
            ("content-length", "12345"),
            ("server", "Caddy"),
            ("x-long-name-past-the-prefix", "v"),
        ]);
        let mut lines = Vec::new();
        let h = decode(&b, true, Some(&mut lines)).unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(h.content_length, Some(12345));
        assert_eq!(h.server.as_deref(), Some("Caddy"));
        assert_eq!(
            String::from_utf8(lines).unwrap(),
            "content-length: 12345\r\nserver: Caddy\r\nx-long-name-past-the-prefix: v\r\n"
        );
        assert_eq!(decode(&b, false, None).unwrap().server, None);
    }

    #[test]
    fn a_huffman_value_is_decoded() {
        // RFC 7541 C.4.1: "www.example.com" Huffman-coded.
        let coded = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut b = vec![0x00, 0x00, 0xc0 | 25];
        // server: <huffman "www.example.com"> by name reference 92 (4-bit prefix: 15 + 77).
        b.extend_from_slice(&[0x5f, 77, 0x80 | coded.len() as u8]);
        b.extend_from_slice(&coded);
        let h = decode(&b, true, None).unwrap();
        assert_eq!(
            (h.status, h.server.as_deref()),
            (200, Some("www.example.com"))
        );
    }

    #[test]
    fn dynamic_references_are_refused_not_followed() {
        let dynamic: [&[u8]; 5] = [
            &[0x01, 0x00, 0xc0 | 25],  // Required Insert Count 1
            &[0x00, 0x00, 0x80],       // indexed, dynamic
            &[0x00, 0x00, 0x40, 0x00], // literal, dynamic name
            &[0x00, 0x00, 0x10],       // indexed post-base
            &[0x00, 0x00, 0x00, 0x00], // literal, post-base name
        ];
        for b in dynamic {
            let e = decode(b, false, None).unwrap_err();
            assert_eq!(
                e.code,
                crate::client::engine::h3::frame::QPACK_DECOMPRESSION_FAILED
            );
            assert!(e.why.contains("dynamic table"), "{}", e.why);
        }
    }

    #[test]
    fn bad_values_are_message_errors() {
        let bad = encode([(":status", "20")]);
        assert!(decode(&bad, false, None)
            .unwrap_err()
            .why
            .contains(":status '20'"));
        let two = encode([("content-length", "1"), ("content-length", "2")]);
        assert!(decode(&two, false, None).is_err());
        let same = encode([("content-length", "3"), ("content-length", "3")]);
        assert_eq!(decode(&same, false, None).unwrap().content_length, Some(3));
        // Past the static table.
        assert!(decode(&[0, 0, 0xff, 0x30], false, None).is_err());
    }

    #[test]
    fn random_sections_never_panic() {
        // A fixed-seed xorshift: random bytes, and random cuts of real sections.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let real = encode([(":status", "404"), ("content-length", "7"), ("a", "b")]);
        for round in 0..20_000 {
            let len = (next() % 40) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 {
                // Mostly valid prefixes so the field lines are reached.
                b.splice(0..0, [0u8, 0]);
            }
            if round % 3 == 0 {
                b = real[..(next() as usize % (real.len() + 1))].to_vec();
                if let Some(i) = (!b.is_empty()).then(|| next() as usize % b.len()) {
                    b[i] ^= next() as u8;
                }
            }
            let _ = decode(&b, true, Some(&mut Vec::new()));
        }
    }
}
