//! HPACK (RFC 7541) for the load generator: the request's header block,
//! encoded once per run, and the decoding of response header blocks.
//!
//! Every request of a run carries the same headers, so the blocks are built
//! at start: the first request on a connection inserts each header into the
//! server's dynamic table, every later one is a run of one-byte indexes (as
//! h2load does), so neither side spends CPU on header compression while the
//! load runs. Decoding uses `loona-hpack` (stateful per connection: the
//! server may index its own headers), reading only `:status` and `server`.
//!
//! Must not know about frames or streams.

use loona_hpack::encoder::encode_integer_into;
use loona_hpack::Decoder;

/// The server's dynamic table size before its SETTINGS say otherwise.
const DEFAULT_TABLE: usize = 4096;

/// The request's header blocks.
#[derive(Debug, Clone)]
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
pub(crate) fn header_list(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
) -> Vec<(String, String)> {
    let user_host = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.clone());
    let mut list = vec![
        (":method".to_owned(), method.to_owned()),
        (":scheme".to_owned(), scheme.to_owned()),
        (
            ":authority".to_owned(),
            user_host.unwrap_or_else(|| authority.to_owned()),
        ),
        (":path".to_owned(), path.to_owned()),
    ];
    for (k, v) in headers {
        let k = k.to_ascii_lowercase();
        if !CONNECTION_SPECIFIC.contains(&k.as_str()) {
            list.push((k, v.clone()));
        }
    }
    list
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
    let _ = encode_integer_into(s.len(), 7, 0, out);
    out.extend_from_slice(s.as_bytes());
}

/// Encode `list` in the three forms.
pub(crate) fn encode(list: &[(String, String)]) -> RequestBlocks {
    let mut b = RequestBlocks {
        first: Vec::new(),
        repeat: Vec::new(),
        plain: Vec::new(),
        table_need: 0,
    };
    let dynamic: Vec<_> = list
        .iter()
        .filter(|(k, v)| static_index(k, v).is_none())
        .collect();
    b.table_need = dynamic.iter().map(|(k, v)| k.len() + v.len() + 32).sum();
    let mut inserted = 0;
    for (k, v) in list {
        if let Some(i) = static_index(k, v) {
            for out in [&mut b.first, &mut b.repeat, &mut b.plain] {
                let _ = encode_integer_into(i, 7, 0x80, out);
            }
            continue;
        }
        // Literal with incremental indexing, new name; and without indexing.
        b.first.push(0x40);
        string(&mut b.first, k);
        string(&mut b.first, v);
        b.plain.push(0x00);
        string(&mut b.plain, k);
        string(&mut b.plain, v);
        // The newest entry has index 62: the i-th of n inserted is 62 + n - 1 - i.
        let _ = encode_integer_into(62 + dynamic.len() - 1 - inserted, 7, 0x80, &mut b.repeat);
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

/// Decode one complete response header block with the connection's decoder.
pub(crate) fn decode(
    dec: &mut Decoder<'static>,
    block: &[u8],
    want_server: bool,
) -> Result<ResponseHead, String> {
    let mut head = ResponseHead::default();
    dec.decode_with_cb(block, |name, value| {
        if &*name == b":status" {
            head.status = std::str::from_utf8(&value)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if want_server && &*name == b"server" {
            head.server = Some(String::from_utf8_lossy(&value).into_owned());
        }
    })
    .map_err(|e| format!("the response headers could not be decoded (HPACK: {e:?})"))?;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(dec: &mut Decoder<'static>, block: &[u8]) -> Vec<(String, String)> {
        let mut v = Vec::new();
        dec.decode_with_cb(block, |k, val| {
            v.push((
                String::from_utf8_lossy(&k).into_owned(),
                String::from_utf8_lossy(&val).into_owned(),
            ))
        })
        .unwrap();
        v
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
        let mut server = Decoder::new();
        assert_eq!(decode_all(&mut server, &b.first), l);
        assert_eq!(decode_all(&mut server, &b.repeat), l);
        assert_eq!(decode_all(&mut server, &b.repeat), l);
        assert!(b.repeat.len() < 8, "one byte per header: {:?}", b.repeat);
        let mut fresh = Decoder::new();
        assert_eq!(decode_all(&mut fresh, &b.plain), l);
        let mut reset = vec![TABLE_RESET];
        reset.extend_from_slice(&b.plain);
        assert_eq!(decode_all(&mut server, &reset), l);
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
        let mut d = Decoder::new();
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
}
