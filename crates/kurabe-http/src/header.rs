//! The one rule for request headers, whatever their source (`-H`, `-C`,
//! `-T`, `-A`, a plan's `headers`, `cookies`, `content_type`, `auth`).
//!
//! Owns what may be sent: a token name (RFC 9110 §5.6.2) and a value free of
//! CR, LF, NUL and other control characters (HTAB allowed), so no value can
//! end a header line early and smuggle another header or request in.
//! Must not build the request; it only says yes or why not.

/// Why a header cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The name is empty or holds a character outside the token set.
    #[error("header name '{}' is not a token: use letters, digits and !#$%&'*+-.^_`|~", .0.escape_debug())]
    Name(String),
    /// The value holds CR, LF, NUL or another control character.
    #[error("the {name} value '{}' holds a line break or control character: remove it (it would inject header lines)", value.escape_debug())]
    Value {
        /// The header's name.
        name: String,
        /// The value as given.
        value: String,
    },
}

/// Check one header before it is sent.
pub fn check(name: &str, value: &str) -> Result<(), HeaderError> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(HeaderError::Name(name.to_owned()));
    }
    if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HeaderError::Value {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// Check every header of a request.
pub fn check_all(headers: &[(String, String)]) -> Result<(), HeaderError> {
    headers.iter().try_for_each(|(k, v)| check(k, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_nul_and_bad_names_are_refused() {
        assert!(check("X-A", "a b\tc é").is_ok());
        for bad in ["a\r\nX-Inj: 1", "a\nb", "a\rb", "a\0b", "a\x1bb"] {
            assert!(
                matches!(check("X-A", bad), Err(HeaderError::Value { .. })),
                "{bad:?}"
            );
        }
        for bad in ["", "X A", "X:A", "X\r\nY", "Ä"] {
            assert_eq!(check(bad, "v"), Err(HeaderError::Name(bad.into())));
        }
        let err = check("Cookie", "a=b\r\nX-Inj: 1").unwrap_err().to_string();
        assert!(
            err.contains(r"a=b\r\nX-Inj: 1"),
            "shown escaped, on one line: {err}"
        );
    }
}
