//! ab's `-v` lines: the request header before the run (`-v 2`) and, for
//! every response head, "LOG: header received:" with its bytes, then
//! "LOG: Response code = …" (`-v 3`) or "WARNING: Response code not 2xx".
//!
//! Owns the text of those lines. Must not print (the caller decides where
//! they go) and must not show a credential: `Authorization` and
//! `Proxy-Authorization` values are masked (Basic is only base64).

/// ab's `-v 2` preamble: the request head `head` (CRLF-separated lines)
/// of a `method` request as sent, credentials masked.
pub fn preamble(method: &str, head: &str) -> String {
    let masked: Vec<String> = head
        .split("\r\n")
        .map(|line| match line.split_once(':') {
            Some((name, _)) if is_credential(name) => format!("{name}: [masked]"),
            _ => line.to_owned(),
        })
        .collect();
    format!(
        "INFO: {method} header == \n---\n{}\n---\n",
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
pub fn head_received(bytes: &[u8], verbosity: u8) -> String {
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
            head_received(head, 2),
            "LOG: header received:\nHTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody\n"
        );
        assert!(head_received(head, 4).ends_with("body\nLOG: Response code = 200\n"));
        let e = head_received(b"HTTP/1.0 503 Busy\r\n\r\n", 2);
        assert!(e.ends_with("\nWARNING: Response code not 2xx (503)\n"));
    }

    #[test]
    fn credentials_are_masked() {
        let head = "GET / HTTP/1.0\r\nAuthorization: Basic dTpzM2NyZXQ=\r\nproxy-authorization: Basic eA==\r\nHost: h\r\n\r\n";
        let d = preamble("GET", head);
        assert!(
            d.contains("Authorization: [masked]")
                && d.contains("proxy-authorization: [masked]")
                && !d.contains("dTpzM2NyZXQ")
                && d.contains("Host: h"),
            "{d}"
        );
        assert!(
            d.starts_with("INFO: GET header == \n---\nGET / HTTP/1.0\r\n"),
            "{d}"
        );
    }
}
