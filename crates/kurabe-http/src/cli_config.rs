//! `kurabe http`'s load flags (ab's letters and kurabe's long flags), as
//! plain values, resolved and checked into one [`LoadConfig`].
//!
//! Owns the rules that tie the flags together (`-c` against `-n`,
//! pipelining needs keep-alive, streams need HTTP/2, TLS options need
//! https://, a proxy speaks HTTP/1.1) and ab's defaults (one request, GET,
//! 30 s timeout). Every error names the flag and the fix in one line, and
//! never repeats a `-P` or `-A` password. Must not know clap: the binary
//! copies its parsed arguments into [`LoadFlags`]; the request itself is
//! built by [`RequestSpec`], which plans share.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::{
    self, Engine, LoadConfig, Proxy, Setup, StopCondition, Target, TlsOptionError, TlsOptions,
    TlsProtocol, UrlError,
};
use crate::request::{Names, RequestError, RequestSpec, DEFAULT_TIMEOUT};

/// What each request setting is called on the command line, for errors.
pub const FLAG_NAMES: Names = Names {
    method: "-m",
    headers: "-H",
    cookies: "-C",
    auth: "-A",
    content_type: "-T",
};

/// The load flags of `kurabe http`, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFlags {
    /// The URL.
    pub url: String,
    /// `-n`: requests to perform.
    pub requests: Option<u64>,
    /// `-t`: time limit.
    pub time_limit: Option<Duration>,
    /// `-c`: concurrent connections.
    pub concurrency: u32,
    /// `-s`: timeout per request.
    pub timeout: Duration,
    /// `-k`: keep-alive.
    pub keep_alive: bool,
    /// `--pipeline`: requests in flight per connection.
    pub pipeline: u32,
    /// `--http2`.
    pub http2: bool,
    /// `--streams`: HTTP/2 streams per connection.
    pub streams: Option<u32>,
    /// `--rate`: requests per second in total (open model).
    pub rate: Option<f64>,
    /// `--threads`: client threads.
    pub threads: Option<u32>,
    /// `--warmup`: unmeasured load first.
    pub warmup: Option<Duration>,
    /// `--abort-on-error`.
    pub abort_on_error: bool,
    /// `-l`: accept variable document length.
    pub variable_length: bool,
    /// `--insecure`: no certificate verification.
    pub insecure: bool,
    /// `--engine`.
    pub engine: Engine,
    /// The request flags.
    pub request: RequestFlags,
    /// The connection-setup flags.
    pub setup: SetupFlags,
}

impl Default for LoadFlags {
    /// ab's defaults: one request on one connection, 30 s timeout, no keep-alive.
    fn default() -> Self {
        LoadFlags {
            url: String::new(),
            requests: None,
            time_limit: None,
            concurrency: 1,
            timeout: DEFAULT_TIMEOUT,
            keep_alive: false,
            pipeline: 1,
            http2: false,
            streams: None,
            rate: None,
            threads: None,
            warmup: None,
            abort_on_error: false,
            variable_length: false,
            insecure: false,
            engine: Engine::Auto,
            request: RequestFlags::default(),
            setup: SetupFlags::default(),
        }
    }
}

/// The flags that shape the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFlags {
    /// `-m`: the method.
    pub method: Option<String>,
    /// `-i`: HEAD.
    pub head: bool,
    /// `-p`: file with the body to POST.
    pub post_file: Option<PathBuf>,
    /// `-u`: file with the body to PUT.
    pub put_file: Option<PathBuf>,
    /// `-T`: Content-Type of the body.
    pub content_type: Option<String>,
    /// `-H`: "Name: value" headers.
    pub headers: Vec<String>,
    /// `-C`: cookies.
    pub cookies: Vec<String>,
    /// `-A`: "user:password".
    pub auth: Option<String>,
}

/// ab's connection-setup flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupFlags {
    /// `-b`: socket buffer size, bytes.
    pub socket_buffer: Option<u32>,
    /// `-B`: local address to bind.
    pub bind: Option<String>,
    /// `-X`: proxy, HOST:PORT.
    pub proxy: Option<String>,
    /// `-P`: the proxy's "user:password".
    pub proxy_auth: Option<String>,
    /// `-E`: client certificate file.
    pub client_cert: Option<PathBuf>,
    /// `-f`: TLS protocol.
    pub tls_protocol: Option<String>,
    /// `-Z`: cipher suites.
    pub ciphers: Option<String>,
}

/// A flag, or a combination of flags, that cannot be run; one line naming
/// the flag and the fix.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// The URL does not parse.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// A value or combination the load generator cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A request setting that cannot be sent.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// A `-f` or `-Z` value rustls cannot honour.
    #[error(transparent)]
    Tls(#[from] TlsOptionError),
    /// A file named by a flag cannot be read.
    #[error("{what}")]
    File {
        /// The flag and the file, e.g. "cannot read the -p file 'x': check the path".
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `Err(FlagError::Invalid(…))` with a formatted message.
macro_rules! invalid {
    ($($t:tt)*) => { return Err(FlagError::Invalid(format!($($t)*))) };
}

impl LoadFlags {
    /// Check the flags and resolve them into a load test on a machine with
    /// `ncpus` CPUs (the default thread count leaves a loopback server half).
    pub fn resolve(&self, ncpus: u32) -> Result<LoadConfig, FlagError> {
        let target = Target::parse(&self.url)?;
        let stop = self.checked_stop()?;
        self.check_connections()?;
        let request = request_spec(&self.request)?.build(&FLAG_NAMES)?;
        let loopback = client::is_loopback(&target.host);
        let threads = self
            .threads
            .unwrap_or_else(|| client::default_threads(ncpus, self.concurrency, loopback));
        let setup = self.setup.resolve(target.tls)?;
        Ok(LoadConfig {
            target,
            method: request.method,
            headers: request.headers,
            body: request.body,
            concurrency: self.concurrency,
            threads: threads.min(self.concurrency),
            keep_alive: self.keep_alive,
            pipeline: self.pipeline,
            http2: self.http2,
            streams: self.streams.unwrap_or(1),
            stop,
            rate: self.rate,
            warmup: self.warmup,
            timeout: self.timeout,
            abort_on_error: self.abort_on_error,
            check_length: !self.variable_length,
            insecure: self.insecure,
            // The caller opens it once its other outputs are checked.
            gnuplot_file: None,
            setup,
            engine: self.engine,
        })
    }

    /// `-c`, then `-n`/`-t` → when to stop, with `-c` no more than `-n`.
    fn checked_stop(&self) -> Result<StopCondition, FlagError> {
        if self.concurrency == 0 {
            invalid!("-c 0: the concurrency must be at least 1");
        }
        let stop = stop_condition(self.requests, self.time_limit)?;
        if let StopCondition::Requests(n) | StopCondition::RequestsOrDuration(n, _) = stop {
            if u64::from(self.concurrency) > n {
                invalid!(
                    "-c {} is more than -n {n}: lower -c or raise -n (ab refuses this too)",
                    self.concurrency
                );
            }
        }
        Ok(stop)
    }

    /// How the connections are used: pipelining, HTTP/2, rate, threads, timeout.
    fn check_connections(&self) -> Result<(), FlagError> {
        if self.pipeline == 0 {
            invalid!("--pipeline 0: use 1 (no pipelining) or more");
        }
        self.check_http2()?;
        if self.pipeline > 1 && !self.keep_alive {
            invalid!("--pipeline {} needs keep-alive: add -k", self.pipeline);
        }
        if let Some(r) = self.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
            invalid!("--rate {r}: give a positive number of requests per second");
        }
        if self.threads == Some(0) {
            invalid!("--threads 0: use at least 1 (or leave it out for the default)");
        }
        if self.timeout.is_zero() {
            invalid!("-s 0: the request timeout must be positive");
        }
        Ok(())
    }

    /// `--http2` and `--streams`: streams need HTTP/2, pipelining is HTTP/1.1's.
    fn check_http2(&self) -> Result<(), FlagError> {
        if self.streams == Some(0) {
            invalid!("--streams 0: use at least 1 stream per connection");
        }
        if self.http2 && self.setup.proxy.is_some() {
            invalid!("-X sends HTTP/1.1 requests to a proxy; drop --http2 or -X");
        }
        if self.http2 && self.pipeline > 1 {
            invalid!("--pipeline is HTTP/1.1 pipelining; with --http2 use --streams N for requests in flight per connection");
        }
        Ok(())
    }
}

/// `-n` and `-t` → when to stop. ab's default is one request.
fn stop_condition(n: Option<u64>, t: Option<Duration>) -> Result<StopCondition, FlagError> {
    if n == Some(0) {
        invalid!("-n 0: give at least 1 request (or use -t alone to run for a time)");
    }
    if t.is_some_and(|t| t.is_zero()) {
        invalid!("-t 0: the time limit must be positive");
    }
    Ok(match (n, t) {
        (Some(n), Some(t)) => StopCondition::RequestsOrDuration(n, t),
        (Some(n), None) => StopCondition::Requests(n),
        (None, Some(t)) => StopCondition::Duration(t),
        (None, None) => StopCondition::Requests(1),
    })
}

/// The request flags as the request spec plans share: the method `-m`,
/// else the one `-i` (HEAD), `-p` (POST) or `-u` (PUT) implies.
fn request_spec(f: &RequestFlags) -> Result<RequestSpec, FlagError> {
    let body = read_body(f.post_file.as_deref(), f.put_file.as_deref())?;
    let implied_method = match (f.head, f.post_file.is_some(), f.put_file.is_some()) {
        (true, _, _) => Some("HEAD"),
        (_, true, _) => Some("POST"),
        (_, _, true) => Some("PUT"),
        _ => None,
    };
    Ok(RequestSpec {
        method: f.method.clone(),
        implied_method,
        headers: f
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?,
        cookies: f.cookies.clone(),
        auth: f.auth.clone(),
        content_type: f.content_type.clone(),
        body,
    })
}

/// The `-p` / `-u` file's contents.
fn read_body(post: Option<&Path>, put: Option<&Path>) -> Result<Option<Vec<u8>>, FlagError> {
    let (flag, path) = match (post, put) {
        (Some(_), Some(_)) => invalid!("-p and -u cannot be used together: choose one body file"),
        (Some(p), None) => ("-p", p),
        (None, Some(p)) => ("-u", p),
        (None, None) => return Ok(None),
    };
    std::fs::read(path)
        .map(Some)
        .map_err(|source| FlagError::File {
            what: format!(
                "cannot read the {flag} file '{}': check the path",
                path.display()
            ),
            source,
        })
}

/// `"Name: value"` → (name, value).
fn parse_header(h: &str) -> Result<(String, String), FlagError> {
    let Some((name, value)) = h.split_once(':') else {
        invalid!("-H '{h}': a header is \"Name: value\"");
    };
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

impl SetupFlags {
    /// `-b`, `-B`, `-X`, `-P`, `-E`, `-f`, `-Z` → connection setup (no `-v` tap).
    pub fn resolve(&self, https: bool) -> Result<Setup, FlagError> {
        if self.socket_buffer == Some(0) {
            invalid!("-b 0: give the socket buffer size in bytes, e.g. -b 65536");
        }
        let bind = match &self.bind {
            Some(b) => Some(b.parse::<IpAddr>().map_err(|_| {
                FlagError::Invalid(format!(
                    "-B '{b}': give a local IP address to bind, e.g. 127.0.0.2 or ::1"
                ))
            })?),
            None => None,
        };
        let proxy = match &self.proxy {
            Some(p) => Some(proxy(p, self.proxy_auth.as_deref())?),
            None if self.proxy_auth.is_some() => {
                invalid!("-P sets the proxy's credentials: add -X PROXY:PORT")
            }
            None => None,
        };
        Ok(Setup {
            socket_buffer: self.socket_buffer,
            bind,
            proxy,
            tls: self.tls(https)?,
            trace: None,
        })
    }

    /// `-E`, `-f`, `-Z` → TLS options; they need an https:// URL.
    fn tls(&self, https: bool) -> Result<TlsOptions, FlagError> {
        let given =
            self.client_cert.is_some() || self.tls_protocol.is_some() || self.ciphers.is_some();
        if given && !https {
            invalid!("-E, -f and -Z apply to https:// URLs: drop them or use https://");
        }
        if let Some(path) = &self.client_cert {
            std::fs::metadata(path).map_err(|source| FlagError::File {
                what: format!("-E '{}': cannot read the file", path.display()),
                source,
            })?;
        }
        Ok(TlsOptions {
            client_cert: self.client_cert.clone(),
            protocol: match &self.tls_protocol {
                Some(f) => TlsProtocol::from_ab(f)?,
                None => TlsProtocol::All,
            },
            ciphers: match &self.ciphers {
                Some(z) => client::parse_ciphers(z)?,
                None => Vec::new(),
            },
        })
    }
}

/// `-X host:port` (IPv6 in brackets) with the `-P user:password` credentials.
fn proxy(spec: &str, credentials: Option<&str>) -> Result<Proxy, FlagError> {
    let how = "give the proxy as HOST:PORT, e.g. -X 127.0.0.1:3128 or -X [::1]:3128";
    let Some((host, port)) = spec.rsplit_once(':') else {
        invalid!("-X '{spec}': {how}");
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port.parse::<u16>().ok().filter(|p| *p != 0);
    let (false, Some(port)) = (host.is_empty(), port) else {
        invalid!("-X '{spec}': {how}");
    };
    // The value is a password: name the flag, never echo it.
    if credentials.is_some_and(|c| !c.contains(':')) {
        invalid!("-P: proxy credentials are user:password (the value given has no ':')");
    }
    Ok(Proxy::new(host, port, credentials))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(url: &str) -> LoadFlags {
        LoadFlags {
            url: url.into(),
            ..LoadFlags::default()
        }
    }

    fn resolve(f: LoadFlags) -> Result<LoadConfig, FlagError> {
        f.resolve(4)
    }

    fn err(f: LoadFlags) -> String {
        resolve(f).unwrap_err().to_string()
    }

    #[test]
    fn ab_defaults() {
        let c = resolve(flags("http://127.0.0.1:8080/x")).unwrap();
        assert_eq!(c.method, "GET");
        assert_eq!(c.stop, StopCondition::Requests(1));
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert!(!c.keep_alive && c.check_length && !c.abort_on_error);
        assert_eq!((c.concurrency, c.threads), (1, 1));
    }

    #[test]
    fn stop_conditions_have_no_hidden_cap() {
        let stop = |n, t| {
            let f = LoadFlags {
                requests: n,
                time_limit: t,
                concurrency: 500,
                ..flags("http://h/")
            };
            resolve(f).map(|c| c.stop)
        };
        let five = Duration::from_secs(5);
        // -t alone allows any -c: there is no request count to exceed.
        assert_eq!(
            stop(None, Some(five)).unwrap(),
            StopCondition::Duration(five)
        );
        assert_eq!(
            stop(Some(600), Some(five)).unwrap(),
            StopCondition::RequestsOrDuration(600, five)
        );
        assert!(stop(Some(10), None).is_err());
    }

    #[test]
    fn invalid_input_names_the_flag_and_the_fix() {
        let with = |edit: fn(&mut LoadFlags)| {
            let mut f = flags("http://h/");
            f.requests = Some(5);
            edit(&mut f);
            err(f)
        };
        assert!(with(|f| f.concurrency = 0).contains("-c 0"));
        assert!(with(|f| f.concurrency = 10).contains("lower -c or raise -n"));
        assert!(with(|f| f.pipeline = 4).contains("add -k"));
        assert!(with(|f| f.rate = Some(0.0)).contains("--rate"));
        assert!(with(|f| f.threads = Some(0)).contains("--threads"));
        assert!(with(|f| f.requests = Some(0)).contains("-n 0"));
        assert!(with(|f| f.streams = Some(0)).contains("--streams 0"));
        assert!(
            with(|f| f.request.post_file = Some("/nonexistent/kurabe-body".into()))
                .contains("cannot read the -p file")
        );
        assert!(with(|f| f.url = "ftp://h/".into()).contains("invalid URL"));
        assert!(with(|f| f.request.headers = vec!["NoColon".into()]).contains("-H 'NoColon'"));
        assert!(with(|f| f.request.auth = Some("nopass".into())).contains("user:password"));
        assert!(with(|f| f.request.method = Some("GE T".into())).contains("-m"));
        assert!(with(|f| f.setup.bind = Some("nowhere".into())).contains("-B 'nowhere'"));
        assert!(with(|f| f.setup.ciphers = Some("X".into())).contains("https://"));
    }

    #[test]
    fn body_file_method_and_content_type() {
        let dir = std::env::temp_dir().join(format!("kurabe-cli-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.json");
        std::fs::write(&body, b"{\"a\":1}").unwrap();
        let mut f = flags("http://h/");
        f.request.post_file = Some(body.clone());
        f.request.content_type = Some("application/json".into());
        let c = resolve(f.clone()).unwrap();
        assert_eq!(c.method, "POST");
        assert_eq!(c.body.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert!(c
            .headers
            .contains(&("Content-Type".into(), "application/json".into())));
        f.request = RequestFlags {
            put_file: Some(body),
            ..RequestFlags::default()
        };
        let c = resolve(f.clone()).unwrap();
        assert_eq!(c.method, "PUT");
        assert!(c
            .headers
            .contains(&("Content-Type".into(), "text/plain".into())));
        f.request = RequestFlags {
            head: true,
            ..RequestFlags::default()
        };
        assert_eq!(resolve(f.clone()).unwrap().method, "HEAD");
        f.request.method = Some("delete".into());
        assert_eq!(resolve(f).unwrap().method, "DELETE");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_cookies_and_auth() {
        let mut f = flags("http://h/");
        f.request = RequestFlags {
            headers: vec!["X-A: 1".into(), "Host:example.test".into()],
            cookies: vec!["a=1".into(), "b=2".into()],
            auth: Some("Aladdin:open sesame".into()),
            ..RequestFlags::default()
        };
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            resolve(f).unwrap().headers,
            pairs(&[
                ("X-A", "1"),
                ("Host", "example.test"),
                ("Cookie", "a=1; b=2"),
                ("Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            ])
        );
    }

    #[test]
    fn thread_rule_leaves_cores_to_a_local_server() {
        let mut f = flags("http://[::1]:9/");
        (f.concurrency, f.requests) = (50, Some(100));
        assert_eq!(resolve(f).unwrap().threads, 2);
        let mut f = flags("http://h/");
        (f.concurrency, f.requests, f.threads) = (3, Some(100), Some(8));
        assert_eq!(
            resolve(f).unwrap().threads,
            3,
            "never more threads than connections"
        );
    }

    #[test]
    fn proxy_flags_never_echo_the_password() {
        let e = proxy("127.0.0.1:3128", Some("s3cret"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-P:") && !e.contains("s3cret"), "{e}");
        assert!(proxy("127.0.0.1", None).is_err());
        assert!(proxy("[::1]:3128", Some("u:p")).is_ok());
        assert!(proxy(":3128", None).is_err());
    }
}
