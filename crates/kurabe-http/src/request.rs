//! One HTTP request as `kurabe http`'s flags and a plan's `http` workload
//! both describe it, resolved into the method, headers and body the load
//! generator sends.
//!
//! Owns the request's defaults and order, so the same settings send the
//! same bytes from the command line and from a plan: the method (explicit,
//! else implied by the body flag, else GET), then headers in the order
//! extra headers, `Cookie`, `Authorization`, `Content-Type` (`text/plain`
//! when there is a body and no type is given, as ab sends). Must not read
//! files or know flag syntax: callers hand in values and the names their
//! users wrote them under ([`Names`]), which the errors quote.

use crate::header::{self, HeaderError};

/// Timeout of one request when none is given (ab's `-s` default).
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The largest body one request may have (a body file, a set's `@file`,
/// a HAR entry's `postData`): 64 MiB, as `kurabe serve`'s bodies
/// ([`crate::serve::MAX_BODY_BYTES`]). A body is held in memory and sent
/// whole, so a larger one is refused before the run.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// A request body, read once and then shared, never copied: every
/// connection of a run, of either protocol, sends these same bytes (a
/// body at [`MAX_BODY_BYTES`] is held once, whatever `-c` or
/// `--pipeline`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body(std::sync::Arc<Vec<u8>>);

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Body {
        Body(std::sync::Arc::new(bytes))
    }
}

impl std::ops::Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// The settings that shape one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestSpec {
    /// Method asked for explicitly (`-m`, a plan's `method`).
    pub method: Option<String>,
    /// Method implied by other settings (`-i` HEAD, `-p` POST, `-u` PUT, a
    /// plan's `body_file` POST) when none is explicit; else GET.
    pub implied_method: Option<&'static str>,
    /// Extra headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// Cookies, `name=value` each, sent as one `Cookie` header.
    pub cookies: Vec<String>,
    /// Basic authentication, `user:password`.
    pub auth: Option<String>,
    /// Content-Type of the body.
    pub content_type: Option<String>,
    /// The body, already read.
    pub body: Option<Vec<u8>>,
}

/// What the user called each load setting, for error messages: the flag
/// on the command line ([`Names::FLAGS`]) or the key in a plan's `http`
/// table ([`Names::PLAN`]). One field per [`kurabe_model::load::LoadSpec`]
/// field a message can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// The URL (`URL`, `http.url`).
    pub url: &'static str,
    /// The method's name (`-m`, `method`).
    pub method: &'static str,
    /// Extra headers (`-H`, `headers`).
    pub headers: &'static str,
    /// The body file (`-p` or `-u`, `body_file`).
    pub body_file: &'static str,
    /// The inline body (`body_base64`; no flag).
    pub body_base64: &'static str,
    /// Cookies (`-C`, `cookies`).
    pub cookies: &'static str,
    /// Basic authentication (`-A`, `auth`).
    pub auth: &'static str,
    /// Content-Type (`-T`, `content_type`).
    pub content_type: &'static str,
    /// The request set (`--targets` or `--urls-from-file`, `targets`).
    pub targets: &'static str,
    /// The set's format (`--targets-format`, `targets_format`).
    pub targets_format: &'static str,
    /// The order of the set's targets (`--order`, `order`).
    pub order: &'static str,
    /// The seed of a random order (`--seed`, `seed`).
    pub seed: &'static str,
    /// Requests to perform (`-n`, `requests`).
    pub requests: &'static str,
    /// Length of the measured phase (`-t`, `duration`).
    pub duration: &'static str,
    /// Unmeasured load first (`--warmup`, `warmup`).
    pub warmup: &'static str,
    /// Concurrent connections (`-c`, `concurrency`).
    pub concurrency: &'static str,
    /// Open-model rate (`--rate`, `rate`).
    pub rate: &'static str,
    /// Stages of the rate (`--stage`, `stages`).
    pub stages: &'static str,
    /// k6's executor name (plans only: `executor`).
    pub executor: &'static str,
    /// Client threads (`--threads`, `threads`).
    pub threads: &'static str,
    /// Keep-alive (`-k`, `keep_alive`).
    pub keep_alive: &'static str,
    /// HTTP/1.1 pipelining (`--pipeline`, `pipeline`).
    pub pipeline: &'static str,
    /// HTTP/2 (`--http2`, `http2`).
    pub http2: &'static str,
    /// HTTP/3 (`--http3`, `http3`).
    pub http3: &'static str,
    /// Streams per connection (`--streams`, `streams`).
    pub streams: &'static str,
    /// The I/O engine (`--engine`, `engine`).
    pub engine: &'static str,
    /// Per-request timeout (`-s`, `timeout`).
    pub timeout: &'static str,
    /// Name folding of the breakdown (`--group`, `group`).
    pub group: &'static str,
    /// Response checks (`--check`, `checks`).
    pub checks: &'static str,
    /// Thresholds (`--threshold`, `thresholds`).
    pub thresholds: &'static str,
    /// TLS protocol (`-f`, `tls_protocol`).
    pub tls_protocol: &'static str,
    /// Cipher suites (`-Z`, `ciphers`).
    pub ciphers: &'static str,
    /// Client certificate (`-E`, `client_cert`).
    pub client_cert: &'static str,
    /// CA certificates to trust (`--cacert`, `ca_file`).
    pub ca_file: &'static str,
    /// HTTP proxy (`-X`, `proxy`).
    pub proxy: &'static str,
    /// The proxy's credentials (`-P`, `proxy_auth`).
    pub proxy_auth: &'static str,
    /// Local bind address (`-B`, `bind`).
    pub bind: &'static str,
    /// Socket buffer size (`-b`, `socket_buffer`).
    pub socket_buffer: &'static str,
}

impl Names {
    /// `kurabe http`'s flags (ab's letters and kurabe's long flags).
    pub const FLAGS: Names = Names {
        url: "URL",
        method: "-m",
        headers: "-H",
        body_file: "-p",
        body_base64: "body_base64",
        cookies: "-C",
        auth: "-A",
        content_type: "-T",
        targets: "--targets",
        targets_format: "--targets-format",
        order: "--order",
        seed: "--seed",
        requests: "-n",
        duration: "-t",
        warmup: "--warmup",
        concurrency: "-c",
        rate: "--rate",
        stages: "--stage",
        executor: "executor",
        threads: "--threads",
        keep_alive: "-k",
        pipeline: "--pipeline",
        http2: "--http2",
        http3: "--http3",
        streams: "--streams",
        engine: "--engine",
        timeout: "-s",
        group: "--group",
        checks: "--check",
        thresholds: "--threshold",
        tls_protocol: "-f",
        ciphers: "-Z",
        client_cert: "-E",
        ca_file: "--cacert",
        proxy: "-X",
        proxy_auth: "-P",
        bind: "-B",
        socket_buffer: "-b",
    };

    /// [`Names::FLAGS`] as given: `-u` for a PUT body (`put_body`), and
    /// `--urls-from-file` for a set of URLs (`urls_file`).
    pub fn flags_given(put_body: bool, urls_file: bool) -> Names {
        Names {
            body_file: if put_body { "-u" } else { "-p" },
            targets: match urls_file {
                true => "--urls-from-file",
                false => "--targets",
            },
            ..Names::FLAGS
        }
    }

    /// The keys of a plan's `http = { … }` table (and of a fleet's stored spec).
    pub const PLAN: Names = Names {
        url: "http.url",
        method: "http.method",
        headers: "http.headers",
        body_file: "http.body_file",
        body_base64: "http.body_base64",
        cookies: "http.cookies",
        auth: "http.auth",
        content_type: "http.content_type",
        targets: "http.targets",
        targets_format: "http.targets_format",
        order: "http.order",
        seed: "http.seed",
        requests: "http.requests",
        duration: "http.duration",
        warmup: "http.warmup",
        concurrency: "http.concurrency",
        rate: "http.rate",
        stages: "http.stages",
        executor: "http.executor",
        threads: "http.threads",
        keep_alive: "http.keep_alive",
        pipeline: "http.pipeline",
        http2: "http.http2",
        http3: "http.http3",
        streams: "http.streams",
        engine: "http.engine",
        timeout: "http.timeout",
        group: "http.group",
        checks: "http.checks",
        thresholds: "http.thresholds",
        tls_protocol: "http.tls_protocol",
        ciphers: "http.ciphers",
        client_cert: "http.client_cert",
        ca_file: "http.ca_file",
        proxy: "http.proxy",
        proxy_auth: "http.proxy_auth",
        bind: "http.bind",
        socket_buffer: "http.socket_buffer",
    };
}

/// A request setting that cannot be sent; the message names the setting.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Not an HTTP method token.
    #[error("{name} '{value}': a method is a single word of letters, e.g. {name} DELETE")]
    Method {
        /// The setting's name.
        name: &'static str,
        /// What was given.
        value: String,
    },
    /// Credentials without the `:` between user and password.
    #[error("{name} '{value}': give user:password")]
    Auth {
        /// The setting's name.
        name: &'static str,
        /// What was given.
        value: String,
    },
    /// A header name or value that would break the request.
    #[error("{name}: {problem}")]
    Header {
        /// The setting's name.
        name: &'static str,
        /// What is wrong with it (not a `source`: the message says it once).
        problem: HeaderError,
    },
}

/// The resolved request: what goes on the wire before the framing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Upper-case method.
    pub method: String,
    /// Headers in sending order (Host, Content-Length and Connection are the engine's).
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
}

impl RequestSpec {
    /// Check the settings and resolve the defaults.
    pub fn build(self, names: &Names) -> Result<Request, RequestError> {
        Ok(Request {
            method: self.method(names)?,
            headers: self.header_list(names)?,
            body: self.body,
        })
    }

    fn method(&self, names: &Names) -> Result<String, RequestError> {
        let Some(m) = &self.method else {
            return Ok(self.implied_method.unwrap_or("GET").to_owned());
        };
        let token = |b: u8| b.is_ascii_alphabetic() || b == b'-' || b == b'_';
        if m.is_empty() || !m.bytes().all(token) {
            return Err(RequestError::Method {
                name: names.method,
                value: m.clone(),
            });
        }
        Ok(m.to_ascii_uppercase())
    }

    fn header_list(&self, names: &Names) -> Result<Vec<(String, String)>, RequestError> {
        let checked = |name: &'static str, k: &str, v: &str| {
            header::check(k, v).map_err(|problem| RequestError::Header { name, problem })
        };
        let mut out = Vec::with_capacity(self.headers.len() + 3);
        for (k, v) in &self.headers {
            checked(names.headers, k, v)?;
            out.push((k.clone(), v.clone()));
        }
        for c in &self.cookies {
            checked(names.cookies, "Cookie", c)?;
        }
        if !self.cookies.is_empty() {
            out.push(("Cookie".into(), self.cookies.join("; ")));
        }
        if let Some(auth) = &self.auth {
            if !auth.contains(':') {
                return Err(RequestError::Auth {
                    name: names.auth,
                    value: auth.clone(),
                });
            }
            out.push(("Authorization".into(), crate::auth::basic(auth)));
        }
        let typed = out
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        match (&self.content_type, &self.body) {
            (Some(t), _) => {
                checked(names.content_type, "Content-Type", t)?;
                out.push(("Content-Type".into(), t.clone()));
            }
            (None, Some(_)) if !typed => out.push(("Content-Type".into(), "text/plain".into())),
            _ => {}
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: Names = Names::FLAGS;

    fn spec() -> RequestSpec {
        RequestSpec {
            headers: vec![("X-A".into(), "1".into())],
            cookies: vec!["a=1".into(), "b=2".into()],
            auth: Some("Aladdin:open sesame".into()),
            body: Some(b"hi".to_vec()),
            implied_method: Some("POST"),
            ..RequestSpec::default()
        }
    }

    #[test]
    fn defaults_and_order() {
        let r = spec().build(&NAMES).unwrap();
        assert_eq!(r.method, "POST");
        let names: Vec<&str> = r.headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["X-A", "Cookie", "Authorization", "Content-Type"]);
        assert_eq!(r.headers[1].1, "a=1; b=2");
        assert_eq!(r.headers[2].1, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(r.headers[3].1, "text/plain");
        let get = RequestSpec::default().build(&NAMES).unwrap();
        assert_eq!((get.method.as_str(), get.headers.len()), ("GET", 0));
    }

    #[test]
    fn explicit_settings_win() {
        let mut s = spec();
        s.method = Some("patch".into());
        s.content_type = Some("application/json".into());
        let r = s.build(&NAMES).unwrap();
        assert_eq!(r.method, "PATCH");
        assert_eq!(r.headers.last().unwrap().1, "application/json");
        let mut s = spec();
        s.headers = vec![("content-type".into(), "text/csv".into())];
        let r = s.build(&NAMES).unwrap();
        assert!(!r.headers.iter().any(|(_, v)| v == "text/plain"), "{r:?}");
    }

    #[test]
    fn errors_name_the_setting() {
        let bad = |f: fn(&mut RequestSpec)| {
            let mut s = spec();
            f(&mut s);
            s.build(&NAMES).unwrap_err().to_string()
        };
        assert_eq!(
            bad(|s| s.method = Some("GE T".into())),
            "-m 'GE T': a method is a single word of letters, e.g. -m DELETE"
        );
        assert_eq!(
            bad(|s| s.auth = Some("nocolon".into())),
            "-A 'nocolon': give user:password"
        );
        assert!(bad(|s| s.cookies = vec!["a\nb".into()]).starts_with("-C: "));
        assert!(bad(|s| s.headers = vec![("X Y".into(), "1".into())]).starts_with("-H: "));
        assert!(bad(|s| s.content_type = Some("a\rb".into())).starts_with("-T: "));
    }
}
