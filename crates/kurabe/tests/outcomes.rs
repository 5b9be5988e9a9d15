//! Issue 11 through the built binary, where no other module proves it:
//! terminal reports within 100 columns, a progress bar on a terminal for
//! `cmd`, `http A B`, `watch -d` and `system` (none with `-q`), JSON
//! without float noise in every JSON kurabe writes, and `--save` refused
//! before measuring when the store cannot take the result.

use std::process::{Child, Command, Output, Stdio};

use crate::cli::on_a_terminal;
use crate::serve::ServeChild;
use crate::util::kurabe;

fn run_ok(args: &[&str]) -> Output {
    let out = kurabe().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every line of `text` that is wider than 100 columns.
fn wide_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > 100)
        .map(str::to_owned)
        .collect()
}

/// A process with a 300-character command line, for `mem --top` to list.
fn long_command_line() -> Child {
    Command::new("sh")
        .args(["-c", "sleep 60", &"x".repeat(300)])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn every_commands_terminal_report_fits_100_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    let server = ServeChild::start(&[]);
    let url = server.url.as_str();
    let other = format!("{url}other");
    let mut long = long_command_line();
    let runs: Vec<Vec<&str>> = vec![
        vec!["http", "-q", "-n", "200", url],
        vec!["http", "-q", "-n", "50", "--rounds", "2", url, &other],
        vec!["watch", "-q", "--", "sleep", "0.3"],
        vec!["mem", "--top", "100000"],
        vec![
            "cmd",
            "-q",
            "-r",
            "2",
            "--store",
            store,
            "true",
            "sleep 0.01",
        ],
        // Two runs of the same work: an inconclusive verdict's long line.
        vec!["cmd", "-q", "-r", "4", "--no-save", "true", "true 1"],
        vec!["results", "list", "--store", store],
        vec!["report", "e1", "--store", store],
        vec!["demo", "-q", "--duration", "500ms"],
        vec![
            "system",
            "-q",
            "-c",
            "1",
            "--tests",
            "syscall",
            "--passes",
            "1",
            "--seconds",
            "0.2",
        ],
    ];
    for args in runs {
        let out = run_ok(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!text.trim().is_empty(), "{args:?} printed nothing");
        let wide = wide_lines(&text);
        assert!(
            wide.is_empty(),
            "{args:?}: lines over 100 columns:\n{wide:#?}"
        );
    }
    let _ = long.kill();
    let _ = long.wait();
}

#[test]
fn cmd_ab_watch_and_system_draw_a_bar_on_a_terminal_and_nothing_with_q() {
    let cmd = ["cmd", "-r", "3", "--no-save", "'sleep 0.2'"];
    if let Some(tty) = on_a_terminal(&cmd) {
        assert!(tty.contains("/3 runs  ETA"), "{tty:?}");
    }
    let server = ServeChild::start(&[]);
    let other = format!("{}other", server.url);
    let ab = ["http", "-n", "200", "--rounds", "2", &server.url, &other];
    if let Some(tty) = on_a_terminal(&ab) {
        assert!(tty.contains("/4 runs  ETA"), "{tty:?}");
    }
    if let Some(tty) = on_a_terminal(&["cmd", "-q", "-r", "2", "--no-save", "true"]) {
        assert_eq!(tty, "", "-q draws nothing");
    }
    if let Some(tty) = on_a_terminal(&["watch", "-d", "1", "--", "sleep", "3"]) {
        assert!(tty.contains("ETA") && tty.contains("procs"), "{tty:?}");
    }
    if let Some(tty) = on_a_terminal(&["watch", "-q", "-d", "500ms", "--", "sleep", "3"]) {
        assert_eq!(tty, "", "-q draws nothing");
    }
    let system = ["system", "-q", "--tests", "syscall", "-c", "1"];
    if let Some(tty) =
        on_a_terminal(&[&system[..], &["--passes", "1", "--seconds", "0.2"]].concat())
    {
        assert_eq!(tty, "", "-q draws nothing");
    }
}

/// Significant digits of a JSON number's text (`0.000123` has 3).
fn significant_digits(number: &str) -> usize {
    let mantissa = number.split(['e', 'E']).next().unwrap_or("");
    mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .skip_while(|&c| c == '0')
        .count()
}

/// `json` with every string literal blanked out: what is left are the
/// numbers (a plan's TOML text inside a string is not a JSON number).
fn outside_strings(json: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in json.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, false, _) => {}
            (false, _, '"') => in_string = true,
            (false, _, c) => out.push(c),
        }
    }
    out
}

/// Every JSON number with a fraction in `text` that carries binary noise
/// (more significant digits than the 12 kurabe keeps).
fn noisy_numbers(text: &str) -> Vec<String> {
    outside_strings(text)
        .split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .filter(|t| t.contains('.') && t.parse::<f64>().is_ok())
        .filter(|t| significant_digits(t) > 12)
        .map(str::to_owned)
        .collect()
}

#[test]
fn json_that_kurabe_writes_carries_no_float_noise() {
    assert_eq!(significant_digits("102.84499999999997"), 17);
    assert_eq!(noisy_numbers("[0.0015943400000000003, 1.5]").len(), 1);
    assert_eq!(
        noisy_numbers(r#"["a \" 0.0015943400000000003", 1.5]"#).len(),
        0
    );
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    let export = dir.path().join("hyperfine.json");
    let export = export.to_str().unwrap();
    let cmd = [
        "cmd",
        "-q",
        "-r",
        "3",
        "--store",
        store,
        "--export-json",
        export,
    ];
    run_ok(&[&cmd[..], &["sleep 0.01", "true"]].concat());
    let text = std::fs::read_to_string(export).unwrap();
    assert!(text.contains("\"times\""), "{text}");
    assert_eq!(noisy_numbers(&text), Vec::<String>::new(), "--export-json");
    let server = ServeChild::start(&[]);
    let http = ["http", "-q", "-n", "100", "--save", "--store", store];
    run_ok(&[&http[..], &[server.url.as_str()]].concat());
    let show = run_ok(&["results", "show", "r1", "--store", store]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("\"latency_us\""), "{text}");
    assert_eq!(noisy_numbers(&text), Vec::<String>::new(), "results show");
    let out = run_ok(&["report", "e1", "--store", store, "--format", "json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(noisy_numbers(&text), Vec::<String>::new(), "report json");
}

/// `--save` to a store that cannot take the result is refused before any
/// measurement (exit 2, one line, the file byte-identical), not after a
/// long run whose numbers then only reach the terminal.
#[test]
fn save_to_a_foreign_store_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&foreign).unwrap();
    let server = ServeChild::start(&[]);
    let foreign_s = foreign.to_str().unwrap();
    let dir_s = dir.path().to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &[
            "http",
            "-q",
            "-n",
            "50",
            "--save",
            "--store",
            foreign_s,
            &server.url,
        ],
        &[
            "watch", "--save", "--store", foreign_s, "--", "sleep", "0.2",
        ],
        &[
            "system", "-q", "--save", "--store", dir_s, "--tests", "syscall", "-c", "1",
        ],
    ];
    for args in runs {
        let out = kurabe().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: measured before refusing");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("kurabe: error: --save: "), "{err}");
    }
    assert_eq!(server.served(), 0, "no load before the store was checked");
    assert_eq!(std::fs::read(&foreign).unwrap(), before, "left untouched");
}
