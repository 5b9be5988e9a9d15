//! ab's `-v` lines: the request header before the run (`-v 2`) and, for
//! every response head, "LOG: header received:" with its bytes, then
//! "LOG: Response code = …" (`-v 3`) or "WARNING: Response code not 2xx".
//!
//! Owns the text of those lines. Must not print (the caller decides where
//! they go) and must not show a credential: `Authorization` and
//! `Proxy-Authorization` values are masked (Basic is only base64).

use crate::client;
use crate::load::Checked;

/// ab's `-v 2` preamble: the request header as sent, credentials masked.
pub fn describe(load: &Checked) -> String {
    let load = load.config();
    let head = client::request_head(load);
    let masked: Vec<String> = head
        .split("\r\n")
        .map(|line| match line.split_once(':') {
            Some((name, _)) if is_credential(name) => format!("{name}: [masked]"),
            _ => line.to_owned(),
        })
        .collect();
    format!(
        "INFO: {} header == \n---\n{}\n---\n",
        load.method,
        masked.join("\r\n")
    )
}

/// Headers whose value is a password in disguise (Basic is only base64).
fn is_credential(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("proxy-authorization")
}

/// ab's lines for one response head: "LOG: header received:" and the
/// bytes (level 2), then "LOG: Response code = …" (level 3) or, for a
/// status outside 2xx, "WARNING: Response code not 2xx (…)" (level 2).
pub fn log_head(bytes: &[u8], verbosity: u8) -> String {
    let text = String::from_utf8_lossy(bytes);
    let code: String = text
        .split_whitespace()
        .nth(1)
        .unwrap_or("500")
        .chars()
        .take(3)
        .collect();
    let mut out = format!("LOG: header received:\n{text}\n");
    if !code.starts_with('2') {
        out.push_str(&format!("WARNING: Response code not 2xx ({code})\n"));
    } else if verbosity >= 3 {
        out.push_str(&format!("LOG: Response code = {code}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_log_is_abs() {
        let head = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody";
        assert_eq!(
            log_head(head, 2),
            "LOG: header received:\nHTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody\n"
        );
        assert!(log_head(head, 4).ends_with("body\nLOG: Response code = 200\n"));
        let e = log_head(b"HTTP/1.0 503 Busy\r\n\r\n", 2);
        assert!(e.ends_with("\nWARNING: Response code not 2xx (503)\n"));
    }

    #[test]
    fn credentials_are_masked() {
        let mut spec = kurabe_model::load::LoadSpec::for_url("http://h/");
        spec.auth = Some("u:s3cret".into());
        let d = describe(&crate::load::check(&spec, &crate::load::Names::FLAGS).unwrap());
        assert!(
            d.contains("Authorization: [masked]") && !d.contains("dTpzM2NyZXQ"),
            "{d}"
        );
    }
}
