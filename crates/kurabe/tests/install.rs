//! What an installed kurabe brings besides the binary: shell completion
//! scripts and man pages, both generated from the CLI's clap definition.
//! The completion is driven through real bash (its completion function
//! called as bash's `complete -F` calls it), the pages through real man.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::kurabe;

/// What bash offers for `words` (the last one is being completed),
/// with kurabe's generated bash script loaded into a bare `bash --norc`.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    // Called as bash calls a `complete -F` function: the command, the word
    // being completed and the one before it, with COMP_WORDS/COMP_CWORD set.
    let driver = r#"
        source "$1"; shift
        complete -p kurabe >/dev/null || exit 3
        COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        _kurabe kurabe "${COMP_WORDS[COMP_CWORD]}" "$prev"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", driver, "bash"])
        .arg(script)
        .args(words)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kurabe.bash");
    let out = kurabe().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    assert_eq!(bash_completes(&script, &["kurabe", "ht"]), ["http"]);
    assert_eq!(
        bash_completes(&script, &["kurabe", "http", "--for"]),
        ["--format"]
    );
    assert_eq!(
        bash_completes(&script, &["kurabe", "results", "li"]),
        ["list"]
    );
    // Values clap knows are offered too.
    let formats = bash_completes(&script, &["kurabe", "http", "--format", ""]);
    assert!(formats.iter().any(|f| f == "json"), "{formats:?}");
}

#[test]
fn every_shell_gets_a_script_naming_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = kurabe().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["kurabe", "http", "results", "--format"] {
            assert!(script.contains(word), "{shell} script lacks {word}");
        }
    }
    let out = kurabe().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{err}"
    );
}

/// A stdout whose reader is already gone (`kurabe completions bash | true`).
fn closed_pipe() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors that only we own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both are ours and open; the read end is closed at once.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    for args in [&["completions", "bash"][..], &["man", "http"]] {
        let out = kurabe()
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Whether man(1) is here to render pages; under CI it must be.
fn have_man() -> bool {
    let here = Command::new("man")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !here {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "CI: man is not installed (.ci/run installs man-db)");
        eprintln!("skipped: man is not installed (Debian: apt-get install man-db)");
    }
    here
}

/// What `man --warnings -l` says on stderr about a page, and its text.
fn render(page: &Path) -> (String, String) {
    let out = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .env_remove("MAN_KEEP_FORMATTING")
        .env_remove("MANPAGER")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", page.display());
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn every_subcommand_has_a_man_page_that_renders_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let out = kurabe()
        .args(["man", "--out-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    for page in [
        "kurabe.1",
        "kurabe-http.1",
        "kurabe-results.1",
        "kurabe-results-list.1",
        "kurabe-system-compare.1",
        "kurabe-completions.1",
        "kurabe-man.1",
    ] {
        assert!(pages.iter().any(|p| p == page), "no {page} in {pages:?}");
    }
    assert!(!pages.iter().any(|p| p.contains("help")), "{pages:?}");
    // `kurabe man WORDS` prints the same page --out-dir writes.
    let list = kurabe().args(["man", "results", "list"]).output().unwrap();
    assert!(list.status.success());
    assert_eq!(
        list.stdout,
        std::fs::read(dir.path().join("kurabe-results-list.1")).unwrap()
    );
    if !have_man() {
        return;
    }
    for page in &pages {
        let (warnings, text) = render(&dir.path().join(page));
        assert_eq!(warnings, "", "{page}");
        assert!(text.contains("SYNOPSIS"), "{page}: {text}");
    }
    let (_, http) = render(&dir.path().join("kurabe-http.1"));
    assert!(http.contains("--format"), "{http}");
}

#[test]
fn a_page_of_no_such_command_names_the_choices() {
    let out = kurabe().args(["man", "results", "lst"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("kurabe: error: kurabe-results has no subcommand 'lst': give one of list,"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
