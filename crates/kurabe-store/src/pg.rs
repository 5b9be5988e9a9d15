//! Connecting to PostgreSQL: settings from a `postgres://` URL and the
//! standard `PG*` environment variables, TLS through rustls when asked for.
//!
//! Owns turning what the user typed into a [`postgres::Client`], the way
//! `psql` would: what the URL leaves out comes from `PGHOST`, `PGPORT`,
//! `PGUSER`, `PGDATABASE`, `PGPASSWORD`, `PGSSLMODE`, `PGSSLROOTCERT`,
//! `PGCONNECT_TIMEOUT`, `PGAPPNAME`, then the password file (`PGPASSFILE`,
//! else `~/.pgpass`). Passwords never appear in anything this module
//! returns for display: [`redact`] and [`Target`]'s `Display` leave them out,
//! and every error names the server through them.
//!
//! TLS (`sslmode`, as libpq reads it):
//! - `disable`, `allow`, `prefer` or unset: no TLS. kurabe does not try TLS
//!   opportunistically; ask for it with `require` or stronger.
//! - `require`: TLS, the server's certificate is not checked (libpq's meaning).
//! - `verify-ca`: TLS, the certificate must chain to a trusted root; its name
//!   is not checked.
//! - `verify-full`: TLS, chain and host name checked.
//!
//! Trusted roots: `sslrootcert` / `PGSSLROOTCERT` (a PEM file), else
//! `~/.postgresql/root.crt` when it exists, else the system store
//! (`sslrootcert=system` asks for it explicitly).
//!
//! Gaps against libpq, by choice: no client certificates (`sslcert`,
//! `sslkey`), no `PGSERVICE`/`pg_service.conf`, no `PGHOSTADDR`, no
//! key=value conninfo strings (URLs only), `sslmode=prefer` means no TLS.
//!
//! It must not print, and must not open a store (that is [`crate::Store`]'s)
//! or know the schema: [`connect_migrated`] leaves that to `schema.rs`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kurabe_tls::{AcceptAnyCertificate, ChainOnly};
use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::ClientConfig;

use crate::StoreError;

/// How long a connection attempt may take when neither the URL
/// (`connect_timeout`) nor `PGCONNECT_TIMEOUT` says: long enough for a
/// server across the world, short enough that a wrong address fails fast.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// True for strings that name a PostgreSQL server rather than a file.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// TLS as asked for by `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// No TLS (`disable`, `allow`, `prefer`, unset).
    Off,
    /// Encrypted, certificate not checked (`require`).
    Require,
    /// Certificate chain checked, name not (`verify-ca`).
    VerifyCa,
    /// Chain and host name checked (`verify-full`).
    VerifyFull,
}

impl TlsMode {
    fn parse(s: &str) -> Option<TlsMode> {
        Some(match s {
            "disable" | "allow" | "prefer" => TlsMode::Off,
            "require" => TlsMode::Require,
            "verify-ca" => TlsMode::VerifyCa,
            "verify-full" => TlsMode::VerifyFull,
            _ => return None,
        })
    }
}

/// A resolved connection target: every setting from the URL and the
/// environment, ready to connect. `Display` shows it without the password.
#[derive(Clone)]
pub struct Target {
    config: Config,
    tls: TlsMode,
    root_cert: Option<PathBuf>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // postgres::Config's own Debug redacts the password, but say it
        // here too rather than rely on it.
        f.debug_struct("Target")
            .field("server", &self.to_string())
            .field("tls", &self.tls)
            .finish()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = self.config.get_user().unwrap_or("");
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self.config.get_dbname().unwrap_or(user);
        write!(f, "postgres://")?;
        if !user.is_empty() {
            write!(f, "{user}@")?;
        }
        write!(f, "{}:{port}/{db}", hosts.join(","))
    }
}

impl Target {
    /// Resolve `url` with the process environment and the password file.
    pub fn from_url(url: &str) -> Result<Target, StoreError> {
        Target::resolve(url, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`Target::from_url`] with the environment as a lookup function.
    pub fn resolve(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Target, StoreError> {
        let bad = |reason: String| StoreError::PgUrl {
            url: redact(url),
            reason,
        };
        if !is_url(url) {
            return Err(bad("it must start with postgres:// or postgresql://".into()));
        }
        // postgres::Config knows only disable/prefer/require, so kurabe
        // takes the TLS parameters out of the URL and applies them itself.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let params = TlsParams::take(query);
        let env_ports = env_ports(&env, &bad)?;
        // The URL parser puts 5432 on a host written without a port, which
        // would hide PGPORT; libpq uses PGPORT there, so write it in first.
        let base = match &env_ports {
            Some(ports) => with_default_ports(base, ports),
            None => base.to_owned(),
        };
        let rebuilt = if params.kept.is_empty() {
            base
        } else {
            format!("{base}?{}", params.kept.join("&"))
        };
        let mut config: Config = rebuilt.parse().map_err(|e: postgres::Error| {
            // The parser's message names a field, never a value.
            bad(e.to_string())
        })?;
        env_hosts(&mut config, &env);
        if config.get_ports().is_empty() {
            for &port in env_ports.iter().flatten() {
                config.port(port);
            }
        }
        env_identity(&mut config, &env);
        env_connect_timeout(&mut config, &env, &bad)?;
        if config.get_password().is_none() {
            if let Some(p) = env("PGPASSWORD") {
                config.password(&p);
            } else if let Some(p) = passfile_password(&config, &env) {
                config.password(&p);
            }
        }
        let tls = tls_mode(params.sslmode, &env, &bad)?;
        config.ssl_mode(if tls == TlsMode::Off {
            SslMode::Disable
        } else {
            SslMode::Require
        });
        let root_cert = match params.rootcert.or_else(|| env("PGSSLROOTCERT")).as_deref() {
            Some("system") => None,
            Some(p) => Some(PathBuf::from(p)),
            None => env("HOME")
                .map(|h| Path::new(&h).join(".postgresql/root.crt"))
                .filter(|p| p.is_file()),
        };
        Ok(Target {
            config,
            tls,
            root_cert,
        })
    }

    /// The TLS mode asked for.
    pub fn tls(&self) -> TlsMode {
        self.tls
    }

    /// The settings as the `postgres` crate takes them.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Open a connection.
    pub fn connect(&self) -> Result<Client, StoreError> {
        let failed = |cause| StoreError::PgConnect {
            server: self.to_string(),
            cause,
        };
        if self.tls == TlsMode::Off {
            return self.config.connect(NoTls).map_err(failed);
        }
        let tls = self.rustls_config()?;
        self.config
            .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            .map_err(failed)
    }

    fn rustls_config(&self) -> Result<ClientConfig, StoreError> {
        let tls_err = |reason: String| StoreError::PgTls {
            server: self.to_string(),
            reason,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err(e.to_string()))?;
        if self.tls == TlsMode::Require {
            return Ok(builder
                .dangerous()
                .with_custom_certificate_verifier(AcceptAnyCertificate::new(provider))
                .with_no_client_auth());
        }
        let mut roots = rustls::RootCertStore::empty();
        match &self.root_cert {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        tls_err(format!(
                            "cannot read sslrootcert {}: {e}; give a PEM file of CA certificates",
                            path.display()
                        ))
                    })?;
                roots.add_parsable_certificates(certs);
            }
            None => {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        if roots.is_empty() {
            return Err(tls_err(
                "no CA certificates to verify the server with; set sslrootcert=FILE \
                 (or PGSSLROOTCERT), install ca-certificates, or use sslmode=require"
                    .into(),
            ));
        }
        let webpki =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| tls_err(e.to_string()))?;
        if self.tls == TlsMode::VerifyCa {
            Ok(builder
                .dangerous()
                .with_custom_certificate_verifier(ChainOnly::new(webpki))
                .with_no_client_auth())
        } else {
            Ok(builder.with_webpki_verifier(webpki).with_no_client_auth())
        }
    }
}

/// Connect to the server `url` names, with the `PG*` environment filling in
/// what the URL leaves out (see the module docs).
pub fn connect(url: &str) -> Result<Client, StoreError> {
    Target::from_url(url)?.connect()
}

/// [`connect`], then bring the database's schema up to date (the store's
/// tables and the fleet's, one migration list): what the fleet's workers
/// and coordinators meet in. A database newer than this kurabe is refused.
pub fn connect_migrated(url: &str) -> Result<Client, StoreError> {
    connect_at(url, crate::schema::CURRENT)
}

/// [`connect`] with the schema brought to `version` (older ones for tests).
pub(crate) fn connect_at(url: &str, version: i64) -> Result<Client, StoreError> {
    let mut client = connect(url)?;
    let found = crate::schema::migrate_pg(&mut client, version)?;
    if found > crate::schema::CURRENT {
        return Err(StoreError::TooNew {
            path: redact(url).into(),
            found,
            supported: crate::schema::CURRENT,
        });
    }
    Ok(client)
}

/// `url` with any password replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let mut out = format!("{scheme}://{}", redact_userinfo(before_query));
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k == "password" => format!("{k}=***"),
                _ => p.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// A URL's authority and path with the password in its user info (if
/// any) replaced by `***`.
fn redact_userinfo(before_query: &str) -> String {
    // The last '@' ends the user info, even when a careless password holds one.
    let Some(at) = before_query.rfind('@') else {
        return before_query.to_owned();
    };
    let (userinfo, host) = (&before_query[..at], &before_query[at..]);
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***{host}"),
        None => format!("{userinfo}{host}"),
    }
}

/// A URL's query split into the TLS parameters kurabe applies itself and
/// the ones the `postgres` parser keeps.
struct TlsParams<'a> {
    sslmode: Option<String>,
    rootcert: Option<String>,
    kept: Vec<&'a str>,
}

impl<'a> TlsParams<'a> {
    fn take(query: &'a str) -> Self {
        let mut out = TlsParams {
            sslmode: None,
            rootcert: None,
            kept: Vec::new(),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sslmode" => out.sslmode = Some(percent_decode(v)),
                "sslrootcert" => out.rootcert = Some(percent_decode(v)),
                _ => out.kept.push(pair),
            }
        }
        out
    }
}

/// `PGPORT`, a port or a comma-separated list (one per host).
fn env_ports(
    env: &impl Fn(&str) -> Option<String>,
    bad: &impl Fn(String) -> StoreError,
) -> Result<Option<Vec<u16>>, StoreError> {
    let Some(p) = env("PGPORT") else {
        return Ok(None);
    };
    p.split(',')
        .map(|one| {
            one.trim()
                .parse::<u16>()
                .map_err(|_| bad(format!("PGPORT `{one}` is not a port number (1-65535)")))
        })
        .collect::<Result<Vec<u16>, _>>()
        .map(Some)
}

/// Hosts from `PGHOST` when the URL names none, else libpq's default.
fn env_hosts(config: &mut Config, env: &impl Fn(&str) -> Option<String>) {
    if !config.get_hosts().is_empty() {
        return;
    }
    match env("PGHOST") {
        Some(hosts) => {
            for h in hosts.split(',') {
                config.host(h);
            }
        }
        // libpq's default on Debian: the local server's socket.
        None if Path::new("/var/run/postgresql").is_dir() => {
            config.host_path("/var/run/postgresql");
        }
        None => {
            config.host("localhost");
        }
    }
}

/// User, database and application name from `PG*` where the URL has none.
fn env_identity(config: &mut Config, env: &impl Fn(&str) -> Option<String>) {
    if config.get_user().is_none() {
        if let Some(u) = env("PGUSER") {
            config.user(&u);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            config.dbname(&d);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name(env("PGAPPNAME").as_deref().unwrap_or("kurabe"));
    }
}

/// The connect timeout: the URL's, `PGCONNECT_TIMEOUT`, or kurabe's default.
fn env_connect_timeout(
    config: &mut Config,
    env: &impl Fn(&str) -> Option<String>,
    bad: &impl Fn(String) -> StoreError,
) -> Result<(), StoreError> {
    if config.get_connect_timeout().is_some() {
        return Ok(());
    }
    let t = match env("PGCONNECT_TIMEOUT") {
        Some(s) => Duration::from_secs(s.trim().parse::<u64>().map_err(|_| {
            bad(format!(
                "PGCONNECT_TIMEOUT `{s}` is not a number of seconds"
            ))
        })?),
        None => DEFAULT_CONNECT_TIMEOUT,
    };
    config.connect_timeout(t);
    Ok(())
}

/// The TLS mode: the URL's `sslmode`, else `PGSSLMODE`, else off.
fn tls_mode(
    from_url: Option<String>,
    env: &impl Fn(&str) -> Option<String>,
    bad: &impl Fn(String) -> StoreError,
) -> Result<TlsMode, StoreError> {
    match from_url.or_else(|| env("PGSSLMODE")).as_deref() {
        None => Ok(TlsMode::Off),
        Some(m) => TlsMode::parse(m).ok_or_else(|| {
            bad(format!(
                "sslmode `{m}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ))
        }),
    }
}

/// `base` (a URL without query) with `ports` written after each host that
/// has none; unchanged when any host has a port or there is no host.
fn with_default_ports(base: &str, ports: &[u16]) -> String {
    let Some((scheme, rest)) = base.split_once("://") else {
        return base.to_owned();
    };
    let auth_end = rest.find('/').unwrap_or(rest.len());
    let (auth, path) = rest.split_at(auth_end);
    let (userinfo, hosts) = match auth.rfind('@') {
        Some(i) => auth.split_at(i + 1),
        None => ("", auth),
    };
    let has_port = |h: &str| match h.strip_prefix('[') {
        Some(v6) => v6.contains("]:"),
        None => h.contains(':'),
    };
    if hosts.is_empty() || ports.is_empty() || hosts.split(',').any(has_port) {
        return base.to_owned();
    }
    let with: Vec<String> = hosts
        .split(',')
        .enumerate()
        .map(|(i, h)| format!("{h}:{}", ports.get(i).unwrap_or(&ports[ports.len() - 1])))
        .collect();
    format!("{scheme}://{userinfo}{}{path}", with.join(","))
}

/// Decode `%XX` escapes (URL query values); invalid escapes stay as typed.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password for `config` from the password file, as libpq finds it:
/// `PGPASSFILE`, else `~/.pgpass`; lines `host:port:db:user:password`, `*`
/// matches anything, `\:` and `\\` escape. Like libpq, a file that others
/// can read is ignored.
fn passfile_password(config: &Config, env: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let path = match env("PGPASSFILE") {
        Some(p) => PathBuf::from(p),
        None => Path::new(&env("HOME")?).join(".pgpass"),
    };
    let text = private_file_text(&path)?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(p) => p.display().to_string(),
    };
    let is_default_socket = host == "/var/run/postgresql" || host == "/tmp";
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config
        .get_user()
        .map(str::to_owned)
        .or_else(|| env("USER"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or(&user).to_owned();
    passfile_lookup(&text, &host, is_default_socket, &port, &db, &user)
}

/// The text of `path` when it is a file only its owner can read (libpq
/// ignores a password file others can read).
fn private_file_text(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The first matching line's password (pure; see [`passfile_password`]).
fn passfile_lookup(
    text: &str,
    host: &str,
    default_socket: bool,
    port: &str,
    db: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = passfile_fields(line);
        if fields.len() != 5 {
            continue;
        }
        let is = |field: &str, value: &str| field == "*" || field == value;
        let host_ok = is(&fields[0], host) || (default_socket && fields[0] == "localhost");
        if host_ok && is(&fields[1], port) && is(&fields[2], db) && is(&fields[3], user) {
            return Some(fields[4].clone());
        }
    }
    None
}

/// A password file line's fields: `:` separates the first four, `\:` and
/// `\\` escape.
fn passfile_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

#[cfg(test)]
/// The test server's URL (`KURABE_TEST_PG`'s, else a throwaway server
/// started for this test binary), or None after a skip line when
/// PostgreSQL is not installed; in CI (`CI=true`) that is a failure.
pub(crate) fn test_url() -> Option<String> {
    kurabe_testkit::pg::server().map(|s| s.url.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn redact_hides_passwords_in_userinfo_and_query() {
        assert_eq!(
            redact("postgres://kurabe:s3cret@db.example:5433/results?sslmode=require"),
            "postgres://kurabe:***@db.example:5433/results?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u:p@ss/w@rd@host/db"),
            "postgresql://u:***@host/db"
        );
        assert_eq!(
            redact("postgres://host/db?user=u&password=s3cret&sslmode=disable"),
            "postgres://host/db?user=u&password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://u@host/db"), "postgres://u@host/db");
        // The store's own name for itself goes through the same redaction.
        let loc = crate::Location::parse(Path::new("postgres://u:hunter2@h/db"));
        assert_eq!(loc.to_string(), "postgres://u:***@h/db");
        assert_eq!(
            crate::Location::parse(Path::new("sqlite:/tmp/r.db")),
            crate::Location::Sqlite(PathBuf::from("/tmp/r.db"))
        );
    }

    #[test]
    fn url_settings_win_over_environment() {
        let t = Target::resolve(
            "postgres://alice:pw@h1:6000/d1?sslmode=require",
            env_of(&[
                ("PGHOST", "h2"),
                ("PGPORT", "7000"),
                ("PGUSER", "bob"),
                ("PGDATABASE", "d2"),
                ("PGPASSWORD", "other"),
                ("PGSSLMODE", "disable"),
            ]),
        )
        .unwrap();
        let c = t.config();
        assert_eq!(c.get_hosts(), &[Host::Tcp("h1".into())]);
        assert_eq!(c.get_ports(), &[6000]);
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_dbname(), Some("d1"));
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        assert_eq!(t.tls(), TlsMode::Require);
        assert_eq!(c.get_ssl_mode(), SslMode::Require);
    }

    #[test]
    fn environment_fills_what_the_url_leaves_out() {
        let t = Target::resolve(
            "postgres://",
            env_of(&[
                ("PGHOST", "/run/pg"),
                ("PGPORT", "6543"),
                ("PGUSER", "bob"),
                ("PGDATABASE", "d2"),
                ("PGPASSWORD", "hunter2"),
                ("PGSSLMODE", "verify-full"),
                ("PGCONNECT_TIMEOUT", "3"),
            ]),
        )
        .unwrap();
        let c = t.config();
        assert_eq!(c.get_hosts(), &[Host::Unix("/run/pg".into())]);
        assert_eq!(c.get_ports(), &[6543]);
        assert_eq!(c.get_user(), Some("bob"));
        assert_eq!(c.get_dbname(), Some("d2"));
        assert_eq!(c.get_password(), Some(&b"hunter2"[..]));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert_eq!(t.tls(), TlsMode::VerifyFull);
        // Display and Debug never show the password.
        let shown = format!("{t} {t:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(t.to_string(), "postgres://bob@/run/pg:6543/d2");
    }

    #[test]
    fn pgport_applies_to_hosts_written_without_a_port() {
        let env = env_of(&[("PGPORT", "7000")]);
        let t = Target::resolve("postgres://u@h1,h2/db", &env).unwrap();
        assert_eq!(t.config().get_ports(), &[7000, 7000]);
        let t = Target::resolve("postgres://u@h1:6000/db", &env).unwrap();
        assert_eq!(t.config().get_ports(), &[6000]);
        let t = Target::resolve("postgres://u@[::1]/db?connect_timeout=2", &env).unwrap();
        assert_eq!(t.config().get_ports(), &[7000]);
        assert_eq!(
            t.config().get_connect_timeout(),
            Some(&Duration::from_secs(2))
        );
    }

    #[test]
    fn bad_settings_are_named_without_the_password() {
        let e = Target::resolve("postgres://u:hunter2@h/db?sslmode=maybe", env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode `maybe`"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = Target::resolve("postgres://u:hunter2@h/db?nonsense=1", env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("u:***@h"), "{e}");
        let e = Target::resolve("mysql://u:hunter2@h/db", env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("postgres://"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = Target::resolve("postgres://h/db", env_of(&[("PGPORT", "x")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("PGPORT"), "{e}");
    }

    #[test]
    fn passfile_lines_match_like_libpq() {
        let text = "# comment\n\
                    other:5432:*:*:nope\n\
                    h:5432:db:u:first\\:colon\\\\slash\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            passfile_lookup(text, "h", false, "5432", "db", "u").as_deref(),
            Some("first:colon\\slash")
        );
        assert_eq!(
            passfile_lookup(text, "h", false, "5433", "db", "u").as_deref(),
            Some("fallback")
        );
        let local = "localhost:5432:db:u:sock\n";
        assert_eq!(
            passfile_lookup(local, "/var/run/postgresql", true, "5432", "db", "u").as_deref(),
            Some("sock")
        );
        assert_eq!(
            passfile_lookup(local, "/tmp/x", false, "5432", "db", "u"),
            None
        );
    }

    #[test]
    fn passfile_is_read_and_ignored_when_others_can_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "h:5432:db:u:fromfile\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let path = file.to_str().unwrap().to_owned();
        let env = move |k: &str| (k == "PGPASSFILE").then(|| path.clone());
        let t = Target::resolve("postgres://u@h/db", &env).unwrap();
        assert_eq!(t.config().get_password(), Some(&b"fromfile"[..]));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = Target::resolve("postgres://u@h/db", &env).unwrap();
        assert_eq!(t.config().get_password(), None);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("%2Ftmp%2Fca.pem"), "/tmp/ca.pem");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("plain"), "plain");
    }

    /// The URL split into (URL without password, password).
    fn without_password(url: &str) -> (String, String) {
        let (scheme, rest) = url.split_once("://").unwrap();
        let (userinfo, host) = rest.rsplit_once('@').unwrap();
        let (user, pw) = userinfo
            .split_once(':')
            .expect("test URL carries a password");
        (format!("{scheme}://{user}@{host}"), pw.to_owned())
    }

    fn ssl_in_use(client: &mut Client) -> bool {
        client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    }

    #[test]
    fn connects_with_password_from_url_env_or_passfile_and_never_shows_it() {
        let Some(url) = test_url() else { return };
        let mut c = connect(&url).unwrap();
        let one: i32 = c.query_one("SELECT 1", &[]).unwrap().get(0);
        assert_eq!(one, 1);
        assert!(!ssl_in_use(&mut c), "no TLS unless asked for");

        let (bare, pw) = without_password(&url);
        let via_env = Target::resolve(&bare, |k| (k == "PGPASSWORD").then(|| pw.clone())).unwrap();
        via_env.connect().unwrap().simple_query("SELECT 1").unwrap();

        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, format!("127.0.0.1:*:*:kurabe:{pw}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = file.to_str().unwrap().to_owned();
        let via_file = Target::resolve(&bare, |k| (k == "PGPASSFILE").then(|| f.clone())).unwrap();
        via_file
            .connect()
            .unwrap()
            .simple_query("SELECT 1")
            .unwrap();

        // A wrong password: the error names the server, not the password.
        let wrong = url.replace(&format!(":{pw}@"), ":Wr0ngPassw0rd@");
        let e = connect(&wrong).err().unwrap().to_string();
        assert!(e.contains("password authentication failed"), "{e}");
        assert!(!e.contains("Wr0ngPassw0rd") && !e.contains(&pw), "{e}");
        assert!(e.contains("127.0.0.1"), "{e}");
        let e = format!("{:?}", connect(&wrong).err().unwrap());
        assert!(!e.contains("Wr0ngPassw0rd") && !e.contains(&pw), "{e}");
    }

    #[test]
    fn tls_when_the_url_asks_for_it() {
        let Some(url) = test_url() else { return };
        let sep = if url.contains('?') { '&' } else { '?' };
        match connect(&format!("{url}{sep}sslmode=require")) {
            Ok(mut c) => assert!(ssl_in_use(&mut c), "sslmode=require must encrypt"),
            Err(e) => {
                // A server without ssl=on must refuse, not fall back.
                let e = e.to_string();
                assert!(
                    e.contains("TLS") || e.contains("SSL") || e.contains("tls"),
                    "{e}"
                );
                eprintln!("skipped: the test server has no TLS ({e})");
                return;
            }
        }
        // The self-signed test certificate is not in the system store.
        let e = connect(&format!("{url}{sep}sslmode=verify-full"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("certificate") || e.contains("Certificate"),
            "{e}"
        );
        let Some(ca) = kurabe_testkit::pg::server().and_then(|s| s.ca.as_ref()) else {
            eprintln!(
                "skipped: the test server's CA is unknown (KURABE_TEST_PG_CA), verify-full against it not tried"
            );
            return;
        };
        let ca = ca.display().to_string().replace('/', "%2F");
        // Verified against the test CA: by name (localhost is in the certificate) ...
        let local = url.replace("@127.0.0.1:", "@localhost:");
        let mut c = connect(&format!("{local}{sep}sslmode=verify-full&sslrootcert={ca}")).unwrap();
        assert!(ssl_in_use(&mut c));
        // ... but 127.0.0.1 is not, which verify-ca accepts and verify-full does not.
        connect(&format!("{url}{sep}sslmode=verify-ca&sslrootcert={ca}")).unwrap();
        let e = connect(&format!("{url}{sep}sslmode=verify-full&sslrootcert={ca}"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not valid for") || e.contains("NotValidForName"),
            "{e}"
        );
    }
}
