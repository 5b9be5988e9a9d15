//! HPACK (RFC 7541) for the load generator: the request's header block,
//! encoded once per run, and the decoding of response header blocks.
//!
//! Every request of a run carries the same headers, so the blocks are built
//! at start: the first request on a connection inserts each header into the
//! server's dynamic table, every later one is a run of one-byte indexes (as
//! h2load does), so neither side spends CPU on header compression while the
//! load runs.
//!
//! Decoding is our own and reads only what the client keeps: `:status` and,
//! once per run, `server` (when responses are checked, [`decode_full`]
//! decodes every field instead). It still follows the server's dynamic table entry
//! by entry (a later block may index any entry), but an entry is 8 bytes (its
//! size, its name's length, and the status if its name is `:status`), not a
//! copy of its name and value. A value the client neither keeps nor inserts
//! is skipped by its length, never Huffman-decoded (so a malformed Huffman
//! string there goes unnoticed; integers, indexes, lengths and table sizes
//! are all checked). A block byte-identical to the connection's previous one
//! that referenced no dynamic entry decodes to the same fields and inserts
//! the same entries, so it is not decoded again: nginx sends the same bytes
//! for every response within a second (its `date` changes once a second).
//!
//! Why not a crate: `httlib-hpack` (used before) keeps every entry as two
//! heap `Vec`s and returns each field as two more: an allocation per header
//! per response, and kilobytes per connection. Measured with
//! bench/http2-peers.sh (nginx, 381-byte file, `-c 50 --streams 10`, load
//! average 16-21 on 2 cores, so ratios within a run, not rates): with
//! httlib-hpack, client CPU per request 0.84× h2load's over h2c and 0.68×
//! over TLS (1 round), peak RSS 82 MiB at `-c 5000`; with this decoder (and the
//! worker-wide read buffer, see the worker), 0.72× and 0.60× (3 rounds),
//! 28 MiB at `-c 5000`, 9 MiB at `-c 50`. `hpack`/`loona-hpack` look every
//! Huffman bit up in a hash map they rebuild per string (over 100 µs per
//! nginx response). The Huffman code itself, for inserted values and the
//! rare literal `:status`/`server`, is `httlib-huffman`'s (table-driven).
//!
//! Must not know about frames or streams.

use std::collections::VecDeque;

use httlib_huffman::DecoderSpeed;

/// RFC 7541 §5.1 integer with an `n`-bit prefix under `flags`.
fn encode_integer_into(mut v: usize, n: u8, flags: u8, out: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128 + 128) as u8);
        v /= 128;
    }
    out.push(v as u8);
}

/// The server's dynamic table size before its SETTINGS say otherwise.
const DEFAULT_TABLE: usize = 4096;

/// The request's header blocks.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestBlocks {
    /// First request on a connection: headers inserted into the server's table.
    pub first: Vec<u8>,
    /// Every later request: indexes into that table.
    pub repeat: Vec<u8>,
    /// Literals without indexing, for a server whose table is too small.
    pub plain: Vec<u8>,
    /// Dynamic table bytes the indexed form needs.
    pub table_need: usize,
}

/// Headers an HTTP/2 request must not carry (RFC 9113 §8.2.2); `host` becomes `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The request's header list in HTTP/2 form: pseudo-headers first, names in
/// lower case, connection-specific headers dropped.
#[cfg(test)]
pub(crate) fn header_list(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<(String, String)> {
    let mut list = Vec::with_capacity(headers.len() + 4);
    let given = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    each_field([method, scheme, authority, path], given, |k, v| {
        list.push((k.to_ascii_lowercase(), v.to_owned()));
    });
    list
}

/// [`header_list`] field by field, without building it: `f` gets each
/// name as given (HTTP/2 wants it in lower case). `pseudo`: method,
/// scheme, authority (unless `headers` has a `host`), path.
pub(crate) fn each_field<'h>(
    pseudo: [&str; 4],
    headers: impl Iterator<Item = (&'h str, &'h str)> + Clone,
    mut f: impl FnMut(&str, &str),
) {
    let [method, scheme, authority, path] = pseudo;
    let host = headers
        .clone()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"));
    f(":method", method);
    f(":scheme", scheme);
    f(":authority", host.map_or(authority, |(_, v)| v));
    f(":path", path);
    for (k, v) in headers {
        if !CONNECTION_SPECIFIC
            .iter()
            .any(|c| k.eq_ignore_ascii_case(c))
        {
            f(k, v);
        }
    }
}

/// Static-table index of a header that matches an entry exactly.
fn static_index(name: &str, value: &str) -> Option<usize> {
    match (name, value) {
        (":method", "GET") => Some(2),
        (":method", "POST") => Some(3),
        (":path", "/") => Some(4),
        (":scheme", "http") => Some(6),
        (":scheme", "https") => Some(7),
        _ => None,
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    // Writing to a Vec cannot fail.
    encode_integer_into(s.len(), 7, 0, out);
    out.extend_from_slice(s.as_bytes());
}

/// A literal field with a new name: the representation byte, name, value.
fn literal_field(out: &mut Vec<u8>, kind: u8, k: &str, v: &str) {
    out.push(kind);
    string(out, k);
    string(out, v);
}

/// Append `list`'s block in literals without indexing (the plain form).
pub(crate) fn encode_plain(list: &[(String, String)], out: &mut Vec<u8>) {
    for (k, v) in list {
        plain_field(out, k, v);
    }
}

/// Append one field of a plain block, its name put in lower case.
pub(crate) fn plain_field(out: &mut Vec<u8>, name: &str, value: &str) {
    if let Some(i) = static_index(name, value) {
        return encode_integer_into(i, 7, 0x80, out);
    }
    out.push(0x00);
    encode_integer_into(name.len(), 7, 0, out);
    out.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
    string(out, value);
}

/// Encode `list` in the three forms.
pub(crate) fn encode(list: &[(String, String)]) -> RequestBlocks {
    let mut b = RequestBlocks::default();
    let dynamic: Vec<_> = list
        .iter()
        .filter(|(k, v)| static_index(k, v).is_none())
        .collect();
    b.table_need = dynamic.iter().map(|(k, v)| k.len() + v.len() + 32).sum();
    encode_plain(list, &mut b.plain);
    let mut inserted = 0;
    for (k, v) in list {
        if let Some(i) = static_index(k, v) {
            for out in [&mut b.first, &mut b.repeat] {
                encode_integer_into(i, 7, 0x80, out);
            }
            continue;
        }
        // Literal with incremental indexing, new name.
        literal_field(&mut b.first, 0x40, k, v);
        // The newest entry has index 62: the i-th of n inserted is 62 + n - 1 - i.
        encode_integer_into(62 + dynamic.len() - 1 - inserted, 7, 0x80, &mut b.repeat);
        inserted += 1;
    }
    if b.table_need > DEFAULT_TABLE {
        b.first = b.plain.clone();
        b.repeat = b.plain.clone();
    }
    b
}

/// A dynamic table size update to 0, for the block after a server shrank its table.
pub(crate) const TABLE_RESET: u8 = 0x20;

/// What the client keeps of a response header block.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ResponseHead {
    /// `:status` (0 when absent).
    pub status: u16,
    /// `server`, when asked for.
    pub server: Option<String>,
}

/// The dynamic table size the client allows (it never sends
/// SETTINGS_HEADER_TABLE_SIZE, so RFC 7541's default).
const TABLE_LIMIT: usize = DEFAULT_TABLE;

/// RFC 7541 Appendix A: the static table's names (index 1 first).
#[rustfmt::skip]
const STATIC_NAMES: [&str; 61] = [
    ":authority", ":method", ":method", ":path", ":path", ":scheme", ":scheme",
    ":status", ":status", ":status", ":status", ":status", ":status", ":status",
    "accept-charset", "accept-encoding", "accept-language", "accept-ranges", "accept",
    "access-control-allow-origin", "age", "allow", "authorization", "cache-control",
    "content-disposition", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "cookie", "date", "etag",
    "expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match",
    "if-range", "if-unmodified-since", "last-modified", "link", "location", "max-forwards",
    "proxy-authenticate", "proxy-authorization", "range", "referer", "refresh",
    "retry-after", "server", "set-cookie", "strict-transport-security",
    "transfer-encoding", "user-agent", "vary", "via", "www-authenticate",
];
/// The values of static entries 8..=14 (`:status`).
const STATIC_STATUS: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
/// Static index of `server`.
const STATIC_SERVER: usize = 54;

/// What a header name is to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    Status,
    Server,
}

/// One dynamic-table entry without its name and value: what the table's
/// size accounting and a later reference to the entry need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// Name length + value length + 32 (RFC 7541 §4.1); at most TABLE_LIMIT.
    size: u16,
    /// Name length, for a later literal that reuses the name.
    name_len: u16,
    kind: Kind,
    /// The value of a `:status` entry (0 for other names or a bad value).
    status: u16,
}

impl Entry {
    fn new(name_len: usize, value_len: usize, kind: Kind, status: u16) -> Entry {
        // Larger than any table the client allows: it will empty the table.
        let size = (name_len + value_len + 32).min(usize::from(u16::MAX));
        Entry {
            size: size as u16,
            name_len: name_len.min(usize::from(u16::MAX)) as u16,
            kind,
            status,
        }
    }
}

/// One connection's view of the server's dynamic table, and the last block
/// decoded, so that a block identical to it (nginx sends the same bytes for
/// every response within a second) costs a comparison, not a decode.
pub(crate) struct ResponseDecoder {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
    scratch: Vec<u8>,
    /// The last block, when decoding it again would give the same fields
    /// and inserts (it referenced no dynamic entry and resized nothing).
    last: Vec<u8>,
    last_inserts: Vec<Entry>,
    last_status: u16,
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        ResponseDecoder {
            entries: VecDeque::new(),
            size: 0,
            max: TABLE_LIMIT,
            scratch: Vec::new(),
            last: Vec::new(),
            last_inserts: Vec::new(),
            last_status: 0,
        }
    }
}

fn hpack_error(what: &str) -> String {
    format!("the response headers could not be decoded (HPACK: {what})")
}

/// A cursor over one header block.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .b
            .get(self.i)
            .ok_or_else(|| hpack_error("a field cut short by the end of the block"))?;
        self.i += 1;
        Ok(b)
    }

    /// RFC 7541 §5.1 integer with an `n`-bit prefix (at most about 2^28).
    fn int(&mut self, n: u8) -> Result<usize, String> {
        let max = (1usize << n) - 1;
        let mut v = usize::from(self.byte()?) & max;
        if v < max {
            return Ok(v);
        }
        for shift in [0, 7, 14, 21] {
            let b = self.byte()?;
            v += usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(hpack_error("an integer over 2^28"))
    }

    /// RFC 7541 §5.2 string literal: whether it is Huffman-coded, its bytes.
    fn string(&mut self) -> Result<(bool, &'a [u8]), String> {
        let huffman = self.b.get(self.i).is_some_and(|b| b & 0x80 != 0);
        let len = self.int(7)?;
        let s = self
            .b
            .get(self.i..self.i + len)
            .ok_or_else(|| hpack_error("a string longer than the block"))?;
        self.i += len;
        Ok((huffman, s))
    }
}

/// A string's octets, Huffman-decoded into `scratch` when coded.
fn octets<'s>(
    scratch: &'s mut Vec<u8>,
    (huffman, s): (bool, &'s [u8]),
) -> Result<&'s [u8], String> {
    if !huffman {
        return Ok(s);
    }
    scratch.clear();
    httlib_huffman::decode(s, scratch, DecoderSpeed::FourBits)
        .map_err(|e| hpack_error(&format!("a bad Huffman string ({e:?})")))?;
    Ok(scratch)
}

/// One block's decoding: the head so far, and what makes it repeatable.
struct Pass {
    head: ResponseHead,
    fields: usize,
    /// It referenced a dynamic entry or resized the table.
    stateful: bool,
    inserts: Vec<Entry>,
}

impl ResponseDecoder {
    /// Name length, kind and (`:status`) value of table index `i`.
    fn lookup(&self, i: usize) -> Result<(usize, Kind, u16), String> {
        if i == 0 {
            return Err(hpack_error("index 0"));
        }
        if let Some(name) = STATIC_NAMES.get(i - 1) {
            let status = STATIC_STATUS.get(i.wrapping_sub(8)).copied();
            let kind = match (status, i) {
                (Some(_), _) => Kind::Status,
                (None, STATIC_SERVER) => Kind::Server,
                _ => Kind::Other,
            };
            return Ok((name.len(), kind, status.unwrap_or(0)));
        }
        let e = self
            .entries
            .get(i - 1 - STATIC_NAMES.len())
            .ok_or_else(|| hpack_error(&format!("index {i} past the end of the table")))?;
        Ok((usize::from(e.name_len), e.kind, e.status))
    }

    /// Insert at the front, evicting from the back past `max` (RFC 7541 §4.4);
    /// an entry larger than the whole table empties it.
    fn insert(&mut self, e: Entry) {
        self.size += usize::from(e.size);
        self.entries.push_front(e);
        self.evict();
    }

    fn evict(&mut self) {
        while self.size > self.max {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= usize::from(e.size);
        }
    }

    /// A literal field (RFC 7541 §6.2) whose first byte is `first`.
    fn literal(
        &mut self,
        r: &mut Reader<'_>,
        first: u8,
        want: bool,
        p: &mut Pass,
    ) -> Result<(), String> {
        let indexing = first & 0x40 != 0;
        let (name_len, kind) = self.literal_name(r, if indexing { 6 } else { 4 }, p)?;
        let value = r.string()?;
        if !indexing && kind == Kind::Other {
            return Ok(()); // neither kept nor read: skipped undecoded
        }
        let value = octets(&mut self.scratch, value)?;
        let status = match kind {
            Kind::Status => parse_status(value),
            _ => 0,
        };
        p.note(kind, status);
        if kind == Kind::Server && want && p.head.server.is_none() {
            p.head.server = Some(String::from_utf8_lossy(value).into_owned());
        }
        if indexing {
            let e = Entry::new(name_len, value.len(), kind, status);
            self.replay(e);
            p.inserts.push(e);
        }
        Ok(())
    }

    /// A literal field's name, by index (`n`-bit prefix) or as a string: its
    /// length and kind.
    fn literal_name(
        &mut self,
        r: &mut Reader<'_>,
        n: u8,
        p: &mut Pass,
    ) -> Result<(usize, Kind), String> {
        let i = r.int(n)?;
        if i != 0 {
            p.stateful |= i > STATIC_NAMES.len();
            let (len, kind, _) = self.lookup(i)?;
            return Ok((len, kind));
        }
        let name = octets(&mut self.scratch, r.string()?)?;
        let kind = match name {
            b":status" => Kind::Status,
            b"server" => Kind::Server,
            _ => Kind::Other,
        };
        Ok((name.len(), kind))
    }

    /// A dynamic table size update (RFC 7541 §6.3): only before the first field.
    fn resize(&mut self, r: &mut Reader<'_>, p: &mut Pass) -> Result<(), String> {
        let size = r.int(5)?;
        if p.fields > 0 {
            return Err(hpack_error("a table size update after a header field"));
        }
        if size > TABLE_LIMIT {
            return Err(hpack_error(&format!(
                "a table size of {size} over the {TABLE_LIMIT} the client allows"
            )));
        }
        self.max = size;
        self.evict();
        p.stateful = true;
        Ok(())
    }
}

impl Pass {
    fn note(&mut self, kind: Kind, status: u16) {
        if kind == Kind::Status && self.head.status == 0 {
            self.head.status = status;
        }
    }
}

/// A `:status` value as a number; 0 when it is not three digits.
fn parse_status(v: &[u8]) -> u16 {
    match v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => 0,
    }
}

/// Decode one complete response header block with the connection's decoder.
pub(crate) fn decode(
    d: &mut ResponseDecoder,
    block: &[u8],
    want_server: bool,
) -> Result<ResponseHead, String> {
    if !want_server && !d.last.is_empty() && d.last == block {
        return Ok(d.repeat());
    }
    let mut p = Pass {
        head: ResponseHead::default(),
        fields: 0,
        stateful: false,
        inserts: std::mem::take(&mut d.last_inserts),
    };
    p.inserts.clear();
    let r = decode_fields(d, block, want_server, &mut p);
    d.last.clear();
    if r.is_ok() && !p.stateful {
        d.last.extend_from_slice(block);
        d.last_status = p.head.status;
    }
    d.last_inserts = p.inserts;
    r.map(|()| p.head)
}

fn decode_fields(
    d: &mut ResponseDecoder,
    block: &[u8],
    want: bool,
    p: &mut Pass,
) -> Result<(), String> {
    let mut r = Reader { b: block, i: 0 };
    while let Some(&first) = block.get(r.i) {
        if first & 0x80 != 0 {
            let i = r.int(7)?;
            p.stateful |= i > STATIC_NAMES.len();
            let (_, kind, status) = d.lookup(i)?;
            p.note(kind, status);
        } else if first & 0xe0 == 0x20 {
            d.resize(&mut r, p)?;
            continue;
        } else {
            d.literal(&mut r, first, want, p)?;
        }
        p.fields += 1;
    }
    Ok(())
}

/// Every field of each response, for the response checks (`--check`):
/// `httlib-hpack`'s decoder, which copies each name and value (an
/// allocation per field, see the module docs), so it runs only when
/// responses are checked, in place of [`ResponseDecoder`] on that
/// connection (one decoder must follow the server's table).
pub(crate) struct FullDecoder {
    dec: httlib_hpack::Decoder<'static>,
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
    block: Vec<u8>,
}

impl Default for FullDecoder {
    fn default() -> Self {
        FullDecoder {
            dec: httlib_hpack::Decoder::with_dynamic_size(TABLE_LIMIT as u32),
            fields: Vec::new(),
            block: Vec::new(),
        }
    }
}

/// Decode one complete response header block in full: `:status` (and
/// `server` when asked for) as [`decode`] does, and every regular field
/// as a `name: value\r\n` line into `lines` (cleared first), the form
/// [`crate::response_check`] reads an HTTP/1.1 head in.
pub(crate) fn decode_full(
    d: &mut FullDecoder,
    block: &[u8],
    want_server: bool,
    lines: &mut Vec<u8>,
) -> Result<ResponseHead, String> {
    d.block.clear();
    d.block.extend_from_slice(block);
    d.fields.clear();
    d.dec
        .decode(&mut d.block, &mut d.fields)
        .map_err(|e| hpack_error(&format!("{e:?}")))?;
    lines.clear();
    let mut head = ResponseHead::default();
    for (name, value, _) in &d.fields {
        match name.as_slice() {
            b":status" if head.status == 0 => head.status = parse_status(value),
            n if n.starts_with(b":") => {}
            n => {
                if want_server && n == b"server" && head.server.is_none() {
                    head.server = Some(String::from_utf8_lossy(value).into_owned());
                }
                lines.extend_from_slice(n);
                lines.extend_from_slice(b": ");
                lines.extend_from_slice(value);
                lines.extend_from_slice(b"\r\n");
            }
        }
    }
    Ok(head)
}

impl ResponseDecoder {
    /// The last block again: its inserts, its status.
    fn repeat(&mut self) -> ResponseHead {
        for i in 0..self.last_inserts.len() {
            let e = self.last_inserts[i];
            self.replay(e);
        }
        ResponseHead {
            status: self.last_status,
            server: None,
        }
    }

    /// Insert `e` (again, for an identical block); one larger than the whole
    /// table empties it (RFC 7541 §4.4).
    fn replay(&mut self, e: Entry) {
        if usize::from(e.size) > self.max {
            self.entries.clear();
            self.size = 0;
        } else {
            self.insert(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use httlib_hpack::Decoder;

    fn decode_all(dec: &mut Decoder<'static>, block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        dec.decode(&mut block.to_vec(), &mut fields).unwrap();
        fields
            .into_iter()
            .map(|(k, v, _)| {
                (
                    String::from_utf8_lossy(&k).into_owned(),
                    String::from_utf8_lossy(&v).into_owned(),
                )
            })
            .collect()
    }

    fn list() -> Vec<(String, String)> {
        let headers = vec![
            ("Host".to_owned(), "example:1".to_owned()),
            ("Connection".to_owned(), "close".to_owned()),
            ("User-Agent".to_owned(), "kurabe".to_owned()),
            ("X-A".to_owned(), "1".to_owned()),
        ];
        header_list("GET", "http", "h:2", "/p", &headers)
    }

    #[test]
    fn header_list_is_lower_case_without_connection_headers() {
        let l = list();
        let names: Vec<_> = l.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                ":method",
                ":scheme",
                ":authority",
                ":path",
                "user-agent",
                "x-a"
            ]
        );
        assert_eq!(l[2].1, "example:1", "a user Host becomes :authority");
    }

    #[test]
    fn a_server_decodes_first_repeat_and_plain_blocks_to_the_same_headers() {
        let l = list();
        let b = encode(&l);
        let mut server = Decoder::default();
        assert_eq!(decode_all(&mut server, &b.first), l);
        assert_eq!(decode_all(&mut server, &b.repeat), l);
        assert_eq!(decode_all(&mut server, &b.repeat), l);
        assert!(b.repeat.len() < 8, "one byte per header: {:?}", b.repeat);
        let mut fresh = Decoder::default();
        assert_eq!(decode_all(&mut fresh, &b.plain), l);
        let mut reset = vec![TABLE_RESET];
        reset.extend_from_slice(&b.plain);
        assert_eq!(decode_all(&mut server, &reset), l);
    }

    #[test]
    fn fields_written_one_by_one_are_the_plain_block_of_the_list() {
        let l = list();
        let mut one_by_one = Vec::new();
        let headers = [
            ("Host", "example:1"),
            ("Connection", "close"),
            ("User-Agent", "kurabe"),
            ("X-A", "1"),
        ];
        each_field(["GET", "http", "h:2", "/p"], headers.into_iter(), |k, v| {
            plain_field(&mut one_by_one, k, v);
        });
        assert_eq!(one_by_one, encode(&l).plain);
        assert_eq!(decode_all(&mut Decoder::default(), &one_by_one), l);
    }

    #[test]
    fn huge_headers_are_never_indexed() {
        let big = vec![("x-big".to_owned(), "v".repeat(5000))];
        let l = header_list("GET", "https", "h", "/", &big);
        let b = encode(&l);
        assert_eq!(b.first, b.plain);
        assert_eq!(b.repeat, b.plain);
    }

    #[test]
    fn decodes_status_and_server() {
        // :status 200 (static 8), server: nginx as a literal with indexed name (54).
        let mut block = vec![0x88, 0x0f, 0x27, 5];
        block.extend_from_slice(b"nginx");
        let mut d = ResponseDecoder::default();
        let h = decode(&mut d, &block, true).unwrap();
        assert_eq!(
            h,
            ResponseHead {
                status: 200,
                server: Some("nginx".into())
            }
        );
        assert!(decode(&mut d, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], false).is_err());
    }

    /// The static table's names are RFC 7541's (httlib-hpack as the oracle).
    #[test]
    fn static_names_match_the_rfc_table() {
        let mut oracle = Decoder::default();
        for i in 1..=61u8 {
            let (name, _) = &decode_all(&mut oracle, &[0x80 | i])[0];
            assert_eq!(name, STATIC_NAMES[usize::from(i) - 1], "index {i}");
        }
    }

    /// (name, value, httlib encoder flags): huffman name/value, indexing, best format.
    type Field = (&'static str, String, u8);

    fn encode_block(enc: &mut httlib_hpack::Encoder<'static>, fields: &[Field]) -> Vec<u8> {
        let mut dst = Vec::new();
        for (k, v, flags) in fields {
            let f = (k.as_bytes().to_vec(), v.as_bytes().to_vec(), *flags);
            enc.encode(f, &mut dst).unwrap();
        }
        dst
    }

    /// Blocks that insert entries of many sizes (so eviction matters) and
    /// then index them: every status must come out as the oracle's.
    #[test]
    fn follows_the_dynamic_table_through_inserts_evictions_and_indexes() {
        let mut enc = httlib_hpack::Encoder::default();
        let mut oracle = Decoder::default();
        let mut d = ResponseDecoder::default();
        let (huff, index, best) = (0x3, 0x4, 0x10);
        for n in 0..300usize {
            let status = format!("{}", 200 + n % 7 * 37);
            let flags = if n % 3 == 0 {
                huff | index | best
            } else {
                index | best
            };
            let fields: Vec<Field> = vec![
                (":status", status.clone(), flags),
                // Asked for (n % 4 == 0): a new value, so a literal (an
                // indexed dynamic `server` entry keeps no value, see above).
                (
                    "server",
                    format!("s{}", if n % 4 == 0 { n } else { n % 5 }),
                    huff | index | best,
                ),
                (
                    "x-pad",
                    "p".repeat(n * 13 % 700),
                    index | if n % 2 == 0 { huff } else { 0 },
                ),
                ("date", format!("d{n}"), huff),
            ];
            let block = encode_block(&mut enc, &fields);
            let want = decode_all(&mut oracle, &block);
            let got = decode(&mut d, &block, n % 4 == 0).unwrap();
            assert_eq!(got.status.to_string(), want[0].1, "block {n}: {block:02x?}");
            if n % 4 == 0 {
                assert_eq!(got.server.as_deref(), Some(want[1].1.as_str()), "block {n}");
            }
            assert!(d.size <= TABLE_LIMIT);
        }
    }

    /// nginx's shape: the same literal-with-indexing block again and again;
    /// the repeats are not decoded, yet the table ends as if they were.
    #[test]
    fn an_identical_block_is_replayed_not_decoded_and_the_table_still_follows() {
        let mut enc = httlib_hpack::Encoder::default();
        let mut oracle = Decoder::default();
        let mut d = ResponseDecoder::default();
        let nginx = |date: &str| -> Vec<Field> {
            vec![
                (":status", "200".into(), 0x10),
                ("server", "nginx".into(), 0x3 | 0x4),
                ("date", date.into(), 0x3 | 0x4),
                ("content-type", "text/html".into(), 0x3 | 0x4),
                ("content-length", "381".into(), 0x3),
            ]
        };
        let block = encode_block(&mut enc, &nginx("Tue, 01 Dec 2026 14:00:00 GMT"));
        decode_all(&mut oracle, &block);
        decode(&mut d, &block, false).unwrap();
        for _ in 0..100 {
            let again = encode_block(&mut enc, &nginx("Tue, 01 Dec 2026 14:00:00 GMT"));
            assert_eq!(again, block, "the oracle encoder repeats itself");
            decode_all(&mut oracle, &again);
            assert_eq!(decode(&mut d, &again, false).unwrap().status, 200);
            assert_eq!(d.last, block, "the repeat took the replay path");
        }
        // A block that indexes what the repeats inserted, the newest first.
        let idx: Vec<Field> = vec![
            (":status", "200".into(), 0x10),
            ("server", "nginx".into(), 0x10),
            ("x-s", "418".into(), 0x4),
        ];
        let b = encode_block(&mut enc, &idx);
        assert!(
            b[1] & 0x80 != 0 && b[1] & 0x7f > 61,
            "server is a dynamic index: {b:02x?}"
        );
        let want = decode_all(&mut oracle, &b);
        let got = decode(&mut d, &b, true).unwrap();
        assert_eq!(
            got.server.as_deref(),
            None,
            "a dynamic server entry carries no value"
        );
        assert_eq!(want[1].1, "nginx");
        assert_eq!(got.status, 200);
        assert_eq!(want.len(), 3);
    }

    #[test]
    fn malformed_blocks_are_errors_not_panics() {
        let bad: [&[u8]; 7] = [
            &[0x80],       // index 0
            &[0xff, 0x80], // index 127 + …: past the end of the table
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &[0x40, 0x05, b'a'],             // a name longer than the block
            &[0x88, 0x20],                   // a size update after a field
            &[0x3f, 0xe2, 0x1f],             // a size update over 4096
            &[0x48, 0x83, 0xff, 0xff, 0xff], // a bad Huffman :status value
        ];
        for b in bad {
            let mut d = ResponseDecoder::default();
            assert!(decode(&mut d, b, false).is_err(), "{b:02x?}");
        }
    }
}
