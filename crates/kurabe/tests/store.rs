//! The results store's edges: kurabe only ever writes to its own stores
//! (another program's SQLite file or a file that is no database is refused,
//! exit 2, byte-identical afterwards), a directory gets one line naming it,
//! and no password reaches help text or errors.

use std::path::Path;
use std::process::Output;

use crate::util::kurabe;

/// One line on stderr naming `needle`, exit 2.
fn assert_one_line_exit_2(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
}

/// Every command that opens a store, pointed at `store`.
fn each_store_command(store: &Path, dir: &Path) -> Vec<Output> {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = { command = [\"true\"], runs = 1 }\n",
    )
    .unwrap();
    let s = store.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &["results", "list", "--store", s],
        &["run", plan.to_str().unwrap(), "-q", "--store", s],
        &["mem", "--save", "--store", s],
    ];
    runs.iter()
        .map(|args| kurabe().args(*args).output().unwrap())
        .collect()
}

#[test]
fn another_programs_sqlite_file_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    for out in each_store_command(&db, dir.path()) {
        assert_one_line_exit_2(
            &out,
            "is not a kurabe results store (it is another program's SQLite database)",
        );
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("other.db"))
        .collect();
    assert_eq!(left, ["other.db"], "no journal or WAL files were made");
}

#[test]
fn a_file_that_is_no_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "not a database, and longer than a header would need to be ........................................................................").unwrap();
    let before = std::fs::read(&file).unwrap();
    for out in each_store_command(&file, dir.path()) {
        assert_one_line_exit_2(
            &out,
            "is not a kurabe results store (it is not an SQLite database)",
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn a_directory_gets_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for out in each_store_command(dir.path(), dir.path()) {
        assert_one_line_exit_2(
            &out,
            &format!("results store {} is a directory", dir.path().display()),
        );
    }
}

#[test]
fn a_new_store_is_marked_as_kurabes_and_an_unmarked_old_one_is_marked_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let out = kurabe()
        .args(["mem", "--save", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app_id = |db: &Path| -> i32 {
        let c = rusqlite::Connection::open(db).unwrap();
        c.pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap()
    };
    assert_eq!(app_id(&db), i32::from_be_bytes(*b"KRBE"));
    // A store from before the mark: kurabe's tables, application_id 0.
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "application_id", 0)
        .unwrap();
    let out = kurabe()
        .args(["results", "list", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("mem"));
    assert_eq!(app_id(&db), i32::from_be_bytes(*b"KRBE"));
}

#[test]
fn no_password_in_help_text_or_errors() {
    let env = [
        ("KURABE_STORE", "postgres://u:s3cret-url@127.0.0.1:1/db"),
        ("PGPASSWORD", "s3cret-env"),
    ];
    let helps: [&[&str]; 6] = [
        &["worker", "--help"],
        &["results", "list", "--help"],
        &["results", "copy", "--help"],
        &["run", "--help"],
        &["mem", "--help"],
        &["http", "--help"],
    ];
    for args in helps {
        let out = kurabe().args(args).envs(env).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}");
        assert!(
            !text.contains("s3cret"),
            "{args:?} shows a password:\n{text}"
        );
    }
    // Nothing listens on port 1: the error names the server, not the password.
    for args in [&["results", "list"][..], &["worker"]] {
        let out = kurabe().args(args).envs(env).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("127.0.0.1:1"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}

/// `/proc/PID/cmdline` of a running kurabe (what `ps` shows every user).
fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// Ends `child` with SIGTERM and reaps it.
fn terminate(mut child: std::process::Child) -> std::process::ExitStatus {
    // SAFETY: kill(2) on our own child's PID, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap()
}

#[test]
fn no_password_in_the_process_title_of_a_running_kurabe() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // A store that takes the result: `--save` checks it before the watch.
    let Some(pg) = kurabe_testkit::pg::server() else {
        return;
    };
    let url = pg.url.as_str();
    let rest = url.split_once("://").unwrap().1;
    let password = &rest[rest.find(':').unwrap() + 1..rest.rfind('@').unwrap()];
    let hidden = url.replace(&format!(":{password}@"), ":***@");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = kurabe();
    cmd.env_remove("KURABE_STORE").env_remove("PGPASSWORD");
    if let Some(ca) = &pg.ca {
        cmd.env("PGSSLROOTCERT", ca);
    }
    // The watched command says when it runs: kurabe's main has long started.
    let mut child = cmd
        .current_dir(dir.path())
        .args(["watch", "--save", "--store", url, "--"])
        .args(["sh", "-c", "echo started >&2; exec sleep 60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let started = err.lines().map_while(Result::ok).any(|l| l == "started");
    assert!(started, "the watched command never ran");
    let shown = cmdline(child.id());
    terminate(child);
    assert!(!shown.contains(password), "{shown}");
    assert!(shown.contains(&format!("--store {hidden}")), "{shown}");
}

#[test]
fn a_worker_connects_with_the_password_it_hides_from_ps() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let Some(pg) = kurabe_testkit::pg::server() else {
        return;
    };
    let password = pg.url.split_once("://").unwrap().1;
    let password = &password[password.find(':').unwrap() + 1..password.rfind('@').unwrap()];
    let mut cmd = kurabe();
    cmd.env_remove("KURABE_STORE").env_remove("PGPASSWORD");
    if let Some(ca) = &pg.ca {
        cmd.env("PGSSLROOTCERT", ca);
    }
    let mut child = cmd
        .args(["worker", "--store", &pg.url])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let shown = cmdline(child.id());
    let status = terminate(child);
    assert!(line.contains("registered as worker"), "{line}");
    assert!(!shown.contains(password), "{shown}");
    assert!(shown.contains("kurabe:***@127.0.0.1"), "{shown}");
    assert_eq!(status.code(), Some(143));
}

/// `kurabe ARGS` with `dir` mounted read-only over itself in a private mount
/// namespace (root ignores permission bits, not a read-only mount); `None`
/// where mount namespaces cannot be made (not root, no `unshare`).
fn in_read_only_dir(dir: &Path, args: &[&str]) -> Option<Output> {
    let d = dir.to_str().unwrap();
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(r#"mount --bind -o ro "$0" "$0" || exit 99; shift; exec "$@""#)
        .arg(d)
        .arg("placeholder")
        .arg(env!("CARGO_BIN_EXE_kurabe"))
        .args(args)
        .output()
        .ok()?;
    (out.status.code() != Some(99) && !String::from_utf8_lossy(&out.stderr).contains("unshare:"))
        .then_some(out)
}

/// A store on a read-only mount is read (list, show, report) and refuses
/// writes with one line and exit 2; the file is left byte-identical.
#[test]
fn a_read_only_store_is_read_and_refuses_writes_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    let s = store.to_str().unwrap();
    let saved = kurabe()
        .args(["mem", "--save", "--store", s])
        .output()
        .unwrap();
    assert!(saved.status.success(), "{saved:?}");
    let plan = tempfile::tempdir().unwrap();
    let ran = &each_store_command(&store, plan.path())[1];
    assert!(ran.status.success(), "{ran:?}");
    let before = std::fs::read(&store).unwrap();
    let Some(list) = in_read_only_dir(dir.path(), &["results", "list", "--store", s]) else {
        eprintln!("skipped: no private mount namespace here (needs root and unshare)");
        return;
    };
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{list:?}");
    assert!(text.contains("r1") && text.contains("e1"), "{text}");
    for read in [
        &["report", "e1", "--store", s][..],
        &["results", "show", "r1", "--store", s],
    ] {
        let out = in_read_only_dir(dir.path(), read).unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(!out.stdout.is_empty());
    }
    for write in [
        &["mem", "--save", "--store", s][..],
        &["results", "rm", "r1", "--store", s][..],
    ] {
        let out = in_read_only_dir(dir.path(), write).unwrap();
        assert_one_line_exit_2(&out, "the store is read-only");
    }
    assert_eq!(std::fs::read(&store).unwrap(), before, "untouched");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["r.db"], "no journal left beside it");
}

/// A read-only store made by kurabe before the fleet's tables joined the
/// schema (version 4: the store-v1 fixture) is read as it is: migrating it
/// would need a write, and nothing the store reads changed since.
#[test]
fn a_read_only_store_of_the_previous_schema_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("old.db");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/store-v1/store.sqlite");
    std::fs::copy(fixture, &store).unwrap();
    let before = std::fs::read(&store).unwrap();
    let s = store.to_str().unwrap();
    let Some(list) = in_read_only_dir(dir.path(), &["results", "list", "--store", s]) else {
        eprintln!("skipped: no private mount namespace here (needs root and unshare)");
        return;
    };
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{list:?}");
    assert!(text.contains("e1") && text.contains("r5"), "{text}");
    let show = in_read_only_dir(dir.path(), &["results", "show", "r1", "--store", s]).unwrap();
    assert!(show.status.success(), "{show:?}");
    assert_eq!(std::fs::read(&store).unwrap(), before, "untouched");
}

/// A store whose file and folder only the permission bits keep from being
/// written (no `-wal`/`-shm` can be created beside it) is still read, and a
/// write is refused in one line. Runs as `nobody` when the tests run as root
/// (root ignores permission bits).
#[test]
fn a_store_without_write_permission_is_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("p.db");
    let s = store.to_str().unwrap();
    let saved = kurabe()
        .args(["mem", "--save", "--store", s])
        .output()
        .unwrap();
    assert!(saved.status.success(), "{saved:?}");
    let before = std::fs::read(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let as_reader = |args: &[&str]| {
        let mut cmd = if unsafe { libc::geteuid() } == 0 {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            c.arg(env!("CARGO_BIN_EXE_kurabe"));
            c
        } else {
            std::process::Command::new(env!("CARGO_BIN_EXE_kurabe"))
        };
        cmd.args(args).output().unwrap()
    };
    let list = as_reader(&["results", "list", "--store", s]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(list.status.success(), "{list:?}");
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("r1"),
        "{list:?}"
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let write = as_reader(&["mem", "--save", "--store", s]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_one_line_exit_2(&write, "the store is read-only");
    // A benchmark that saves is refused before it runs anything.
    let scratch = tempfile::tempdir().unwrap();
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = scratch.path().join("ran");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let touch = format!("touch {}", marker.display());
    let bench = as_reader(&["cmd", "-r", "2", "--store", s, &touch]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_one_line_exit_2(&bench, "the store is read-only");
    assert!(
        !marker.exists(),
        "the command ran before the store was refused"
    );
    assert_eq!(std::fs::read(&store).unwrap(), before, "untouched");
}
