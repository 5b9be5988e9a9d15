//! The PostgreSQL server the store tests run against.
//!
//! Owns the choice of server for one test binary: the one `KURABE_TEST_PG`
//! names (with `KURABE_TEST_PG_CA`, as `.ci/run` exports them), else a
//! throwaway server this module starts once with `scripts/pg-test-server.sh`
//! wherever PostgreSQL's server binaries are installed, so `cargo test
//! --workspace` covers PostgreSQL without any setup. Must not decide what
//! the tests check; must not leave a server behind.
//!
//! The throwaway server lives exactly as long as the test binary: a small
//! guardian shell, in its own process group (a Ctrl-C to the tests does not
//! reach it), starts it, then blocks reading a pipe whose only writer is
//! this process (std makes it close-on-exec, so programs the tests start do
//! not hold it); when the process ends in any way (normal exit, panic,
//! kill) the pipe closes, the read returns, and the guardian stops the
//! server and removes its directory.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// A PostgreSQL server for tests.
#[derive(Debug)]
pub struct Server {
    /// `postgres://kurabe:PASSWORD@127.0.0.1:PORT/kurabe`; the password is a
    /// throwaway for this server only.
    pub url: String,
    /// The test CA that signed the server's TLS certificate (for
    /// `sslmode=verify-full`), when the server has TLS.
    pub ca: Option<PathBuf>,
}

/// Exit status of `pg-test-server.sh start` when no server binaries exist.
const NO_BINARIES: i32 = 3;

/// The test server: `KURABE_TEST_PG`'s, else one started for this test
/// binary. `None` (after a visible "skipped" line) only when PostgreSQL is
/// not installed; under `CI=true` that is a failure instead.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    let s = SERVER.get_or_init(|| from_env().or_else(start)).as_ref();
    if s.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("no PostgreSQL for the store tests but CI=true: install postgresql (server binaries) or set KURABE_TEST_PG");
        }
        eprintln!("skipped: PostgreSQL is not installed (apt-get install postgresql, or set KURABE_TEST_PG)");
    }
    s
}

fn from_env() -> Option<Server> {
    let url = std::env::var("KURABE_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())?;
    let ca = std::env::var_os("KURABE_TEST_PG_CA").map(PathBuf::from);
    Some(Server { url, ca })
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-server.sh")
}

/// Start a throwaway server; `None` when PostgreSQL is not installed. Any
/// other failure to start panics with the script's message.
fn start() -> Option<Server> {
    let dir = tempfile::Builder::new()
        .prefix("kurabe-test-pg.")
        .tempdir()
        .expect("a temp dir for the test PostgreSQL server")
        .keep();
    let mut guardian = guardian(&dir);
    let mut url = String::new();
    let stdout = guardian.stdout.take().expect("piped stdout");
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("read the server's URL");
    if url.trim().is_empty() {
        return not_started(guardian, &dir);
    }
    // The pipe into the guardian stays open as long as this process lives.
    static WRITER: Mutex<Option<ChildStdin>> = Mutex::new(None);
    *WRITER.lock().unwrap_or_else(|e| e.into_inner()) = guardian.stdin.take();
    // The guardian is reaped by init once this process is gone.
    std::mem::forget(guardian);
    let ca = dir.join("ca.pem");
    Some(Server {
        url: url.trim().to_string(),
        ca: ca.exists().then_some(ca),
    })
}

/// The guardian printed no URL: `None` when PostgreSQL is not installed,
/// else a panic with the script's message. `dir` is removed.
fn not_started(mut guardian: Child, dir: &Path) -> Option<Server> {
    let mut err = String::new();
    let _ = guardian
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut err);
    let status = guardian.wait().expect("wait for the guardian");
    let _ = std::fs::remove_dir_all(dir);
    if status.code() == Some(NO_BINARIES) {
        return None;
    }
    panic!("scripts/pg-test-server.sh start failed ({status}): {err}");
}

/// The guardian (see the module docs): it starts the server in `dir`,
/// prints its URL, then waits for end-of-file on its stdin and stops it.
/// Starting it there too means a test binary killed while the server
/// starts still has it stopped once it is up.
fn guardian(dir: &Path) -> Child {
    // SIGPIPE ignored: a test binary gone before it read the URL must not
    // kill the guardian between starting the server and stopping it.
    const SCRIPT: &str = r#"trap '' PIPE
url=$(bash "$0" start "$1") || {
  st=$?; [ -d "$1/data" ] && bash "$0" stop "$1" >/dev/null 2>&1; exit $st; }
printf '%s\n' "$url" || true
exec >/dev/null 2>&1
read -r _
exec bash "$0" stop "$1""#;
    Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg(script())
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("sh starts the test server's guardian")
}
