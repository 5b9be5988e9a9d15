//! `--tui` (issue 26), tried as a person would: `kurabe http … --tui` runs
//! in a real terminal (a tmux pane) against `kurabe serve`; the test reads
//! the screen with `tmux capture-pane`, checks the rate and status lines,
//! presses `q`, and checks the final report and that the terminal is back
//! in cooked mode on the main screen; likewise after a worker's panic. The
//! screen it read is written to `$CARGO_TARGET_TMPDIR/live-view.txt`, and
//! to `docs/live-view.txt` with `KURABE_UPDATE_DOCS=1`.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::serve::ServeChild;
use crate::util::kurabe;

/// A tmux server of the test's own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// A detached 100×30 session running a plain shell.
    fn start(name: &str, env: &[(&str, &str)]) -> Tmux {
        let socket = format!("kurabe-test-{name}-{}", std::process::id());
        let t = Tmux { socket };
        let mut args = vec!["new-session", "-d", "-x", "100", "-y", "30"];
        let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for e in &env {
            args.extend(["-e", e]);
        }
        args.extend(["env", "PS1=$ ", "bash", "--norc", "--noprofile"]);
        t.run(&args);
        t.run(&["set-option", "-g", "history-limit", "5000"]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux is installed (.ci/run installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Type `line` and Enter.
    fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-l", line]);
        self.run(&["send-keys", "Enter"]);
    }

    /// The visible screen.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    /// The main screen with its history.
    fn history(&self) -> String {
        self.run(&["capture-pane", "-p", "-S", "-"])
    }

    /// Whether the pane shows the alternate screen.
    fn alternate_on(&self) -> bool {
        self.run(&["display-message", "-p", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Poll `what` until `ok` holds of it, up to 60 s.
    fn wait_for(&self, what: impl Fn(&Tmux) -> String, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = what(self);
            if ok(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "not seen within 60 s:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The command line of a `kurabe http` run.
fn command_line(url: &str, extra: &str) -> String {
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    format!("{bin} http {url} -t 60 -c 2 -k --rate 500 --tui {extra}; echo \"exit=$?\"; stty -a")
}

/// The shell printed the command's exit status, a line `exit=N` of its
/// own (the typed command line holds `exit=$?`, so that is not enough),
/// and then `stty -a`'s modes (the line with `icanon` or `-icanon`): seeing
/// the exit line alone raced the `stty` output on a loaded machine.
fn exited(history: &str) -> bool {
    let mut lines = history.lines().skip_while(|l| {
        !l.strip_prefix("exit=")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    lines.next().is_some() && lines.any(|l| l.contains("icanon"))
}

/// The pane's terminal is in cooked mode: canonical input and echo on.
fn assert_cooked(history: &str) {
    let stty = history
        .lines()
        .skip_while(|l| !l.starts_with("exit="))
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = stty.split_whitespace().collect();
    for on in ["icanon", "echo", "isig", "opost"] {
        assert!(words.contains(&on), "{on} off after the view:\n{history}");
    }
}

#[test]
fn the_live_view_shows_the_run_and_q_prints_the_report_in_a_cooked_terminal() {
    let server = ServeChild::start(&[]);
    let tmux = Tmux::start("view", &[]);
    tmux.type_line(&command_line(&server.url, ""));
    // The view, once responses are counted (the rate and status lines)
    // and the server's first sample is in: on a loaded machine the view
    // can draw counted responses before the server's probe has reported.
    let screen = tmux.wait_for(Tmux::screen, |s| {
        s.lines()
            .any(|l| l.starts_with("status ") && l.contains("  200: "))
            && s.lines()
                .any(|l| l.starts_with("rate ") && !l.starts_with("rate 0/s"))
            && s.contains("server   CPU ")
    });
    assert!(tmux.alternate_on());
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        lines[0].starts_with(&format!("kurabe http {}  elapsed ", server.url)),
        "{screen}"
    );
    assert!(
        lines[1].starts_with("rate ") && lines[1].contains("/s of 500/s  answered "),
        "{screen}"
    );
    assert!(
        screen.contains("whole run ") && screen.contains("latency, last 5s"),
        "{screen}"
    );
    assert!(
        screen.contains("server   CPU "),
        "the local server is measured: {screen}"
    );
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(dir.join("live-view.txt"), &screen).unwrap();
    if std::env::var_os("KURABE_UPDATE_DOCS").is_some() {
        let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/live-view.txt");
        std::fs::write(docs, &screen).unwrap();
    }
    // A resize redraws at the new size, 60×15 included.
    tmux.run(&["resize-window", "-x", "60", "-y", "15"]);
    let small = tmux.wait_for(Tmux::screen, |s| {
        s.lines().count() <= 15
            && s.lines()
                .next()
                .is_some_and(|l| l.starts_with("kurabe http"))
    });
    assert!(small.lines().all(|l| l.chars().count() <= 60), "{small}");
    assert!(small.lines().any(|l| l.starts_with("rate ")), "{small}");
    tmux.run(&["resize-window", "-x", "100", "-y", "30"]);
    // q: the run stops, the report as without --tui (marked interrupted).
    tmux.run(&["send-keys", "q"]);
    let history = tmux.wait_for(Tmux::history, |h| {
        h.contains("exit=") && h.contains("speed")
    });
    assert!(!tmux.alternate_on());
    assert!(history.contains("exit=130"), "{history}");
    assert!(history.contains("Complete requests:"), "{history}");
    assert!(history.contains("interrupted"), "{history}");
    assert!(
        !history.contains("\u{1b}["),
        "escape codes in the report: {history}"
    );
    assert_cooked(&history);
}

/// The terminal going away under the view (its window closed, an SSH
/// session dropped: here tmux's server killed, which hangs the pane's
/// terminal up) ends the run: before, the view's key reader spun on the
/// dead terminal and kurabe never exited, even after its `-t 60`.
#[test]
fn a_terminal_that_hangs_up_ends_the_run() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let tmux = Tmux::start("hangup", &[]);
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    // `exec`: kurabe takes the shell's pid, which the file holds.
    tmux.type_line(&format!(
        "echo $$ > {}; exec {bin} http {} -t 60 -c 2 -k --rate 500 --tui",
        pidfile.display(),
        server.url
    ));
    tmux.wait_for(Tmux::screen, |s| s.lines().any(|l| l.starts_with("rate ")));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists());
    tmux.run(&["kill-server"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    // Gone, or a zombie no one reaps yet (tmux's server is gone too).
    let ended = || {
        std::fs::read_to_string(proc_dir.join("stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    while !ended() {
        assert!(
            Instant::now() < deadline,
            "kurabe (pid {pid}) still runs 20 s after its terminal hung up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_panic_gives_the_terminal_back() {
    let server = ServeChild::start(&[]);
    let tmux = Tmux::start("panic", &[("KURABE_TEST_PANIC_WORKER", "after:200")]);
    tmux.type_line(&command_line(&server.url, ""));
    let history = tmux.wait_for(Tmux::history, |h| {
        h.contains("exit=") && h.contains("speed")
    });
    assert!(!tmux.alternate_on());
    assert!(history.contains("exit=70"), "{history}");
    assert!(
        history.contains("test hook: KURABE_TEST_PANIC_WORKER=after:200"),
        "{history}"
    );
    assert_cooked(&history);
}

#[test]
fn tui_without_a_terminal_is_one_line_and_exit_2() {
    let server = ServeChild::start(&[]);
    let out = kurabe()
        .args(["http", &server.url, "-n", "5", "--tui"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("kurabe: error: --tui draws on a terminal and stdout is not one"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(server.served(), 0);
}

/// `kurabe replay … --tui`: the same view over a recording's replay (a
/// log of 600 requests 100 ms apart, a minute of traffic), `q` stops it,
/// the report follows in a cooked terminal.
#[test]
fn a_replay_shows_the_live_view_and_q_prints_its_report() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let lines: String = (0..600)
        .map(|i| {
            format!(
                "{}.{:03} \"GET /r/{i} HTTP/1.1\" 200\n",
                1_700_000_000 + i / 10,
                (i % 10) * 100
            )
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let tmux = Tmux::start("replay", &[]);
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    tmux.type_line(&format!(
        "{bin} replay {} {} --log-format '$msec \"$request\" $status' --tui; echo \"exit=$?\"; stty -a",
        log.display(),
        server.url
    ));
    let screen = tmux.wait_for(Tmux::screen, |s| {
        s.lines()
            .any(|l| l.starts_with("status ") && l.contains("  200: "))
    });
    assert!(tmux.alternate_on());
    let first = screen.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("kurabe replay {}  elapsed ", server.url)),
        "{screen}"
    );
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with("rate ") && l.contains("/s of 10/s")),
        "the recording's mean rate is the target: {screen}"
    );
    tmux.run(&["send-keys", "q"]);
    let history = tmux.wait_for(Tmux::history, exited);
    assert!(!tmux.alternate_on());
    assert!(history.contains("exit=130"), "{history}");
    assert!(history.contains("Complete requests:"), "{history}");
    assert_cooked(&history);
}

/// Where a live view cannot work: one line, exit 2, nothing sent.
#[test]
fn find_rate_refuses_the_live_flags_in_one_line() {
    let server = ServeChild::start(&[]);
    let find = ["http", &server.url, "--find-rate", "--slo", "p(99)<10ms"];
    for live in ["--tui", "--prometheus-addr=:0"] {
        let out = kurabe().args(find).arg(live).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{live}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--find-rate runs a search of many"), "{err}");
    }
    assert_eq!(server.served(), 0);
}

/// A plan of two variants at `url`, two rounds, one http workload: a 1 s
/// ramp to 400/s held for 40 s.
fn live_plan(dir: &std::path::Path, url: &str, extra: &str) -> std::path::PathBuf {
    let plan = dir.join("live.toml");
    let stages = r#"[{ duration = "1s", target = 400 }, { duration = "40s", target = 400 }]"#;
    std::fs::write(
        &plan,
        format!(
            r#"name = "live"
repeat = 2
[[variant]]
name = "fast"
url = "{url}"
[[variant]]
name = "slow"
url = "{url}"
[[workload]]
name = "index"
http = {{ path = "/", concurrency = 4, keep_alive = true, stages = {stages} }}
{extra}"#
        ),
    )
    .unwrap();
    plan
}

/// `kurabe run --tui`: one view for the whole experiment, titled with the
/// run in flight, its stage and rate; `q` stops the experiment (marked
/// interrupted, as Ctrl-C does) and its report prints in a cooked terminal.
#[test]
fn a_plan_shows_its_runs_live_and_q_prints_the_experiments_report() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let plan = live_plan(dir.path(), &server.url, "");
    let store = dir.path().join("store.db");
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    let tmux = Tmux::start("plan", &[]);
    tmux.type_line(&format!(
        "{bin} run {} --store {} --seed 1 --tui; echo \"exit=$?\"; stty -a",
        plan.display(),
        store.display()
    ));
    // The variants' URL is kurabe serve's on loopback: its CPU and Σ PSS
    // are sampled for the run and shown live.
    let screen = tmux.wait_for(Tmux::screen, |s| {
        s.contains("stage    2/2")
            && s.contains("status   ")
            && !s.contains("status   0 ok")
            && s.contains("server   CPU ")
    });
    assert!(tmux.alternate_on());
    let title = screen.lines().next().unwrap();
    assert!(
        title.starts_with("kurabe run live.toml  [1/4] round 1: "),
        "{screen}"
    );
    assert!(title.contains(" / index"), "{screen}");
    assert!(
        screen.contains("rate ") && screen.contains(" of 400/s"),
        "{screen}"
    );
    assert!(screen.contains("400/s → 400/s"), "{screen}");
    tmux.run(&["send-keys", "q"]);
    let history = tmux.wait_for(Tmux::history, exited);
    assert!(!tmux.alternate_on());
    assert!(history.contains("exit=130"), "{history}");
    assert!(history.contains("interrupted"), "{history}");
    assert!(history.contains("kurabe run: experiment"), "{history}");
    assert!(
        !history.contains("\u{1b}["),
        "escape codes in the report: {history}"
    );
    assert_cooked(&history);
}

/// `kurabe http A B --tui`: the A/B's rounds on one view, titled with the
/// URL in flight; `q` stops the comparison and prints its report.
#[test]
fn an_ab_shows_its_rounds_live_and_q_prints_the_comparison() {
    let server = ServeChild::start(&[]);
    let other = format!("{}?b", server.url);
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    let tmux = Tmux::start("ab", &[]);
    tmux.type_line(&format!(
        "{bin} http {} '{other}' -t 60 -c 2 -k --rate 300 --tui; echo \"exit=$?\"; stty -a",
        server.url
    ));
    let screen = tmux.wait_for(Tmux::screen, |s| {
        s.contains("status   ") && !s.contains("status   0 ok")
    });
    let title = screen.lines().next().unwrap();
    assert!(title.starts_with("kurabe http "), "{screen}");
    assert!(title.contains("[1/"), "{screen}");
    assert!(screen.contains(" of 300/s"), "{screen}");
    tmux.run(&["send-keys", "q"]);
    let history = tmux.wait_for(Tmux::history, exited);
    assert!(!tmux.alternate_on());
    assert!(history.contains("exit=130"), "{history}");
    assert!(history.contains("kurabe http: "), "{history}");
    assert_cooked(&history);
}

/// A command workload that writes to the terminal cannot share it with the
/// view: one line, exit 2, nothing run.
#[test]
fn a_plan_whose_command_writes_to_the_terminal_refuses_tui() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        r#"name = "p"
[[variant]]
name = "a"
[[workload]]
name = "echo"
command = { command = ["echo", "hi"], output = "inherit" }
"#,
    )
    .unwrap();
    let bin = kurabe().get_program().to_string_lossy().into_owned();
    let tmux = Tmux::start("inherit", &[]);
    tmux.type_line(&format!(
        "{bin} run {} --store {}/s.db --tui; echo \"exit=$?\"; stty -a",
        plan.display(),
        dir.path().display()
    ));
    let history = tmux.wait_for(Tmux::history, exited);
    assert!(history.contains("exit=2"), "{history}");
    assert!(
        history.contains("--tui: workload echo writes to the terminal"),
        "{history}"
    );
    assert!(!dir.path().join("s.db").exists(), "{history}");
}
