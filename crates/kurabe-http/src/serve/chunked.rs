//! Incremental decoder for chunked request bodies (RFC 9112 §7.1).
//!
//! Owns only framing: it tells how many input bytes it consumed and how many
//! of them were body data. It never allocates and never sees the socket.

/// Where the decoder is inside a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chunked {
    /// Expecting a chunk-size line.
    Size,
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF that ends a chunk's data.
    DataEnd,
    /// Reading trailer lines after the last chunk, until an empty line.
    Trailer,
    /// The body is complete.
    Done,
}

/// What one [`Chunked::advance`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    /// Input bytes consumed.
    pub consumed: usize,
    /// Of those, body data bytes.
    pub data: u64,
}

/// The chunked framing is invalid; the connection must be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BadChunk;

/// Longest chunk-size or trailer line accepted: anything longer is an attack or garbage.
const MAX_LINE: usize = 4096;

impl Chunked {
    /// Consume as much of `input` as possible; stop when more input is needed or the body is done.
    pub(super) fn advance(&mut self, input: &[u8]) -> Result<Step, BadChunk> {
        let mut step = Step {
            consumed: 0,
            data: 0,
        };
        loop {
            let rest = &input[step.consumed..];
            let used = match *self {
                Chunked::Done => None,
                Chunked::Size | Chunked::Trailer => self.line(rest)?,
                Chunked::Data(left) => {
                    let took = self.data(left, rest);
                    step.data += took.unwrap_or(0) as u64;
                    took
                }
                Chunked::DataEnd => self.data_end(rest)?,
            };
            match used {
                Some(n) => step.consumed += n,
                None => return Ok(step),
            }
        }
    }

    /// A chunk-size or trailer line at the start of `rest`: the bytes it
    /// takes with its CRLF, or `None` while it is incomplete.
    fn line(&mut self, rest: &[u8]) -> Result<Option<usize>, BadChunk> {
        let Some(end) = find_crlf(rest) else {
            return if rest.len() > MAX_LINE {
                Err(BadChunk)
            } else {
                Ok(None)
            };
        };
        let line = &rest[..end];
        *self = match *self {
            Chunked::Trailer if line.is_empty() => Chunked::Done,
            Chunked::Trailer => Chunked::Trailer,
            _ => match parse_size(line)? {
                0 => Chunked::Trailer,
                size => Chunked::Data(size),
            },
        };
        Ok(Some(end + 2))
    }

    /// Up to `left` bytes of chunk data from `rest`; `None` when there are none yet.
    fn data(&mut self, left: u64, rest: &[u8]) -> Option<usize> {
        if rest.is_empty() {
            return None;
        }
        let take = left.min(rest.len() as u64);
        *self = if take == left {
            Chunked::DataEnd
        } else {
            Chunked::Data(left - take)
        };
        Some(take as usize)
    }

    /// The CRLF after a chunk's data; `None` while it has not all arrived.
    fn data_end(&mut self, rest: &[u8]) -> Result<Option<usize>, BadChunk> {
        if rest.len() < 2 {
            return Ok(None);
        }
        if &rest[..2] != b"\r\n" {
            return Err(BadChunk);
        }
        *self = Chunked::Size;
        Ok(Some(2))
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// Hex size before any `;extension`.
fn parse_size(line: &[u8]) -> Result<u64, BadChunk> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = std::str::from_utf8(digits).map_err(|_| BadChunk)?.trim();
    if digits.is_empty() || digits.len() > 15 {
        return Err(BadChunk);
    }
    u64::from_str_radix(digits, 16).map_err(|_| BadChunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], split: usize) -> (Chunked, u64, usize) {
        let mut dec = Chunked::Size;
        let (mut data, mut consumed) = (0, 0);
        let mut fed = 0;
        let mut buf = Vec::new();
        while fed < input.len() {
            let end = (fed + split).min(input.len());
            buf.extend_from_slice(&input[fed..end]);
            fed = end;
            let step = dec.advance(&buf).unwrap();
            buf.drain(..step.consumed);
            data += step.data;
            consumed += step.consumed;
        }
        (dec, data, consumed)
    }

    #[test]
    fn decodes_whole_and_byte_by_byte() {
        let body = b"5\r\nhello\r\nA;ext=1\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        for split in [1, 3, body.len()] {
            let (state, data, consumed) = decode_all(body, split);
            assert_eq!(state, Chunked::Done, "split {split}");
            assert_eq!(data, 15);
            assert_eq!(consumed, body.len());
        }
    }

    #[test]
    fn stops_at_end_of_body_leaving_next_request() {
        let mut dec = Chunked::Size;
        let input = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let step = dec.advance(input).unwrap();
        assert_eq!(dec, Chunked::Done);
        assert_eq!(&input[step.consumed..], b"GET / HTTP/1.1\r\n");
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(Chunked::Size.advance(b"zz\r\n"), Err(BadChunk));
        assert_eq!(Chunked::Size.advance(b"2\r\nabXY"), Err(BadChunk));
        assert_eq!(Chunked::Size.advance(&[b'1'; 5000]), Err(BadChunk));
    }
}
