//! The request head a load sends, as data for whoever shows it (ab's
//! `-v 2` preamble, composed by `kurabe_report::ab_log`).
//!
//! Owns reading the head off a checked load. Must not compose text for
//! people nor mask anything: the renderer decides what a reader sees.

use crate::client;
use crate::load::Checked;

/// A load's request head as it goes on the wire (no body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentHead {
    /// The request method (`GET`, `POST`).
    pub method: String,
    /// The head's lines, CRLF-separated, ending with the blank line.
    pub head: String,
}

/// The head every request of `load` sends.
pub fn sent_head(load: &Checked) -> SentHead {
    let load = load.config();
    SentHead {
        method: load.first_method().to_owned(),
        head: client::request_head(load),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_the_wire_head() {
        let mut spec = kurabe_model::load::LoadSpec::for_url("http://h/x");
        spec.auth = Some("u:s3cret".into());
        let h = sent_head(&crate::load::check(&spec, &crate::load::Names::FLAGS).unwrap());
        assert_eq!(h.method, "GET");
        assert!(
            h.head.starts_with("GET /x HTTP/1.1\r\nHost: h\r\n"),
            "{}",
            h.head
        );
        assert!(
            h.head.contains("Authorization: Basic dTpzM2NyZXQ="),
            "{}",
            h.head
        );
        assert!(h.head.ends_with("\r\n\r\n"), "{}", h.head);
    }
}
