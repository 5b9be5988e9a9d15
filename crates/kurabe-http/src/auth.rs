//! HTTP Basic authentication: the `Authorization` header value for a
//! `user:password` pair (ab's `-A`, a plan's `auth`), and the base64 it uses.
//!
//! It only encodes; checking that the credentials hold a `:` is the
//! caller's job, where the error can name the flag or field.

/// The `Authorization` header value for HTTP Basic auth: `Basic ` and the
/// base64 of `credentials` (`user:password`, RFC 7617).
pub fn basic(credentials: &str) -> String {
    format!("Basic {}", base64(credentials.as_bytes()))
}

/// Standard base64 with padding (RFC 4648 §4): a dozen lines instead of a
/// dependency for one header.
pub fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xfe]), "+//+");
    }

    #[test]
    fn basic_matches_rfc7617_example() {
        assert_eq!(
            basic("Aladdin:open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }
}
