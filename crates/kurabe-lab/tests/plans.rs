//! Plan loading against real files: the committed example must load, and
//! bad plans must fail with `file:line: `field`: message` naming the fix.

use std::path::{Path, PathBuf};

use kurabe_lab::{load_plan, parse_plan, PlanError};
use kurabe_model::plan::{Bound, CommandLine, Ready, StopSignal, WorkloadKind};
use tempfile::TempDir;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The error message for plan `text`, named `bad.toml`.
fn err(text: &str) -> String {
    parse_plan(text, "bad.toml")
        .expect_err("plan should be rejected")
        .to_string()
}

const HEAD: &str = r#"name = "t"
[target]
command = "serve -p {port}"
[[variant]]
name = "a"
[[variant]]
name = "b"
[[workload]]
name = "w"
http = { requests = 10 }
"#;

#[test]
fn quickstart_example_loads() {
    let plan = load_plan(&example("quickstart.toml")).unwrap();
    assert_eq!(plan.repeat, 5);
    let (same, text) = kurabe_lab::load_plan_with_text(&example("quickstart.toml")).unwrap();
    assert_eq!(same, plan);
    assert!(text.starts_with("# kurabe quickstart"));
    let target = plan.target.as_ref().unwrap();
    assert_eq!(
        target.command,
        CommandLine::Argv(vec![
            "{kurabe}".into(),
            "serve".into(),
            "--port".into(),
            "{port}".into()
        ])
    );
    assert_eq!(
        target.ready,
        Some(Ready::Url("http://127.0.0.1:{port}/".into()))
    );
    assert_eq!(target.stop_signal, StopSignal::Term);
    let names: Vec<String> = plan
        .resolved_variants()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["work 50us", "work 100us"]);
    assert_eq!(plan.baseline_name().as_deref(), Some("work 50us"));
    let WorkloadKind::Http(http) = &plan.workloads[0].kind else {
        panic!("quickstart workload should be http");
    };
    assert_eq!(http.duration.unwrap().0.as_secs(), 3);
    assert_eq!(plan.checks[0].bound, Bound::MaxRatio(1.0));
    assert_eq!(plan.checks.len(), 2);
}

#[test]
fn minimal_plan_uses_defaults() {
    let plan = parse_plan(HEAD, "ok.toml").unwrap();
    assert_eq!(plan.repeat, 5);
    assert_eq!(plan.noise_band_for("requests_per_second"), 0.02);
    let t = plan.target.unwrap();
    assert_eq!(t.stop_grace.0.as_secs(), 5);
    assert_eq!(t.startup_timeout.0.as_secs(), 30);
}

#[test]
fn matrix_expands_into_substituted_variants() {
    let text = r#"name = "anim"
[target]
command = "chromium --fps {fps} --port {port}"
[matrix]
fps = [77, 12]
gc = ["on", false]
[[variant]]
name = "{fps} fps"
env = { GC = "{gc}" }
[[variant]]
name = "plain"
[[workload]]
name = "w"
watch = { duration = "10s" }
"#;
    // `{gc}` is not in the first name, so two variants per fps share it.
    assert_eq!(
        err(text),
        "bad.toml:8: `variant[0].name`: duplicate variant name `77 fps` \
         (after matrix expansion; put `{key}` in the name) (and 1 more problem)"
    );
    let plan = parse_plan(&text.replace("{fps} fps", "{fps} fps gc {gc}"), "m.toml").unwrap();
    let v = plan.resolved_variants();
    let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "77 fps gc on",
            "77 fps gc false",
            "12 fps gc on",
            "12 fps gc false",
            "plain fps=77 gc=on",
            "plain fps=77 gc=false",
            "plain fps=12 gc=on",
            "plain fps=12 gc=false",
        ]
    );
    assert_eq!(v[1].env["GC"], "false");
    assert_eq!(v[2].params["fps"], "12");
}

/// Bad plans: a valid head (lines 1–10) plus one fault each, and the exact
/// message each must give.
#[test]
fn bad_plans_name_file_line_field_and_fix() {
    let cases: &[(&str, &str)] = &[
        (
            "[[variant]]\nname = \"c\"\nlimits = { cpu = 2 }\n",
            "bad.toml:13: `variant[2].limits.cpu`: unknown field `cpu`, expected one of `cpus`, `cpuset`, `memory`",
        ),
        (
            "[[variant]]\nname = \"c\"\nlimits = { cpus = 0 }\n",
            "bad.toml:13: `variant[2].limits.cpus`: expected a number of cores from 0.01 up, like 0.5 or 2, got 0",
        ),
        (
            "[[variant]]\nname = \"c\"\nlimits = { memory = \"512x\" }\n",
            "bad.toml:13: `variant[2].limits.memory`: expected a size like `512M`, `1.5GiB`, `200MB` or a number of bytes, got `512x`",
        ),
        (
            "[[variant]]\nname = \"c\"\nlimits = { memory = \"100k\" }\n",
            "bad.toml:13: `variant[2].limits.memory`: 102400 bytes would kill any target at start; expected at least 1M, like \"512M\"",
        ),
        (
            "[[variant]]\nname = \"c\"\nlimits = { cpuset = \"3-1\" }\n",
            "bad.toml:13: `variant[2].limits.cpuset`: expected a CPU list like \"0\", \"0-3\" or \"0-1,4\", got `3-1`",
        ),
        ("[[variant]]\nname = \"a\"\n", "bad.toml:12: `variant[2].name`: duplicate variant name `a`"),
        (
            "[[variant]]\nname = \"c\"\nargs = [\"--fps\", \"{fsp}\"]\n",
            "bad.toml:13: `variant[2].args`: unknown placeholder `{fsp}`; known: {kurabe}, {port}, {worktree} (or give it with `kurabe run --set fsp=VALUE`)",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { requests = 10 }\nidle = {}\n",
            "bad.toml:8: `workload[0]`: workload `w2` needs exactly one of `http`, `command`, `watch`, `idle` or `system`, found http and idle",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { concurrency = 4 }\n",
            "bad.toml:13: `workload[1].http`: needs `requests` (like `-n`), `duration` (like `-t`) or `stages`",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { requests = 2, concurrency = 4 }\n",
            "bad.toml:13: `workload[1].http.requests`: 2 requests cannot keep 4 connections busy; lower `concurrency` or raise `requests`",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { url = \"ftp://example.com/\", requests = 5 }\n",
            "bad.toml:13: `workload[1].http.url`: expected an http:// or https:// URL, got `ftp://example.com/`",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { requests = 5, duration = \"10 parsecs\" }\n",
            "bad.toml:13: `workload[1].http.duration`: expected a duration like `10` (seconds), `1.5s`, `250ms`, `500us`, `2m`, `1h` or `1m30s`, got `10 parsecs`",
        ),
        (
            "[[workload]]\nname = \"w2\"\nhttp = { requests = 5 }\nmetrics = [\"system_index\"]\n",
            "bad.toml:14: `workload[1].metrics`: `http` workloads do not report `system_index`; expected one of: METRICS_HTTP",
        ),
        (
            "[[workload]]\nname = \"w\"\nidle = {}\n",
            "bad.toml:12: `workload[1].name`: duplicate workload name `w`",
        ),
        (
            "[[check]]\nmetric = \"requests_per_second\"\nvariant = \"z\"\nmin_ratio = 1.05\n",
            "bad.toml:13: `check[0].variant`: no variant named `z`; expected one of: a, b",
        ),
        (
            "[[check]]\nmetric = \"requests_per_second\"\nvariant = \"a\"\nmin_ratio = 1.05\n",
            "bad.toml:13: `check[0].variant`: `a` is the baseline; a ratio check compares another variant to it",
        ),
        (
            "[[check]]\nmetric = \"pss_peak_bytes\"\nmax = \"lots\"\n",
            "bad.toml:13: `check[0].max`: expected a size like `512M`, `1.5GiB`, `200MB` or a number of bytes, got `lots` (the metric `pss_peak_bytes` is a size)",
        ),
        (
            "[[check]]\nmetric = \"requests_per_second\"\nmin = 1\nmax = 2\n",
            "bad.toml:11: `check[0]`: check on `requests_per_second` needs exactly one of `min_ratio`, `max_ratio`, `min` or `max` (found 2); write two checks to bound both sides",
        ),
        (
            "[[check]]\nmetric = \"system_index\"\nmin = 1\n",
            "bad.toml:12: `check[0].metric`: no workload checked here reports `system_index`; add it to the workload's `metrics`",
        ),
        (
            "[matrix]\nport = [1, 2]\n",
            "bad.toml:12: `matrix.port`: `port` is reserved (`{port}` is the port allocated per run, `{kurabe}` this kurabe executable, `{worktree}` the variant's git work tree); choose another name",
        ),
        // TOML syntax: no field, just the line.
        (
            "[[variant]]\nname = \"c\"\nlimits = { cpus = 2 } oops\n",
            "bad.toml:13: unexpected key or value, expected newline, `#`",
        ),
    ];
    for (extra, want) in cases {
        let want = want.replace("METRICS_HTTP", "requests_per_second, latency_mean_us, latency_p50_us, latency_p90_us, latency_p99_us, latency_p999_us, failed_requests, failed_percent, check_pass_percent, non_2xx_responses, cpu_ms_per_request, cpu_percent_mean, cpu_time_ms, pss_peak_bytes, pss_steady_bytes, rss_peak_bytes, uss_peak_bytes, pss_slope_bytes_per_request, pss_growth_mb_per_hour, pss_growing");
        assert_eq!(err(&format!("{HEAD}{extra}")), want, "plan tail:\n{extra}");
    }
}

#[test]
fn bad_top_level_fields() {
    let cases: &[(&str, &str)] = &[
        ("repeat = 3\n", "bad.toml:1: missing field `name`"),
        (
            "name = \"x\"\nrepeat = \"five\"\n",
            "bad.toml:2: `repeat`: invalid type: string \"five\", expected u32",
        ),
        (
            "name = \"x\"\nwarmup = -10\n",
            "bad.toml:2: `warmup`: expected a duration like `10` (seconds), `1.5s`, `250ms`, `500us`, `2m`, `1h` or `1m30s`, got -10",
        ),
        (
            "name = \"x\"\nbaseline = \"nope\"\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\nsystem = {}\n",
            "bad.toml:2: `baseline`: no variant named `nope`; expected one of: a",
        ),
        (
            "name = \"x\"\n[[variant]]\nname = \"a\"\nargs = [\"x\"]\n[[workload]]\nname = \"w\"\nhttp = { requests = 1 }\n",
            "bad.toml:4: `variant[0].args`: applies to the target, but the plan has no [target] (and 1 more problem)",
        ),
        // Problems whose key is absent carry no line.
        ("name = \"x\"\n", "bad.toml: `variant`: a plan needs at least one [[variant]] (or a [matrix]) to run (and 1 more problem)"),
        ("name = \"\"\nrepeat = 0\n", "bad.toml:1: `name`: must not be empty: name the experiment (and 3 more problems)"),
    ];
    for (text, want) in cases {
        assert_eq!(err(text), *want, "plan:\n{text}");
    }
}

#[test]
fn file_errors_name_the_path() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("nope.toml");
    let e = load_plan(&missing).unwrap_err();
    assert!(matches!(e, PlanError::Read { .. }));
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read plan {}: No such file or directory (os error 2); check the path",
            missing.display()
        )
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nrepeat = 0\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\nsystem = {}\n")
        .unwrap();
    assert_eq!(
        load_plan(&bad).unwrap_err().to_string(),
        format!(
            "{}:2: `repeat`: must be at least 1 (3 or more give a confidence interval)",
            bad.display()
        )
    );

    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; (1 << 20) + 1]).unwrap();
    assert!(matches!(
        load_plan(&big),
        Err(PlanError::Input(kurabe_input::InputError::TooLarge { .. }))
    ));
}

#[test]
fn plan_round_trips_through_json() {
    // The store and reports keep plans as JSON; nothing may be lost.
    let plan = load_plan(&example("quickstart.toml")).unwrap();
    let json = serde_json::to_string(&plan).unwrap();
    let back: kurabe_model::plan::Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn noise_bands_per_metric_override_the_plan_default() {
    let text = format!("noise_band = \"3%\"\nnoise_bands = {{ latency_p99_us = 0.1 }}\n{HEAD}");
    let plan = parse_plan(&text, "n.toml").unwrap();
    assert_eq!(plan.metric("requests_per_second").unwrap().noise_band, 0.03);
    assert_eq!(plan.metric("latency_p99_us").unwrap().noise_band, 0.1);
    assert!(plan.metric("nope").is_none());
    assert_eq!(
        err(&format!("noise_band = \"200%\"\n{HEAD}")),
        "bad.toml:1: `noise_band`: expected a fraction between 0 and 1 like 0.02 or \"2%\", got 2"
    );
    assert!(err(&format!("noise_bands = {{ rps = 0.1 }}\n{HEAD}"))
        .starts_with("bad.toml:1: `noise_bands.rps`: unknown metric `rps`; expected one of: capacity_per_second, requests_per_second, "));
}

#[test]
fn every_kind_of_workload_and_ready_parses() {
    let text = r#"name = "all kinds"
[target]
command = ["app", "--port", "{port}"]
ready = { log = "listening" }
stop_signal = "SIGINT"
stop_grace = "2s"
env = { MODE = "bench" }
[[variant]]
name = "a"
limits = { cpus = 0.5, cpuset = "0", memory = "512M" }
[[workload]]
name = "http"
http = { path = "/x?y=1", requests = 100, concurrency = 2, headers = { Accept = "*/*" }, cookies = ["a=b"], rate = 50.0, warmup = "500ms", variable_length = true }
[[workload]]
name = "cmd"
command = { command = "sleep 0.1", runs = 3, warmup_runs = 1, timeout = "5s" }
[[workload]]
name = "watch"
watch = { duration = "10s", interval = "200ms" }
[[workload]]
name = "boot"
idle = { settle = "3s", scope = "system" }
[[workload]]
name = "index"
system = { tests = ["dhry2reg"], copies = 1, quick = true }
"#;
    let plan = parse_plan(text, "all.toml").unwrap();
    let t = plan.target.as_ref().unwrap();
    assert_eq!(t.ready, Some(Ready::Log("listening".into())));
    assert_eq!(t.stop_signal, StopSignal::Int);
    let limits = plan.variants[0].limits.as_ref().unwrap();
    assert_eq!(
        (limits.cpus, limits.memory.unwrap().0),
        (Some(0.5), 512 << 20)
    );
    let kinds: Vec<&str> = plan.workloads.iter().map(|w| w.kind.key()).collect();
    assert_eq!(kinds, ["http", "command", "watch", "idle", "system"]);
    assert_eq!(plan.workloads[3].selected_metrics(), ["system_used_bytes"]);
    let tcp = parse_plan(
        &text.replace(r#"{ log = "listening" }"#, r#"{ tcp = "{port}" }"#),
        "t.toml",
    )
    .unwrap();
    assert_eq!(
        tcp.target.unwrap().ready,
        Some(Ready::Tcp(kurabe_model::plan::PortSpec::Allocated))
    );
    assert_eq!(
        err(&text.replace(r#"{ log = "listening" }"#, r#"{ tcp = 0 }"#)),
        "bad.toml:4: `target.ready.tcp`: expected a port number 1–65535 or \"{port}\", got 0"
    );
    assert_eq!(
        err(&text.replace(
            r#"{ log = "listening" }"#,
            r#"{ log = "x", url = "http://127.0.0.1/" }"#
        )),
        "bad.toml:4: `target.ready`: expected exactly one of `url`, `tcp` or `log` in `ready`"
    );
}

/// Plans read durations and sizes in the command line's grammar: a bare
/// number is seconds, compound durations add up, `MB` is 10⁶ and `M` 2²⁰.
#[test]
fn durations_and_sizes_read_as_on_the_command_line() {
    let text = r#"name = "grammar"
warmup = 2
[target]
command = "app {port}"
startup_timeout = "1m30s"
[[variant]]
name = "mb"
limits = { memory = "64MB" }
[[variant]]
name = "mib"
limits = { memory = "64M" }
[[workload]]
name = "h"
http = { duration = 1.5, requests = 10 }
"#;
    let plan = parse_plan(text, "grammar.toml").unwrap();
    let secs = |d: kurabe_model::plan::HumanDuration| d.0.as_secs_f64();
    assert_eq!(plan.warmup.map(secs), Some(2.0));
    assert_eq!(secs(plan.target.as_ref().unwrap().startup_timeout), 90.0);
    let memory = |i: usize| plan.variants[i].limits.as_ref().unwrap().memory.unwrap().0;
    assert_eq!(memory(0), 64_000_000);
    assert_eq!(memory(1), 64 << 20);
    let WorkloadKind::Http(h) = &plan.workloads[0].kind else {
        panic!("http workload");
    };
    assert_eq!(h.duration.map(secs), Some(1.5));
}

#[test]
fn revisions_and_build_parse_and_are_checked() {
    let ok = r#"name = "t"
[target]
command = "{worktree}/app -p {port}"
[build]
command = "make"
[[variant]]
name = "old"
rev = "v1.2"
[[variant]]
name = "new {r}"
rev = "{r}"
vars = { r = "main" }
[[workload]]
name = "w"
http = { requests = 10 }
"#;
    let ok = ok.replace("vars = { r = \"main\" }", "");
    let ok = ok.replace("{r}", "main");
    let plan = parse_plan(&ok, "ok.toml").unwrap();
    let revs: Vec<Option<String>> = plan
        .resolved_variants()
        .into_iter()
        .map(|v| v.rev)
        .collect();
    assert_eq!(revs, vec![Some("v1.2".into()), Some("main".into())]);
    assert_eq!(
        plan.build.unwrap().command,
        CommandLine::Shell("make".into())
    );

    assert!(parse_plan(&format!("{HEAD}[build]\ncommand = \"make\"\n"), "b.toml").is_ok());
    let e = err(&HEAD.replace("name = \"b\"", "name = \"b\"\nrev = \"--force\""));
    assert!(e.contains("bad.toml:8: `variant[1].rev`"), "{e}");
    assert!(e.contains("not a git revision"), "{e}");
    let e = err(&HEAD.replace(
        "name = \"b\"",
        "name = \"b\"\nrev = \"v1\"\n[build]\ncommand = \"\"",
    ));
    assert!(e.contains("`build.command`: must not be empty"), "{e}");
}
