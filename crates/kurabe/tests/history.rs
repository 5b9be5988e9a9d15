//! History: what every record knows of its code and machine, `kurabe
//! history` and `kurabe check` over real stores.

use std::path::Path;
use std::process::Command;

use kurabe_store::{Entry, Experiment, Store};

use crate::util::kurabe;

/// A plan whose one command workload takes no time.
const QUICK_PLAN: &str = r#"
name = "quick"
repeat = 1
[[variant]]
name = "a"
[[workload]]
name = "true"
command = { command = "true", runs = 1 }
"#;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn experiments(store: &Path) -> Vec<Experiment> {
    let store = Store::open(store).unwrap();
    let ids = store.experiments_named("quick").unwrap();
    ids.into_iter()
        .map(|id| match store.get(id.into()).unwrap() {
            Entry::Experiment(e) => e,
            other => panic!("not an experiment: {other:?}"),
        })
        .collect()
}

/// Inside a git work tree an experiment records commit, branch and the
/// dirty flag, plus the CI label; outside one it records no commit. Both
/// carry the host fingerprint of this machine and its cgroup limits.
#[test]
fn experiments_record_their_git_revision_label_and_host_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("plan.toml"), QUICK_PLAN).unwrap();
    git(&repo, &["init", "-q", "-b", "feature"]);
    git(&repo, &["add", "plan.toml"]);
    git(&repo, &["commit", "-q", "-m", "plan"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let store = dir.path().join("results.db");
    let run = |cwd: &Path, env: Option<&str>| {
        let mut cmd = kurabe();
        cmd.current_dir(cwd)
            .args(["run", "-q", "--format", "json", "--store"])
            .arg(&store)
            .arg(repo.join("plan.toml"))
            .env_remove("KURABE_REV");
        if let Some(label) = env {
            cmd.env("KURABE_REV", label);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&repo, Some("ci-41"));
    std::fs::write(repo.join("plan.toml"), format!("{QUICK_PLAN}\n# edited\n")).unwrap();
    run(&repo, None);
    run(dir.path(), None);
    let e = experiments(&store);
    assert_eq!(e.len(), 3);
    let rev = e[0].origin.rev.as_ref().unwrap();
    assert_eq!(rev.commit.as_deref(), Some(head.as_str()));
    assert_eq!(rev.branch.as_deref(), Some("feature"));
    assert_eq!(rev.label.as_deref(), Some("ci-41"));
    assert!(!rev.dirty && rev.commit_time.as_deref().is_some_and(|t| t.ends_with('Z')));
    assert!(
        e[1].origin.rev.as_ref().unwrap().dirty,
        "an edited tracked file is dirty"
    );
    assert_eq!(e[2].origin.rev, None, "outside a work tree: no commit");
    let fp = e[0].host_fingerprint().unwrap();
    assert!(e
        .iter()
        .all(|x| x.host_fingerprint().as_deref() == Some(fp.as_str())));
    let limits = kurabe_probe::cgroup::limits_in_force();
    assert_eq!(e[0].origin.limits, Some(limits));
}
