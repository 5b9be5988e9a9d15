//! kurabe-profile against independent references: `perf record` +
//! `perf script` on the same process in the same run, and a workload
//! whose extra work is in a function it names.
//!
//! The workload is `work.c`, built here with `gcc -fno-omit-frame-pointer
//! -O1` (gcc and perf are installed by .ci/run).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kurabe_model::profile::{compare_profiles, RunProfile};
use kurabe_model::stats::Verdict;
use kurabe_profile::{Sampler, Symbols, DEFAULT_HZ};

/// `work.c` built in `dir`.
fn build(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/work.c");
    let exe = dir.join("work");
    let st = Command::new("gcc")
        .args(["-fno-omit-frame-pointer", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc runs (apt-get install gcc)");
    assert!(st.success(), "gcc failed");
    exe
}

/// `sh` waiting for a line on its stdin before it runs `exe` with `args`
/// as its child: a parent to attach to before the work starts.
fn gated(exe: &Path, args: &[u64]) -> Child {
    let line = std::iter::once(exe.display().to_string())
        .chain(args.iter().map(u64::to_string))
        .collect::<Vec<_>>()
        .join(" ");
    Command::new("sh")
        .args(["-c", &format!("read x; {line}")])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
}

/// One run of `exe args` sampled from before it starts to its end; the
/// samples of its child only (not the waiting shell).
fn profile_of(exe: &Path, args: &[u64], symbols: &mut Symbols) -> RunProfile {
    let mut sh = gated(exe, args);
    let shell = sh.id();
    let sampler = Sampler::attach(shell, DEFAULT_HZ).expect("perf events allowed");
    sh.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(sh.wait().unwrap().success());
    let samples = sampler.finish();
    samples.run_profile(|root| root != shell, 1, symbols)
}

/// Share in percent of each leaf function in `profile`.
fn shares(leaves: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let total: u64 = leaves.values().sum();
    leaves
        .iter()
        .map(|(f, n)| (f.clone(), 100.0 * *n as f64 / total.max(1) as f64))
        .collect()
}

fn leaves(p: &RunProfile) -> BTreeMap<String, u64> {
    let own = p.self_samples();
    own.into_iter()
        .map(|(f, n)| (f.trim_end_matches("_[k]").to_owned(), n))
        .collect()
}

/// The leaf function of each sample in `perf script`'s output, counted.
fn perf_leaves(script: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for block in script.split("\n\n") {
        // `-F ip,sym`: no header, the callchain's lines leaf first,
        // "\t    401136 work_b".
        let Some(leaf) = block.lines().find(|l| !l.trim().is_empty()) else {
            continue;
        };
        let mut f = leaf.split_whitespace();
        let sym = f.nth(1).unwrap_or("[unknown]");
        let name = sym.split('+').next().unwrap_or(sym).to_owned();
        *out.entry(name).or_insert(0) += 1;
    }
    out
}

/// The child `perf record` started, once it has exec'd `name`.
fn child_named(parent: u32, name: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let path = format!("/proc/{parent}/task/{parent}/children");
        let kids = std::fs::read_to_string(path).unwrap_or_default();
        for pid in kids
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == name {
                return pid;
            }
        }
        // Waiting for perf to fork and exec: a condition, polled.
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("perf record did not start {name}");
}

#[test]
fn top_functions_shares_agree_with_perf_record_on_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    let data = dir.path().join("perf.data");
    // perf samples the process from its start; the work waits for a byte.
    let mut perf = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o"])
        .arg(&data)
        .arg(&exe)
        .args(["150000000", "300000000", "75000000", "wait"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf runs (apt-get install linux-perf)");
    let work = child_named(perf.id(), "work");
    let sampler = Sampler::attach(work, DEFAULT_HZ).expect("perf events allowed");
    perf.stdin.take().unwrap().write_all(b"x").unwrap();
    assert!(perf.wait().unwrap().success());
    let ours = sampler
        .finish()
        .run_profile(|_| true, 1, &mut Symbols::new());
    let script = Command::new("perf")
        .args(["script", "-F", "ip,sym", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(script.status.success());
    let theirs = shares(&perf_leaves(&String::from_utf8_lossy(&script.stdout)));
    let ours_shares = shares(&leaves(&ours));
    let mut top: Vec<(&String, &f64)> = theirs.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(a.1));
    assert!(ours.samples() > 300, "too few samples: {}", ours.samples());
    for (f, share) in top.iter().take(10).filter(|(_, s)| **s >= 1.0) {
        let mine = ours_shares.get(*f).copied().unwrap_or(0.0);
        assert!(
            (mine - **share).abs() <= 3.0,
            "{f}: perf {share:.1} %, kurabe {mine:.1} %\nperf {theirs:?}\nkurabe {ours_shares:?}"
        );
    }
    for f in ["spin", "work_b", "extra_work"] {
        assert!(
            theirs.get(f).copied().unwrap_or(0.0) > 10.0,
            "{f} in {theirs:?}"
        );
    }
    // Frame pointers: the callers are there, root first (but not
    // work_a: spin is a leaf gcc gave no frame of its own, so the walk
    // goes from spin's IP to work_a's caller, as perf's does).
    let chain = ours.stacks.iter().any(|s| s.stack.ends_with(";main;spin"));
    assert!(chain, "{:?}", &ours.stacks[..ours.stacks.len().min(5)]);
}

/// Interleaved runs of `a` and `b` (work.c's loop counts), `n` each.
fn runs(exe: &Path, a: [u64; 3], b: [u64; 3], n: usize) -> (Vec<RunProfile>, Vec<RunProfile>) {
    let mut symbols = Symbols::new();
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    for _ in 0..n {
        pa.push(profile_of(exe, &a, &mut symbols));
        pb.push(profile_of(exe, &b, &mut symbols));
    }
    (pa, pb)
}

#[test]
fn extra_work_in_a_named_function_carries_the_difference_and_a_a_names_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    let base = [60_000_000, 60_000_000, 0];
    let more = [60_000_000, 60_000_000, 60_000_000];
    let (a, b) = runs(&exe, base, more, 6);
    let c = compare_profiles(("a", "b"), &a, &b, 0.02);
    let top = &c.functions[0];
    assert_eq!(top.function, "extra_work", "{:#?}", c.functions);
    assert_eq!(top.verdict, Verdict::Worse);
    assert!(top.share_of_difference_pct >= 80.0, "{top:#?}");
    let (a1, a2) = runs(&exe, base, base, 6);
    let aa = compare_profiles(("a", "a"), &a1, &a2, 0.02);
    let named: Vec<_> = aa
        .functions
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Worse | Verdict::Better))
        .collect();
    assert!(named.is_empty(), "A/A named {named:#?}");
}

#[test]
fn a_tree_that_exits_before_finish_keeps_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    let p = profile_of(&exe, &[100_000_000, 0, 0], &mut Symbols::new());
    assert!(p.samples() > 20, "{} samples", p.samples());
    assert!(
        p.self_samples().contains_key("spin"),
        "{:?}",
        p.self_samples()
    );
}
