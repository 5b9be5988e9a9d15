//! ab's remaining flags of `kurabe http`, resolved: the report layout (`-d`,
//! `-S`, `-w`, `-x`, `-y`, `-z`), connection setup (`-b`, `-B`, `-X`, `-P`,
//! `-E`, `-f`, `-Z`) and the `-v` log (ab's "INFO:", "LOG:" and "WARNING:" lines).
//!
//! Owns turning those flags into typed options and formatting the `-v`
//! lines. Must not show the `-P` or `-A` password anywhere: errors never
//! repeat the value, the logged request masks credentials.

use std::io::Write as _;
use std::net::IpAddr;
use std::sync::Arc;

use anyhow::{bail, Context};
use kurabe_http::client::{self, HeadTrace, LoadConfig, Proxy, Setup, TlsOptions, TlsProtocol};
use kurabe_report::{AbHtml, AbText};

use super::Args;
use crate::render::http::{Format, Layout};

/// ab's layout flags → the report layout; `-x`/`-y`/`-z` imply `-w`, as in ab.
pub(super) fn layout(args: &Args) -> anyhow::Result<Layout> {
    let html = args.html
        || args.table_attrs.is_some()
        || args.tr_attrs.is_some()
        || args.td_attrs.is_some();
    if html && args.format != Format::Text {
        bail!("-w (or -x/-y/-z) prints ab's HTML table: drop --format, or drop -w");
    }
    let html = html.then(|| {
        let d = AbHtml::default();
        AbHtml {
            table: args.table_attrs.clone().unwrap_or(d.table),
            tr: args.tr_attrs.clone().unwrap_or(d.tr),
            td: args.td_attrs.clone().unwrap_or(d.td),
        }
    });
    Ok(Layout {
        text: AbText {
            percentiles: !args.no_percentiles,
            confidence: !args.no_confidence,
            variable_length: args.variable_length,
        },
        html,
    })
}

/// `-b`, `-B`, `-X`, `-P`, `-E`, `-f`, `-Z` → connection setup (no `-v` tap yet).
pub(super) fn setup(args: &Args, https: bool) -> anyhow::Result<Setup> {
    if args.socket_buffer == Some(0) {
        bail!("-b 0: give the socket buffer size in bytes, e.g. -b 65536");
    }
    let bind = match &args.bind {
        Some(b) => Some(b.parse::<IpAddr>().ok().with_context(|| {
            format!("-B '{b}': give a local IP address to bind, e.g. 127.0.0.2 or ::1")
        })?),
        None => None,
    };
    let proxy = match &args.proxy {
        Some(p) => Some(proxy(p, args.proxy_auth.as_deref())?),
        None if args.proxy_auth.is_some() => {
            bail!("-P sets the proxy's credentials: add -X PROXY:PORT")
        }
        None => None,
    };
    Ok(Setup {
        socket_buffer: args.socket_buffer,
        bind,
        proxy,
        tls: tls(args, https)?,
        trace: None,
    })
}

/// `-X host:port` (IPv6 in brackets) with the `-P user:password` credentials.
fn proxy(spec: &str, credentials: Option<&str>) -> anyhow::Result<Proxy> {
    let how = "give the proxy as HOST:PORT, e.g. -X 127.0.0.1:3128 or -X [::1]:3128";
    let (host, port) = spec
        .rsplit_once(':')
        .with_context(|| format!("-X '{spec}': {how}"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port.parse::<u16>().ok().filter(|p| *p != 0);
    let (false, Some(port)) = (host.is_empty(), port) else {
        bail!("-X '{spec}': {how}");
    };
    if let Some(c) = credentials {
        // The value is a password: name the flag, never echo it.
        if !c.contains(':') {
            bail!("-P: proxy credentials are user:password (the value given has no ':')");
        }
    }
    Ok(Proxy::new(host, port, credentials))
}

/// `-E`, `-f`, `-Z` → TLS options; they need an https:// URL.
fn tls(args: &Args, https: bool) -> anyhow::Result<TlsOptions> {
    let given = args.client_cert.is_some() || args.tls_protocol.is_some() || args.ciphers.is_some();
    if given && !https {
        bail!("-E, -f and -Z apply to https:// URLs: drop them or use https://");
    }
    if let Some(path) = &args.client_cert {
        std::fs::metadata(path)
            .with_context(|| format!("-E '{}': cannot read the file", path.display()))?;
    }
    let protocol = match &args.tls_protocol {
        Some(f) => TlsProtocol::from_ab(f)?,
        None => TlsProtocol::All,
    };
    let ciphers = match &args.ciphers {
        Some(z) => client::parse_ciphers(z)?,
        None => Vec::new(),
    };
    Ok(TlsOptions {
        client_cert: args.client_cert.clone(),
        protocol,
        ciphers,
    })
}

/// ab's `-v 2` preamble: the request header as sent, credentials masked.
pub(super) fn describe(load: &LoadConfig) -> String {
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
pub(super) fn log_head(bytes: &[u8], verbosity: u8) -> String {
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

/// Print `-v` output where ab prints it, stdout, unless the report there is
/// JSON, CSV or Markdown (then stderr, so the document stays parseable).
/// A closed pipe ends the log quietly (the report write reports it).
pub(super) fn verbose(format: Format, text: &str) {
    let _ = if format == Format::Text {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
}

/// The `-v 2` tap: every response head, logged as ab logs it.
pub(super) fn trace(format: Format, verbosity: u8) -> HeadTrace {
    HeadTrace(Arc::new(move |bytes: &[u8]| {
        verbose(format, &log_head(bytes, verbosity))
    }))
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
    fn proxy_flags_never_echo_the_password() {
        let e = format!("{:#}", proxy("127.0.0.1:3128", Some("s3cret")).unwrap_err());
        assert!(e.starts_with("-P:") && !e.contains("s3cret"), "{e}");
        assert!(proxy("127.0.0.1", None).is_err());
        assert!(proxy("[::1]:3128", Some("u:p")).is_ok());
        assert!(proxy(":3128", None).is_err());
    }
}
