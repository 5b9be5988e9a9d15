//! Variants from git revisions and `kurabe bisect`, in throwaway git
//! repositories made by each test: a shell "program" whose loop count (its
//! work) is set per commit, built by copying it into `out/`.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::kurabe;

/// git in `dir` with a fixed identity; panics when it fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=kurabe test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with one commit per entry of `loops` (the program's work);
/// commits listed in `broken` add a file that makes the build fail.
/// Returns the dir and the commit ids, oldest first.
fn repo(loops: &[u32], broken: &[usize]) -> (tempfile::TempDir, Vec<String>) {
    let scripts: Vec<String> = loops
        .iter()
        .map(|n| format!("echo {n} >> seen.txt\ni=0\nwhile [ $i -lt {n} ]; do i=$((i+1)); done\n"))
        .collect();
    repo_of(&scripts, broken)
}

/// A repository with one commit per script (its `work.sh`); commits listed
/// in `broken` add a file that makes the build fail.
fn repo_of(scripts: &[String], broken: &[usize]) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    let mut commits = Vec::new();
    for (i, script) in scripts.iter().enumerate() {
        std::fs::write(d.join("work.sh"), script).unwrap();
        let flag = d.join("broken");
        if broken.contains(&i) {
            std::fs::write(&flag, "").unwrap();
        } else if flag.exists() {
            std::fs::remove_file(&flag).unwrap();
        }
        git(d, &["add", "-A", "work.sh"]);
        git(d, &["add", "-A", "."]);
        git(
            d,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("work {} (commit {i})", script.lines().next().unwrap_or("")),
            ],
        );
        commits.push(git(d, &["rev-parse", "HEAD"]));
    }
    std::fs::write(
        d.join(".git/info/exclude"),
        "plan.toml\nseen.txt\n*.db\ncache/\n",
    )
    .unwrap();
    (dir, commits)
}

const BUILD: &str = r#"[build]
command = "test ! -e broken && mkdir -p out && cp work.sh out/work.sh"
"#;

const WORKLOAD: &str = r#"[[workload]]
name = "loop"
command = { command = "sh {worktree}/out/work.sh" }
metrics = ["user_time_s", "max_rss_bytes"]
"#;

fn write_plan(dir: &Path, variants: &str) -> std::path::PathBuf {
    let plan = format!("name = \"loop\"\nrepeat = 3\n{BUILD}{variants}{WORKLOAD}");
    let path = dir.join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    path
}

fn run(dir: &Path, plan: &Path, extra: &[&str]) -> Output {
    kurabe()
        .arg("run")
        .arg(plan)
        .arg("--store")
        .arg(dir.join("results.db"))
        .args(extra)
        .env("KURABE_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn variants_run_from_cached_builds_of_their_revisions() {
    let (dir, commits) = repo(&[1000, 3000], &[]);
    let d = dir.path();
    let plan = write_plan(
        d,
        "[[variant]]\nname = \"old\"\nrev = \"HEAD~1\"\n[[variant]]\nname = \"new\"\nrev = \"main\"\n",
    );
    let o = run(d, &plan, &["--repeat", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let short = |c: &String| c[..12].to_owned();
    assert!(
        err.contains(&format!("revision HEAD~1 = {} (built)", short(&commits[0]))),
        "{err}"
    );
    assert!(
        err.contains(&format!("revision main = {} (built)", short(&commits[1]))),
        "{err}"
    );
    let seen = std::fs::read_to_string(d.join("seen.txt")).unwrap();
    let mut lines: Vec<&str> = seen.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["1000", "3000"],
        "each variant ran its own commit's program"
    );
    // The user's own work tree is untouched; the builds live in the cache.
    assert!(!d.join("out").exists());
    let again = run(d, &plan, &["--repeat", "1"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let err = stderr(&again);
    assert!(
        err.contains("(cached)") && !err.contains("(built)"),
        "{err}"
    );
}

#[test]
fn bad_revisions_builds_and_places_exit_2_with_one_line() {
    let (dir, _) = repo(&[1000, 1000], &[1]);
    let d = dir.path();
    let plan = write_plan(d, "[[variant]]\nname = \"x\"\nrev = \"no-such-tag\"\n");
    let o = run(d, &plan, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("revision `no-such-tag` does not exist"),
        "{err}"
    );

    let plan = write_plan(d, "[[variant]]\nname = \"x\"\nrev = \"HEAD\"\n");
    let o = run(d, &plan, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("build of revision `HEAD`") && err.contains("exit status 1"),
        "{err}"
    );

    let plain = tempfile::tempdir().unwrap();
    let plan = write_plan(plain.path(), "[[variant]]\nname = \"x\"\nrev = \"HEAD\"\n");
    let o = run(plain.path(), &plan, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not inside a git work tree"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bisect_names_the_commit_where_the_work_steps_and_skips_what_does_not_build() {
    // The memory the work takes triples at commit 4 (an awk string doubled
    // past 20 MB, then past 60 MB: a 51 MB peak, then 100 MB); commit 5 does
    // not build. Peak memory, not time: on a loaded virtual machine even
    // user CPU time is charged ticks the host took away (CI once measured a
    // 20 000-step loop nearer a 60 000-step one and named commit 2), while
    // this peak moves by a fraction of a per cent, well inside the 2 % band.
    let mb = [20, 20, 20, 20, 60, 60, 60, 60];
    let scripts: Vec<String> = mb
        .iter()
        .map(|m| format!("awk 'BEGIN {{ s = \"x\"; while (length(s) < {m}000000) s = s s }}'\n"))
        .collect();
    let (dir, commits) = repo_of(&scripts, &[5]);
    let d = dir.path();
    let plan = write_plan(d, "[[variant]]\nname = \"loop\"\n");
    let o = kurabe()
        .args(["bisect"])
        .arg(&plan)
        .args([
            "--good",
            &commits[0],
            "--bad",
            "main",
            "--metric",
            "max_rss_bytes",
        ])
        .args(["--format", "json", "--store"])
        .arg(d.join("results.db"))
        .env("KURABE_CACHE_DIR", d.join("cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    kurabe_testkit::schema::assert_valid("bisect-report.schema.json", &v);
    let found = &v["result"]["found"];
    assert_eq!(found["kind"], "commit", "{v:#}");
    assert_eq!(found["first_bad"], commits[4].as_str(), "{v:#}");
    assert_eq!(found["last_good"], commits[3].as_str());
    let skipped = v["result"]["skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|s| s["commit"] == commits[5].as_str()),
        "commit 5 is skipped: {v:#}"
    );
    assert!(
        v["result"]["confidence"].as_f64().is_some_and(|c| c > 0.5),
        "{v:#}"
    );
    assert!(stderr(&o).contains("commit "), "build notes on stderr");
}

#[test]
fn bisect_refuses_reversed_or_unknown_revisions() {
    let (dir, commits) = repo(&[1000, 1000, 1000], &[]);
    let d = dir.path();
    let plan = write_plan(d, "[[variant]]\nname = \"loop\"\n");
    let bisect = |good: &str, bad: &str, metric: &str| {
        kurabe()
            .arg("bisect")
            .arg(&plan)
            .args(["--good", good, "--bad", bad, "--metric", metric, "--store"])
            .arg(d.join("results.db"))
            .env("KURABE_CACHE_DIR", d.join("cache"))
            .output()
            .unwrap()
    };
    let o = bisect("main", &commits[0], "user_time_s");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not an earlier ancestor"),
        "{}",
        stderr(&o)
    );
    let o = bisect("v9", "main", "user_time_s");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("revision `v9` does not exist"),
        "{}",
        stderr(&o)
    );
    let o = bisect(&commits[0], "main", "no_such_metric");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--metric"), "{}", stderr(&o));
}
