//! A parsed `http://` or `https://` URL: where a load's connections go
//! ([`Target`]), and why a URL cannot be load-tested ([`UrlError`]).
//!
//! Owns the URL grammar kurabe accepts (the scheme, IPv6 literals in
//! brackets, the port, a path of no spaces). Must not resolve names nor
//! connect: the engine does.

/// A parsed `http://` or `https://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// True for `https://`.
    pub tls: bool,
    /// Host as written (IPv6 literals without brackets).
    pub host: String,
    /// Port (default 80 / 443).
    pub port: u16,
    /// Path and query, at least "/".
    pub path: String,
}

/// A URL `kurabe http` cannot load-test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid URL '{url}': {reason}; expected http://host[:port]/path or https://host[:port]/path"
)]
pub struct UrlError {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Target {
    /// Parse an absolute `http://` or `https://` URL (IPv6 literals in brackets).
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        Self::parse_parts(url).map_err(|reason| UrlError {
            url: url.to_string(),
            reason: reason.to_string(),
        })
    }

    /// [`Target::parse`] with the reason alone as the error.
    fn parse_parts(url: &str) -> Result<Target, &'static str> {
        let (tls, rest) = split_scheme(url)?;
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err("user:password@ in the URL is not supported (use -A)");
        }
        let (host, port) = split_authority(authority, if tls { 443 } else { 80 })?;
        check_host(host)?;
        Ok(Target {
            tls,
            host: host.to_string(),
            port,
            path: normalise_path(path)?,
        })
    }

    /// The `Host:` header value (port omitted when it is the scheme's default).
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The URL, normalised.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.host_header(),
            self.path
        )
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// The scheme (`true` for https) and what follows `://`.
fn split_scheme(url: &str) -> Result<(bool, &str), &'static str> {
    if let Some(r) = strip_prefix_ci(url, "http://") {
        Ok((false, r))
    } else if let Some(r) = strip_prefix_ci(url, "https://") {
        Ok((true, r))
    } else {
        Err("the scheme must be http:// or https://")
    }
}

/// Host and port of `host[:port]` or `[v6][:port]`.
fn split_authority(authority: &str, default_port: u16) -> Result<(&str, u16), &'static str> {
    const BAD_PORT: &str = "the port must be a number 1-65535";
    if let Some(v6) = authority.strip_prefix('[') {
        let end = v6.find(']').ok_or("unclosed '[' in IPv6 address")?;
        let host = &v6[..end];
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("not a valid IPv6 address in brackets");
        }
        let port = match &v6[end + 1..] {
            "" => default_port,
            p => parse_port(p.strip_prefix(':').ok_or("junk after ']'")?).ok_or(BAD_PORT)?,
        };
        return Ok((host, port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, parse_port(p).ok_or(BAD_PORT)?),
        None => (authority, default_port),
    };
    if host.contains(':') {
        return Err("IPv6 addresses must be in brackets, e.g. http://[::1]:8080/");
    }
    Ok((host, port))
}

/// A host name or address made of the characters a URL host may hold.
fn check_host(host: &str) -> Result<(), &'static str> {
    if host.is_empty() {
        return Err("the host is missing");
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b".-_:%".contains(&b))
    {
        return Err("the host contains characters that are not allowed");
    }
    Ok(())
}

/// The request target: fragment dropped (it never goes on the wire), `/` added where missing.
fn normalise_path(path: &str) -> Result<String, &'static str> {
    let path = path.split('#').next().unwrap_or("");
    if path
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err("the path contains spaces or control characters (percent-encode them)");
    }
    Ok(if path.is_empty() {
        "/".to_string()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    })
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|&p| p != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    #[test]
    fn parses_http_and_https_with_default_ports() {
        assert_eq!(
            t("http://example.com"),
            Target {
                tls: false,
                host: "example.com".into(),
                port: 80,
                path: "/".into()
            }
        );
        assert_eq!(
            t("HTTPS://example.com/a/b?x=1#frag"),
            Target {
                tls: true,
                host: "example.com".into(),
                port: 443,
                path: "/a/b?x=1".into()
            }
        );
        assert_eq!(t("http://127.0.0.1:8080?q").path, "/?q");
        assert_eq!(t("http://127.0.0.1:8080/").port, 8080);
    }

    #[test]
    fn parses_ipv6_literals() {
        let v6 = t("http://[::1]:8080/x");
        assert_eq!(
            (v6.host.as_str(), v6.port, v6.path.as_str()),
            ("::1", 8080, "/x")
        );
        assert_eq!(v6.host_header(), "[::1]:8080");
        assert_eq!(t("https://[2001:db8::1]/").port, 443);
        assert_eq!(t("https://[2001:db8::1]/").host_header(), "[2001:db8::1]");
    }

    #[test]
    fn rejects_bad_urls_with_a_clear_message() {
        for bad in [
            "x",
            "ftp://a/",
            "http://",
            "http://:80/",
            "http://a:0/",
            "http://a:99999/",
            "http://a:x/",
            "http://[::1/",
            "http://[zz]:80/",
            "http://::1/",
            "http://a b/",
            "http://u:p@a/",
            "http://a/ b",
        ] {
            let e = Target::parse(bad).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("invalid URL '{bad}': ")), "{msg}");
            assert!(msg.contains("expected http://host[:port]/path"), "{msg}");
        }
    }
}
