//! `kurabe cmd --profile`: the differential profile through the built
//! binary, on a C workload (kurabe-profile's `tests/work.c`, built with
//! `gcc -fno-omit-frame-pointer -O1`) whose second command does known
//! extra work in a function it names.

use std::path::{Path, PathBuf};

use kurabe_model::bench::CmdExport;
use serde_json::Value;

use crate::util::kurabe;

/// `work.c` built in `dir`.
fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kurabe-profile/tests/work.c");
    let exe = dir.join("work");
    let st = std::process::Command::new("gcc")
        .args(["-fno-omit-frame-pointer", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc runs (apt-get install gcc)");
    assert!(st.success());
    exe
}

#[test]
fn the_function_with_the_extra_work_carries_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let out = kurabe()
        .args(["cmd", "--no-save", "--profile", "-N", "-r", "10"])
        .args(["--export-json", "out.json", "--export-markdown", "out.md"])
        .args([
            "./work 20000000 20000000 0",
            "./work 20000000 20000000 20000000",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("of it in `extra_work`"), "{stdout}");
    let profile_lines = stdout.lines().skip_while(|l| !l.starts_with("Profile:"));
    for line in profile_lines {
        assert!(
            line.chars().count() <= 100,
            "longer than 100 columns: {line}"
        );
    }
    let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    kurabe_testkit::schema::assert_valid("cmd-export.schema.json", &v);
    let export: CmdExport = serde_json::from_str(&text).unwrap();
    let profile = export.profile.expect("a profile");
    assert_eq!(profile.runs.len(), 20, "every run of both commands");
    assert!(profile.runs.iter().all(|r| r.profile.divisor >= 1));
    let c = &profile.comparisons[0];
    let top = &c.functions[0];
    assert_eq!(top.function, "extra_work", "{:#?}", c.functions);
    assert!(top.share_of_difference_pct >= 80.0, "{top:#?}");
    let md = std::fs::read_to_string(dir.path().join("out.md")).unwrap();
    assert!(md.contains("| `extra_work` |"), "{md}");
}

#[test]
fn profile_takes_on_or_required_and_nothing_else() {
    let out = kurabe()
        .args(["cmd", "--no-save", "--profile=sometimes", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("required"), "{err}");
}

/// kurabe-profile's `tests/server.c` (a pre-forking keep-alive server:
/// a master, two workers of two threads each, all running before any
/// load), built in `dir` and started with `base` and `extra` loop
/// iterations per request; its URL.
struct CServer {
    child: std::process::Child,
    url: String,
}

impl CServer {
    fn start(exe: &Path, base: u64, extra: u64) -> CServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new(exe)
            .args([base.to_string(), extra.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let url = format!("http://127.0.0.1:{}/", line.trim());
        CServer { child, url }
    }
}

impl Drop for CServer {
    fn drop(&mut self) {
        // Its workers die with it (PR_SET_PDEATHSIG).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn build_server(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kurabe-profile/tests/server.c");
    let exe = dir.join("server");
    let st = std::process::Command::new("gcc")
        .args(["-fno-omit-frame-pointer", "-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc runs (apt-get install gcc)");
    assert!(st.success());
    exe
}

/// `kurabe http A B A' --profile` against a server that was running
/// before the load (its samples come from worker processes and threads
/// that existed when the sampler attached, which `inherit` alone would
/// miss), then one `kurabe http URL --profile`: B's extra work per
/// request lands in `extra_work`, the A/A names nothing, CPU is per
/// request. About 10 s on a loaded 2-core machine: 9 runs of 800
/// requests of ≤ 0.3 ms of CPU, and one more run; most of it is each
/// run's own overhead, not the sampling.
#[test]
fn a_running_servers_extra_work_per_request_lands_in_its_function() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_server(dir.path());
    let a = CServer::start(&exe, 30_000, 0);
    let b = CServer::start(&exe, 30_000, 120_000);
    let a2 = CServer::start(&exe, 30_000, 0);
    let db = dir.path().join("r.db");
    let out = kurabe()
        .args(["http", "-q", "--profile", "-n", "800", "-c", "2", "-k"])
        .args(["--rounds", "3", "--format", "json", "--save", "--store"])
        .arg(&db)
        .args([&a.url, &b.url, &a2.url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("http-compare.schema.json", &v);
    let p = &v["comparison"]["workloads"][0]["profile"];
    assert_eq!(p["per"], "request");
    assert_eq!(p["runs"].as_array().unwrap().len(), 9, "every run sampled");
    let divisor = p["runs"][0]["profile"]["divisor"].as_u64().unwrap();
    assert!((800..=810).contains(&divisor), "per request: {divisor}");
    let c = |i: usize| &p["comparisons"][i];
    assert_eq!(c(0)["candidate"], b.url.as_str());
    let top = &c(0)["functions"][0];
    assert_eq!(top["function"], "extra_work", "{}", c(0));
    let share = top["share_of_difference_pct"].as_f64().unwrap();
    assert!(share >= 80.0, "{}", c(0));
    let named: Vec<&Value> = c(1)["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "better" || f["verdict"] == "worse")
        .collect();
    assert!(named.is_empty(), "A/A named {named:#?}");
    // The run's own record keeps no second copy of its stacks.
    assert!(v["runs"][0]["http"].get("profile").is_none());
    // The saved experiment says it in words, within 100 columns.
    let report = kurabe()
        .args(["report", "e1", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("of it in `extra_work`"), "{text}");
    assert!(text.contains("ms/req"), "{text}");
    // (The header names the plan, three URLs long: not the profile's.)
    for line in text.lines().skip_while(|l| !l.starts_with("Profile:")) {
        assert!(line.chars().count() <= 100, "over 100 columns: {line}");
    }
    // One URL: the server's own profile, its top function first.
    let one = kurabe()
        .args(["http", "--profile", "-n", "800", "-c", "2", "-k", &b.url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(one.status.success(), "{text}");
    let table = text.split("the functions with the most own CPU:").nth(1);
    let first = table.and_then(|t| t.lines().nth(2)).unwrap_or_default();
    assert!(first.ends_with("extra_work"), "{text}");
}
