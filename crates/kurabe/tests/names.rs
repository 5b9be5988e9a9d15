//! Hostile names on terminals and in spreadsheets: a process command line
//! and plan, variant and workload names carrying escape sequences (window
//! title OSC 0, screen clear, OSC 8 links, BEL, bare CR) reach `mem`, `run`,
//! `results list` and `report --format md/csv` in a visible form only, and
//! CSV cells that a spreadsheet would run as formulas arrive neutralised.

use std::process::{Child, Command, Output};

use crate::util::kurabe;

/// ESC ] 0 ; title BEL, ESC [ 2 J: retitle the window, clear the screen.
const TITLE_AND_CLEAR: &str = "\x1b]0;pwned\x07\x1b[2J";

/// Bytes that act on a terminal instead of being shown: ESC, BEL, bare CR.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (c, name) in [('\x1b', "ESC"), ('\x07', "BEL"), ('\r', "CR")] {
        assert!(!text.contains(c), "{what} holds a raw {name}:\n{text:?}");
    }
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_inert(&format!("{what} stdout"), &out.stdout);
    assert_inert(&format!("{what} stderr"), &out.stderr);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A child that dies with the test.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn mem_shows_a_hostile_command_line_in_visible_form() {
    // `sh -c CMD NAME`: NAME is the shell's $0, so its cmdline holds it; the
    // `; :` keeps sh from exec'ing sleep in its place.
    let child = Reaped(
        Command::new("sh")
            .args(["-c", "sleep 30; :", TITLE_AND_CLEAR])
            .spawn()
            .unwrap(),
    );
    let out = kurabe().args(["mem", "--top", "100000"]).output().unwrap();
    let text = ok("mem", &out);
    assert!(
        text.contains("\\e]0;pwned\\x07\\e[2J"),
        "the command line is listed, escaped:\n{text}"
    );
    drop(child);
}

#[test]
fn plan_names_are_visible_text_in_run_results_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    // TOML \u escapes: ESC, BEL, CR; an OSC 8 hyperlink; a formula.
    std::fs::write(
        &plan,
        r#"
name = "evil \u001B]0;pwned\u0007\u001B[2J plan"
repeat = 1
[[variant]]
name = "=HYPERLINK(\"http://x\")"
[[variant]]
name = "b\rOVERWRITE"
[[workload]]
name = "\u001B]8;;http://evil/\u001B\\click\u001B]8;;\u001B\\"
command = { command = "true", runs = 1 }
"#,
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let run = kurabe()
        .arg("run")
        .arg(&plan)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    let text = ok("run", &run);
    assert!(text.contains("evil \\e]0;pwned\\x07\\e[2J plan"), "{text}");
    assert!(text.contains("b\\rOVERWRITE"), "{text}");
    let progress = String::from_utf8_lossy(&run.stderr);
    assert!(
        progress.contains("\\e]8;;http://evil/\\e\\click"),
        "{progress}"
    );

    let report = |args: &[&str]| {
        let out = kurabe()
            .args(args)
            .arg("--store")
            .arg(&db)
            .output()
            .unwrap();
        ok(&args.join(" "), &out)
    };
    let list = report(&["results", "list"]);
    assert!(list.contains("evil \\e]0;pwned\\x07\\e[2J plan"), "{list}");
    let md = report(&["report", "e1", "--format", "md"]);
    // A table cell is one line: Markdown shows a CR as a space.
    assert!(md.contains("| b OVERWRITE |"), "{md}");
    assert!(md.contains("evil \\e\\]0;pwned\\x07\\e\\[2J plan"), "{md}");
    let csv = report(&["report", "e1", "--format", "csv"]);
    assert!(
        csv.contains(",\"'=HYPERLINK(\"\"http://x\"\")\","),
        "the formula cell is neutralised:\n{csv}"
    );
    assert!(csv.contains(",b\\rOVERWRITE,"), "{csv}");
}
