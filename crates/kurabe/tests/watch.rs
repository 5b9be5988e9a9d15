//! `kurabe watch` against real processes, checked against the kernel's own
//! accounting taken in the same run (`/usr/bin/time` around the command,
//! `smem` on the same tree), never against absolute constants.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kurabe_model::probe::{CpuSource, WatchEnd, WatchReport};
use kurabe_testkit::nginx::{Listen, Nginx};
use serde_json::Value;

use crate::util::kurabe;

/// A perl busy loop of `secs` seconds of wall time (pure user CPU).
fn busy(secs: f64) -> Vec<String> {
    vec![
        "perl".into(),
        "-MTime::HiRes=time".into(),
        "-e".into(),
        format!("$e = time + {secs}; 1 while time < $e"),
    ]
}

/// Run `kurabe watch --format json ARGS -- /usr/bin/time -o FILE CMD` and
/// return the report and time's `(user+sys, elapsed)`.
fn watch_timed(flags: &[&str], cmd: &[String]) -> (WatchReport, f64, f64, Output) {
    let dir = tempfile::tempdir().unwrap();
    let tfile = dir.path().join("time.txt");
    let out = kurabe()
        .args(["watch", "--format", "json"])
        .args(flags)
        .arg("--")
        .args(["/usr/bin/time", "-f", "%U %S %e", "-o"])
        .arg(&tfile)
        .args(cmd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kurabe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = parse_report(&out.stdout);
    let t = std::fs::read_to_string(&tfile).unwrap();
    let f: Vec<f64> = t
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (report, f[0] + f[1], f[2], out)
}

/// Deserialize into the typed model and validate against the committed schema.
pub fn parse_report(stdout: &[u8]) -> WatchReport {
    let v: Value = serde_json::from_slice(stdout).expect("JSON output");
    kurabe_testkit::schema::assert_valid("watch-report.schema.json", &v);
    serde_json::from_value(v).expect("typed WatchReport")
}

/// cgroup directories a kurabe process with this PID left behind.
pub fn leftover_cgroups(kurabe_pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: u32, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(p.clone());
            }
            if depth > 0 {
                walk(&p, prefix, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        Path::new("/sys/fs/cgroup"),
        &format!("kurabe-{kurabe_pid}-"),
        4,
        &mut out,
    );
    out
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
        .unwrap_or(false)
}

/// Poll `cond` every 10 ms until it holds or `limit` passes.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Run kurabe to completion and return its PID with the output (for the
/// leftover-cgroup check).
fn run_tracked(cmd: &mut Command) -> (u32, Output) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

#[test]
fn busy_loop_cpu_matches_kernel_accounting() {
    let (r, cpu_ref, elapsed, _) = watch_timed(&["--interval", "0.25"], &busy(3.0));
    let pct_ref = cpu_ref / elapsed * 100.0;
    assert_eq!(r.cpu_source, CpuSource::Cgroup, "{:?}", r.notes);
    // CPU seconds within 2 % of /usr/bin/time (+ its 10 ms rounding of U and S).
    assert!(
        (r.cpu_seconds - cpu_ref).abs() <= 0.02 * cpu_ref + 0.02,
        "kurabe {:.3} s vs time {:.3} s",
        r.cpu_seconds,
        cpu_ref
    );
    // The /proc path alone agrees too (no cgroup involved in that figure).
    assert!(
        (r.cpu_seconds_proc - cpu_ref).abs() <= 0.03 * cpu_ref + 0.03,
        "/proc {:.3} s vs time {:.3} s",
        r.cpu_seconds_proc,
        cpu_ref
    );
    // Mean CPU % within 3 points of the kernel's CPU / elapsed.
    assert!(
        (r.cpu_percent_mean - pct_ref).abs() <= 3.0,
        "kurabe {:.1} % vs time {:.1} %",
        r.cpu_percent_mean,
        pct_ref
    );
    assert!(r.cpu_percent_max >= r.cpu_percent_p95);
    assert_eq!(r.ended, WatchEnd::Exited);
    assert_eq!(r.exit.unwrap().code, Some(0));
    assert!(r.processes_max >= 2, "time and perl");
    assert!(r.samples >= 8);
    assert!(r.series.windows(2).all(|w| w[0].t_s <= w[1].t_s));
    assert!(r.pss_peak_bytes > 0 && r.uss_peak_bytes > 0);
    assert!(
        (r.cpu_share_of_all_cores_percent * f64::from(r.ncpus) - r.cpu_percent_mean).abs() < 1e-6
    );
}

#[test]
fn cpu_quota_half_a_core() {
    let (r, cpu_ref, elapsed, _) =
        watch_timed(&["--cpus", "0.5", "--interval", "0.25"], &busy(3.0));
    let pct_ref = cpu_ref / elapsed * 100.0;
    assert!(
        pct_ref <= 56.0,
        "the quota held the loop to half a core: {pct_ref:.1} %"
    );
    assert!(
        (r.cpu_percent_mean - pct_ref).abs() <= 5.0,
        "kurabe {:.1} % vs time {:.1} %",
        r.cpu_percent_mean,
        pct_ref
    );
    let l = r.limits.expect("limits reported");
    assert_eq!(l.cpus, Some(0.5));
    assert!(matches!(l.cgroup_version, 1 | 2));
}

#[test]
fn forking_shell_loses_no_cpu() {
    let sh = vec![
        "sh".to_string(),
        "-c".into(),
        "for i in $(seq 300); do sha256sum /bin/ls >/dev/null; done".into(),
    ];
    for flags in [
        &["--interval", "0.1"][..],
        &["--interval", "0.1", "--no-cgroup"][..],
    ] {
        let (r, cpu_ref, _, _) = watch_timed(flags, &sh);
        let tol = 0.05 * cpu_ref + 0.03;
        assert!(
            (r.cpu_seconds - cpu_ref).abs() <= tol,
            "{flags:?}: kurabe {:.3} s ({:?}) vs time {:.3} s",
            r.cpu_seconds,
            r.cpu_source,
            cpu_ref
        );
        assert!(
            (r.cpu_seconds_proc - cpu_ref).abs() <= tol,
            "{flags:?}: /proc {:.3} s vs time {:.3} s",
            r.cpu_seconds_proc,
            cpu_ref
        );
        let expected = if flags.contains(&"--no-cgroup") {
            CpuSource::Rusage
        } else {
            CpuSource::Cgroup
        };
        assert_eq!(r.cpu_source, expected);
    }
}

/// A perl parent that writes 100 MiB, forks 4 workers sharing it copy-on-write,
/// writes all five PIDs to `ARGV[0]` and sleeps until killed. (perl, not
/// python: smem is a python program, and its own mappings of the python
/// binary would shift the tree's share of it while it measures.)
const SHARED_WORKERS: &str = r#"
my $data = "x" x (100 << 20);
my @pids;
for (1 .. 4) {
    my $pid = fork();
    if ($pid == 0) { sleep 1000 while 1; exit 0 }
    push @pids, $pid;
}
open(my $f, ">", "$ARGV[0].tmp") or die;
print $f join(" ", $$, @pids);
close($f);
rename("$ARGV[0].tmp", $ARGV[0]) or die;
sleep 1000 while 1;
"#;

#[test]
fn shared_workers_pss_matches_smem_and_rss_overcounts() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kurabe_shared_workers.pl");
    std::fs::write(&script, SHARED_WORKERS).unwrap();
    let ready = dir.path().join("ready");
    let child = kurabe()
        .args(["watch", "--format", "json", "--duration", "5", "--"])
        .arg("/usr/bin/perl")
        .arg(&script)
        .arg(&ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kpid = child.id();
    let spawned = Instant::now();
    assert!(
        wait_for(Duration::from_secs(20), || ready.exists()),
        "workers never got ready"
    );
    let ready_at = Instant::now();
    let smem = Command::new("smem")
        .args(["-t", "-c", "pid pss", "-P"])
        .arg(format!("^/usr/bin/perl {}", script.display()))
        .output()
        .expect("smem is installed (.ci/run installs it)");
    let smem_text = String::from_utf8_lossy(&smem.stdout);
    let total_line = smem_text.lines().last().unwrap();
    let f: Vec<u64> = total_line
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(f[0], 5, "smem saw the parent and 4 workers:\n{smem_text}");
    let smem_pss = f[1] * 1024;
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse_report(&out.stdout);
    // Every sample from 1.5 s after the workers were ready (time for a
    // discovery scan and a full PSS refresh) must agree with smem: stale PSS
    // values from before the fork would make the sum too high.
    let settle = ready_at.duration_since(spawned).as_secs_f64() + 1.5;
    let steady: Vec<_> = r
        .series
        .iter()
        .filter(|p| p.size.processes == 5 && p.t_s >= settle)
        .collect();
    assert!(
        !steady.is_empty(),
        "no steady sample after {settle:.1} s: {:?}",
        r.series
    );
    for p in &steady {
        let diff = (p.size.pss_bytes as f64 - smem_pss as f64).abs() / smem_pss as f64;
        assert!(
            diff <= 0.02,
            "Σ PSS kurabe {} at {:.2} s vs smem {} ({:.2} %)",
            p.size.pss_bytes,
            p.t_s,
            smem_pss,
            diff * 100.0
        );
    }
    let p = steady.last().unwrap();
    assert!(r.rss_overcounts);
    assert!(
        p.size.rss_bytes > 2 * p.size.pss_bytes,
        "5 processes share 100 MiB: Σ RSS {} Σ PSS {}",
        p.size.rss_bytes,
        p.size.pss_bytes
    );
    assert_eq!(r.processes_max, 5);
    assert_eq!(r.ended, WatchEnd::Duration);
    assert!(r.exit.unwrap().signal.is_some(), "killed at --duration");
    // Everything it started is gone, and so is its cgroup.
    let pids: Vec<u32> = std::fs::read_to_string(&ready)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(
        wait_for(Duration::from_secs(3), || pids.iter().all(|p| !alive(*p))),
        "{pids:?} survived"
    );
    assert!(leftover_cgroups(kpid).is_empty());
}

/// A free TCP port on `addr` (bind 0, read it back, close).
fn free_port(addr: &str) -> u16 {
    std::net::TcpListener::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// nginx with a master and two workers listening on `addr`: `watch --port`
/// finds the master as the root of the listeners and sees its workers.
fn port_finds_nginx(addr: &str) {
    let dir = tempfile::tempdir().unwrap();
    let listen = Listen { addr, params: "" };
    let server = "location / { return 200 'ok'; }";
    let Some(mut nginx) = Nginx::start(dir.path(), 2, &[listen], server) else {
        return;
    };
    let (master, port) = (nginx.pid(), nginx.ports()[0]);
    let out = kurabe()
        .args([
            "watch",
            "--format",
            "json",
            "--interval",
            "0.2",
            "--duration",
            "1",
            "--port",
        ])
        .arg(port.to_string())
        .output()
        .unwrap();
    nginx.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse_report(&out.stdout);
    assert_eq!(r.pid, master, "the master is the root of the listeners");
    assert_eq!(r.port, Some(port));
    assert_eq!(r.processes_max, 3, "master + 2 workers");
    assert!(r.pss_peak_bytes > 0);
}

#[test]
fn port_finds_nginx_master_and_workers_ipv4() {
    port_finds_nginx("127.0.0.1");
}

#[test]
fn port_finds_nginx_master_and_workers_ipv6() {
    port_finds_nginx("::1");
}

#[test]
fn pid_that_exits_mid_run_gives_a_summary() {
    let mut sleeper = Command::new("sleep").arg("1").spawn().unwrap();
    let t0 = Instant::now();
    let out = kurabe()
        .args([
            "watch",
            "--format",
            "json",
            "--interval",
            "0.1",
            "--duration",
            "20",
            "-p",
        ])
        .arg(sleeper.id().to_string())
        .output()
        .unwrap();
    let _ = sleeper.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "stopped when the PID exited"
    );
    let r = parse_report(&out.stdout);
    assert_eq!(r.ended, WatchEnd::Exited);
    assert!(
        r.notes.iter().any(|n| n.contains("exited")),
        "{:?}",
        r.notes
    );
    assert!(r.samples >= 2);
    assert_eq!(r.cpu_source, CpuSource::Proc);
}

#[test]
fn csv_and_svg_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("w.csv");
    let svg = dir.path().join("w.svg");
    let out = kurabe()
        .args(["watch", "--format", "csv", "--interval", "0.1", "-o"])
        .arg(&csv)
        .arg("--svg")
        .arg(&svg)
        .args(["--", "sh", "-c", "sleep 0.5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "-o sends the output to the file");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("t_s,cpu_percent,cpu_seconds,rss_bytes,pss_bytes"));
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() >= 3, "{text}");
    assert!(rows.iter().all(|r| r.split(',').count() == 12));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    assert_eq!(s.matches("<polyline").count(), 3, "CPU, RSS and PSS lines");
}

#[test]
fn text_summary_names_the_figures() {
    let out = kurabe()
        .args(["watch", "--interval", "0.1", "--", "sh", "-c", "sleep 0.3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8_lossy(&out.stdout);
    for want in [
        "CPU ",
        "p95",
        "one core",
        "CPU time",
        "Σ PSS",
        "Σ RSS",
        "Σ USS",
        "exit code 0",
        "µs per process",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
}

#[test]
fn ctrl_c_kills_the_tree_and_removes_the_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let child = kurabe()
        .args([
            "watch",
            "--format",
            "json",
            "--interval",
            "0.1",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("sleep 300 & echo $! > {}; wait", pidfile.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kpid = child.id();
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    }));
    let sleeper: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(sleeper));
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(kpid as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "as shells report Ctrl-C: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse_report(&out.stdout);
    assert_eq!(r.ended, WatchEnd::Interrupted);
    assert_eq!(r.stop_signal, Some(libc::SIGINT));
    assert!(
        wait_for(Duration::from_secs(3), || !alive(sleeper)),
        "sleep survived"
    );
    assert!(leftover_cgroups(kpid).is_empty());
}

#[test]
fn memory_limit_and_cpuset_apply_to_the_command() {
    let out = kurabe()
        .args([
            "watch",
            "--format",
            "json",
            "--interval",
            "0.1",
            "--memory",
            "64M",
            "--",
        ])
        .args([
            "perl",
            "-e",
            "$x = 'x' x (200 << 20); print \"survived\\n\"",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGKILL),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse_report(&out.stdout);
    assert_eq!(
        r.exit.unwrap().signal,
        Some(libc::SIGKILL),
        "the OOM killer stopped it"
    );
    assert!(r.oom_killed(), "{:?}", r.oom_kills);
    assert_eq!(r.limits.unwrap().memory_bytes, Some(64 << 20));
    if let Some(peak) = r.cgroup_memory_peak_bytes {
        assert!(peak <= 64 << 20, "cgroup peak {peak}");
    }
    let out = kurabe()
        .args(["watch", "--format", "json", "--cpuset", "0", "--"])
        .args(["grep", "Cpus_allowed_list", "/proc/self/status"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse_report(&out.stdout); // the command's stdout went to stderr
    assert_eq!(r.exit.unwrap().code, Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Cpus_allowed_list:\t0\n"), "{err}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let free = free_port("127.0.0.1").to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["watch", "-p", "4194303"],
        vec!["watch", "--port", &free],
        vec!["watch", "--cpus", "0.5", "-p", "1"],
        vec!["watch", "--", "/nonexistent/kurabe-test-cmd"],
        vec!["watch", "--memory", "12Q", "--", "true"],
        vec!["watch", "--cpus", "0", "--", "true"],
        vec!["watch", "--cpuset", "63", "--", "true"],
        vec!["watch", "--interval", "0", "-p", "1"],
        vec!["watch"],
        vec!["mem", "--top", "many"],
    ];
    for args in cases {
        let (kpid, out) = run_tracked(kurabe().args(&args).current_dir(dir.path()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.trim().is_empty(), "{args:?}: says why");
        assert!(leftover_cgroups(kpid).is_empty(), "{args:?} left a cgroup");
        if args.contains(&"4194303") || args.contains(&"--port") {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        }
    }
}

/// Start `kurabe watch ARGS -- sh -c 'sleep 300 & echo $! > PIDFILE; wait'`
/// and return it with the sleeper's PID once the sleeper runs.
fn watch_forking_sleeper(flags: &[&str], dir: &Path) -> (std::process::Child, u32) {
    let pidfile = dir.join("pid");
    let child = kurabe()
        .arg("watch")
        .args(flags)
        .args(["--interval", "0.1", "--", "sh", "-c"])
        .arg(format!("sleep 300 & echo $! > {}; wait", pidfile.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    }));
    let sleeper = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(sleeper));
    (child, sleeper)
}

#[test]
fn sigterm_and_sighup_stop_the_watch_kill_the_tree_and_exit_128_plus_signal() {
    for (sig, status, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGHUP, 129, "SIGHUP"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (child, sleeper) = watch_forking_sleeper(&["--memory", "100M"], dir.path());
        let kpid = child.id();
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(kpid as libc::pid_t, sig) };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(status), "{name}: {text}");
        assert!(
            text.contains(&format!("stopped by {name}")),
            "{name}: {text}"
        );
        assert!(!text.contains("Ctrl-C"), "{name}: {text}");
        assert!(
            wait_for(Duration::from_secs(3), || !alive(sleeper)),
            "{name}: the command's child survived"
        );
        assert!(leftover_cgroups(kpid).is_empty(), "{name}: cgroup left");
    }
}

#[test]
fn a_killed_kurabe_takes_the_started_command_along() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut child = kurabe()
        .args(["watch", "--memory", "100M", "--", "sh", "-c"])
        .arg(format!("echo $$ > {}; exec sleep 300", pidfile.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    }));
    let cmd: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(cmd));
    child.kill().unwrap(); // SIGKILL: no guard of kurabe's runs
    child.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(3), || !alive(cmd)),
        "the command outlived a SIGKILLed kurabe"
    );
}

/// `kurabe watch -q-ish ARGS -- CMD…`: the exit code and the typed report.
fn watch_exit(flags: &[&str], cmd: &[&str]) -> (Option<i32>, WatchReport) {
    let out = kurabe()
        .args(["watch", "--format", "json", "--no-cgroup"])
        .args(flags)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    (out.status.code(), parse_report(&out.stdout))
}

#[test]
fn the_commands_exit_status_is_passed_on() {
    let (code, r) = watch_exit(&[], &["sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3));
    assert_eq!(r.exit.and_then(|e| e.code), Some(3));
    assert_eq!(watch_exit(&[], &["true"]).0, Some(0));
    // Killed by a signal: 128 + the signal, as shells say it.
    let (code, r) = watch_exit(&[], &["sh", "-c", "kill -TERM $$"]);
    assert_eq!(code, Some(128 + libc::SIGTERM));
    assert_eq!(r.exit.and_then(|e| e.signal), Some(libc::SIGTERM));
    let (code, r) = watch_exit(&[], &["sh", "-c", "kill -KILL $$"]);
    assert_eq!(code, Some(137), "kill -9: 128 + 9");
    assert_eq!(r.exit.and_then(|e| e.signal), Some(libc::SIGKILL));
    // Ended by kurabe at --duration: the watch did what was asked.
    let (code, r) = watch_exit(&["--duration", "0.3"], &["sleep", "30"]);
    assert_eq!(code, Some(0));
    assert_eq!(r.ended, WatchEnd::Duration);
}

#[test]
fn an_oom_kill_at_the_memory_limit_is_reported_and_fails() {
    let cmd = ["python3", "-c", "b = bytearray(200 << 20)"];
    let json = kurabe()
        .args(["watch", "--memory", "20MiB", "--format", "json", "--"])
        .args(cmd)
        .output()
        .unwrap();
    assert_eq!(
        json.status.code(),
        Some(137),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let r = parse_report(&json.stdout);
    assert!(r.oom_kills.is_some_and(|n| n >= 1), "{:?}", r.oom_kills);
    assert!(r.oom_killed());
    let text = kurabe()
        .args(["watch", "--memory", "20MiB", "--"])
        .args(cmd)
        .output()
        .unwrap();
    assert_ne!(text.status.code(), Some(0));
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("OOM-killed at the 20 MiB limit"), "{t}");
    // Without a limit nothing is OOM-killed and nothing says so.
    let ok = kurabe()
        .args(["watch", "--memory", "100MiB", "--format", "json", "--"])
        .args(["python3", "-c", "b = bytearray(1 << 20)"])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(parse_report(&ok.stdout).oom_kills, Some(0));
}

/// `--duration` and `--memory` read the grammar plans use: `2s`, `1m30s`,
/// bare seconds; `MB` = 10⁶ and `M` = 2²⁰ bytes.
#[test]
fn duration_and_memory_flags_read_the_plan_grammar() {
    let (code, r) = watch_exit(
        &["--duration", "300ms", "--interval", "50ms"],
        &["sleep", "30"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(r.ended, WatchEnd::Duration);
    assert!((0.3..5.0).contains(&r.duration_s), "{}", r.duration_s);
    assert_eq!(r.interval_s, 0.05);
    for (flag, bytes) in [("64MB", 64_000_000), ("64M", 64 << 20), ("64MiB", 64 << 20)] {
        let out = kurabe()
            .args(["watch", "--format", "json", "--memory", flag, "--", "true"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = parse_report(&out.stdout);
        assert_eq!(
            r.limits.unwrap().memory_bytes,
            Some(bytes),
            "--memory {flag}"
        );
    }
}
