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
