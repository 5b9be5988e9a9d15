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
}
