//! The command line as a whole: usage errors that stay short and keep
//! clap's help (suggestions, possible values).

use crate::util::kurabe;

/// stderr of a usage error: exit 2, at most three lines, nothing on stdout.
fn usage_error(args: &[&str]) -> String {
    let out = kurabe().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert!(
        err.lines().count() <= 3,
        "{args:?}: more than 3 lines:\n{err}"
    );
    err
}

#[test]
fn usage_errors_are_short_and_keep_the_suggestion_and_possible_values() {
    let err = usage_error(&["htpp", "http://127.0.0.1:9/"]);
    assert!(
        err.starts_with("kurabe: error: unrecognized subcommand 'htpp'\n"),
        "{err}"
    );
    assert!(err.contains("a similar subcommand exists: 'http'"), "{err}");
    let err = usage_error(&["http", "--format", "yaml", "http://127.0.0.1:9/"]);
    assert!(
        err.contains("[possible values: text, json, md, csv]"),
        "{err}"
    );
    assert!(err.contains("see 'kurabe http --help'"), "{err}");
    let err = usage_error(&["results", "lst"]);
    assert!(err.contains("a similar subcommand exists: 'list'"), "{err}");
    assert!(err.contains("see 'kurabe results --help'"), "{err}");
    assert_eq!(
        usage_error(&["results", "list", "--formt", "json"]),
        "kurabe: error: unexpected argument '--formt' found\n  \
         tip: a similar argument exists: '--format'\n  see 'kurabe results list --help'\n"
    );
    assert_eq!(
        usage_error(&["run"]),
        "kurabe: error: the following required arguments were not provided: <PLAN>\n  \
         see 'kurabe run --help'\n"
    );
}

/// Run `kurabe ARGS` under `script(1)`, so stderr is a terminal; what it drew.
pub(crate) fn on_a_terminal(args: &[&str]) -> Option<String> {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("skipped: script(1) is not installed");
        return None;
    }
    let line = std::iter::once(env!("CARGO_BIN_EXE_kurabe"))
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let out = std::process::Command::new(script)
        .args(["-qec", &format!("{line} >/dev/null"), "/dev/null"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn long_work_shows_a_progress_bar_on_a_terminal_only() {
    let server = crate::serve::ServeChild::start(&[]);
    let url = server.url.as_str();
    if let Some(tty) = on_a_terminal(&["http", "--rate", "3000", "-n", "3000", url]) {
        assert!(tty.contains("/3000 requests  ETA"), "{tty:?}");
    }
    if let Some(tty) = on_a_terminal(&["http", "-t", "1", url]) {
        assert!(
            tty.contains("/1s  ETA") && tty.contains(" done, 0 failed"),
            "{tty:?}"
        );
    }
    if let Some(tty) = on_a_terminal(&["http", "-q", "-n", "3000", url]) {
        assert_eq!(tty, "", "-q draws nothing");
    }
    let system = [
        "system",
        "--tests",
        "syscall,pipe",
        "-c",
        "1",
        "--passes",
        "2",
        "--seconds",
        "0.3",
    ];
    if let Some(tty) = on_a_terminal(&system) {
        assert!(tty.contains("/2 tests  ETA"), "{tty:?}");
    }
    // Not a terminal: nothing on stderr but the report's own notes.
    let out = kurabe().args(["http", "-n", "3000", url]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("requests") && !err.contains('\r'), "{err:?}");
}
