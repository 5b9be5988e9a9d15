//! The real [`Measurer`] of `kurabe bisect`: each step is an experiment of
//! the plan's target and one workload, one variant per commit, run from
//! the commits' cached worktrees and recorded in the store like any
//! `kurabe run` (under the plan's name + " (bisect)", so a plan's own
//! history is not mixed with the search's).
//!
//! Owns turning a plan, a variant and a workload into the search's
//! experiments. Must not print (notes go through the event callback) and
//! must not decide anything (that is [`kurabe_model::stats::bisect`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use kurabe_model::ending::Ending;
use kurabe_model::plan::{Plan, ResolvedVariant, Variant, Workload};
use kurabe_model::record::{ExperimentStatus, RunStatus};
use kurabe_store::Store;

use crate::git::{short, GitError, WorktreeCache};
use crate::runner::{run_experiment, Event, RunOptions};
use kurabe_model::stats::bisect::{BisectReport, Found, MeasureError, Measurer};
use kurabe_stop::Stop;

/// The plan a search runs: `plan` cut down to `variant` (default: the only
/// or first one) and `workload` (default: the first that selects `metric`,
/// else the first), with `metric` selected. Errors name the flag to fix.
pub fn search_plan(
    plan: &Plan,
    variant: Option<&str>,
    workload: Option<&str>,
    metric: &str,
) -> Result<(Plan, Variant), String> {
    let resolved = plan.resolved_variants();
    let v = pick_variant(&resolved, variant)?;
    let w = pick_workload(&plan.workloads, workload, metric)?;
    let mut w = w.clone();
    if !w.selected_metrics().iter().any(|m| m == metric) {
        w.metrics = Some(vec![metric.to_owned()]);
    }
    let template = template_of(v);
    let mut p = plan.clone();
    p.name = format!("{} (bisect)", plan.name);
    p.matrix.clear();
    p.variants = vec![Variant {
        rev: Some("HEAD".into()),
        ..template.clone()
    }];
    p.baseline = None;
    p.checks.clear();
    p.workloads = vec![w];
    p.validate().map_err(|problems| {
        let first = problems.first().map(|p| p.to_string()).unwrap_or_default();
        format!("--metric {metric}: {first}")
    })?;
    Ok((p, template))
}

/// The variant named by `--variant`, else the first.
fn pick_variant<'a>(
    resolved: &'a [ResolvedVariant],
    name: Option<&str>,
) -> Result<&'a ResolvedVariant, String> {
    let Some(name) = name else {
        return resolved
            .first()
            .ok_or_else(|| "the plan has no variant".into());
    };
    resolved.iter().find(|v| v.name == name).ok_or_else(|| {
        let names: Vec<&str> = resolved.iter().map(|v| v.name.as_str()).collect();
        format!(
            "--variant: no variant named `{name}`; expected one of: {}",
            names.join(", ")
        )
    })
}

/// The variant's settings as a plan variant without a `rev` (the search sets it).
fn template_of(v: &ResolvedVariant) -> Variant {
    Variant {
        name: v.name.clone(),
        env: v.env.clone(),
        vars: v.params.clone(),
        url: v.url.clone(),
        http_version: v.http_version,
        args: v.args.clone(),
        command: v.command.clone(),
        limits: v.limits.clone(),
        rev: None,
    }
}

/// The workload named, else the first selecting `metric`, else the first.
fn pick_workload<'a>(
    workloads: &'a [Workload],
    name: Option<&str>,
    metric: &str,
) -> Result<&'a Workload, String> {
    match name {
        Some(n) => workloads.iter().find(|w| w.name == n).ok_or_else(|| {
            let names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
            format!(
                "--workload: no workload named `{n}`; expected one of: {}",
                names.join(", ")
            )
        }),
        None => workloads
            .iter()
            .find(|w| w.selected_metrics().iter().any(|m| m == metric))
            .or_else(|| workloads.first())
            .ok_or_else(|| "the plan has no workload".to_owned()),
    }
}

/// Measures commits by running experiments of the search plan.
pub struct PlanMeasurer<'a> {
    /// The search plan ([`search_plan`]).
    pub plan: &'a Plan,
    /// The variant every commit runs as.
    pub variant: &'a Variant,
    /// The metric to collect.
    pub metric: &'a str,
    /// Worktrees of the plan's repository.
    pub cache: &'a WorktreeCache,
    /// Where the experiments are recorded.
    pub store: &'a mut Store,
    /// Options of every experiment (worktrees are filled in per step).
    pub opts: RunOptions,
    /// The Ctrl-C stop.
    pub stop: &'a Arc<Stop>,
    /// Progress of the experiments, and notes on builds.
    pub on_event: &'a mut dyn FnMut(&Event<'_>),
}

impl Measurer for PlanMeasurer<'_> {
    fn measure(&mut self, commits: &[&str], rounds: u32) -> Result<Vec<Vec<f64>>, MeasureError> {
        let mut plan = self.plan.clone();
        plan.variants.clear();
        let mut worktrees = BTreeMap::new();
        for c in commits {
            let dir = self.prepare(c)?;
            let name = short(c).to_owned();
            worktrees.insert(name.clone(), dir);
            plan.variants.push(Variant {
                name,
                rev: Some((*c).to_owned()),
                ..self.variant.clone()
            });
        }
        plan.repeat = rounds;
        let opts = RunOptions {
            worktrees,
            ..self.opts.clone()
        };
        let outcome = run_experiment(&plan, self.store, &opts, self.stop, self.on_event)
            .map_err(|e| MeasureError::Fatal(e.to_string()))?;
        if outcome.status == ExperimentStatus::Interrupted || self.stop.is_set() {
            return Err(MeasureError::Fatal("interrupted".into()));
        }
        commits.iter().map(|c| self.samples(c, &outcome)).collect()
    }
}

impl PlanMeasurer<'_> {
    /// The commit's worktree, built; a build that fails makes it unbuildable.
    fn prepare(&mut self, commit: &str) -> Result<std::path::PathBuf, MeasureError> {
        match self
            .cache
            .prepare(commit, self.plan.build.as_ref(), self.stop)
        {
            Ok(p) => {
                let how = if p.built_now { "built" } else { "cached" };
                let note = format!("commit {} ({how}) in {}", short(commit), p.dir.display());
                (self.on_event)(&Event::Note(note));
                Ok(p.dir)
            }
            Err(GitError::Interrupted(_)) => Err(MeasureError::Fatal("interrupted".into())),
            Err(e) => Err(MeasureError::Unbuildable {
                commit: commit.to_owned(),
                reason: e.to_string(),
            }),
        }
    }

    /// The metric's values from the commit's successful runs; none at all
    /// (every run failed) makes the commit unusable, like a failed build.
    fn samples(&self, commit: &str, outcome: &crate::Outcome) -> Result<Vec<f64>, MeasureError> {
        let name = short(commit);
        let runs: Vec<_> = outcome.runs.iter().filter(|r| r.variant == name).collect();
        let values: Vec<f64> = runs
            .iter()
            .filter(|r| r.status == RunStatus::Ok)
            .filter_map(|r| r.metrics.iter().find(|m| m.name == self.metric))
            .map(|m| m.value)
            .collect();
        if values.is_empty() {
            let why = runs
                .iter()
                .find_map(|r| r.error_tail.as_deref()?.lines().next().map(str::to_owned));
            return Err(MeasureError::Unbuildable {
                commit: commit.to_owned(),
                reason: format!(
                    "no run succeeded: {}",
                    why.unwrap_or_else(|| format!("no `{}` value", self.metric))
                ),
            });
        }
        Ok(values)
    }
}

/// What `kurabe bisect` searches.
#[derive(Debug, Clone)]
pub struct BisectSettings {
    /// The good revision (the metric as it was).
    pub good: String,
    /// The bad revision (the metric changed).
    pub bad: String,
    /// Catalogue name of the metric.
    pub metric: String,
    /// `--variant`.
    pub variant: Option<String>,
    /// `--workload`.
    pub workload: Option<String>,
    /// Rounds of each step's first experiment.
    pub rounds: u32,
    /// Most rounds per commit.
    pub max_rounds: u32,
    /// Options every experiment runs with.
    pub opts: RunOptions,
}

/// Why a search could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// Bad input: a flag, a revision, a build of an endpoint.
    #[error("{0}")]
    Setup(String),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
    /// The store or a run failed as a whole.
    #[error("{0}")]
    Failed(String),
}

impl BisectError {
    /// How a search stopped by this error ends, when it is not bad input
    /// or a failed setup: interrupted.
    pub fn ending(&self) -> Option<Ending> {
        matches!(self, BisectError::Interrupted).then_some(Ending::Signalled(None))
    }
}

/// How a search that ran ends: failed when good and bad do not differ
/// beyond the noise band, done when a commit (or a range) was found.
pub fn ending(report: &BisectReport) -> Ending {
    match report.result.found {
        Found::NoChange => Ending::Failed(None),
        _ => Ending::Done,
    }
}

impl From<GitError> for BisectError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::Interrupted(_) => BisectError::Interrupted,
            e => BisectError::Setup(e.to_string()),
        }
    }
}

/// The commits to search, good first: `good` then every commit up to `bad`.
fn commit_range(repo: &crate::git::Repo, s: &BisectSettings) -> Result<Vec<String>, BisectError> {
    let good = repo.resolve(&s.good)?;
    let bad = repo.resolve(&s.bad)?;
    if good == bad || !repo.is_ancestor(&good, &bad) {
        return Err(BisectError::Setup(format!(
            "--good {} is not an earlier ancestor of --bad {}; give the older revision as --good",
            s.good, s.bad
        )));
    }
    let mut commits = vec![good];
    commits.extend(repo.commits_between(&commits[0], &bad)?);
    Ok(commits)
}

/// Search `plan`'s repository between `settings.good` and `.bad` for the
/// first commit where the metric changes, recording every step in `store`.
pub fn run_bisect(
    plan: &Plan,
    settings: &BisectSettings,
    store: &mut Store,
    stop: &Arc<Stop>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<kurabe_model::stats::bisect::BisectReport, BisectError> {
    use kurabe_model::stats::bisect::{self, BISECT_SCHEMA_VERSION};
    let s = settings;
    let config = bisect_config(plan, s)?;
    let (search, variant) =
        search_plan(plan, s.variant.as_deref(), s.workload.as_deref(), &s.metric)
            .map_err(BisectError::Setup)?;
    let repo = crate::git::Repo::discover(&s.opts.plan_dir)?;
    let commits = commit_range(&repo, s)?;
    let cache = worktree_cache(repo)?;
    let result = {
        let mut measurer = PlanMeasurer {
            plan: &search,
            variant: &variant,
            metric: &s.metric,
            cache: &cache,
            store,
            opts: s.opts.clone(),
            stop,
            on_event,
        };
        bisect::bisect(&commits, &config, &mut measurer)
            .map_err(|e| search_error(e, s, &commits[0]))?
    };
    let subjects = named_commits(&result)
        .into_iter()
        .map(|c| (c.clone(), cache.repo().describe(&c)))
        .collect();
    Ok(kurabe_model::stats::bisect::BisectReport {
        schema_version: BISECT_SCHEMA_VERSION,
        plan: plan.name.clone(),
        variant: variant.name,
        workload: search.workloads[0].name.clone(),
        metric: s.metric.clone(),
        good: s.good.clone(),
        bad: s.bad.clone(),
        commits: commits.len(),
        result,
        subjects,
    })
}

/// The search's settings for the metric (its direction and noise band).
fn bisect_config(
    plan: &Plan,
    s: &BisectSettings,
) -> Result<kurabe_model::stats::bisect::BisectConfig, BisectError> {
    let metric = plan.metric(&s.metric).ok_or_else(|| {
        BisectError::Setup(format!(
            "--metric: unknown metric `{}`; `kurabe results` lists metric names of past runs",
            s.metric
        ))
    })?;
    Ok(kurabe_model::stats::bisect::BisectConfig {
        metric: s.metric.clone(),
        direction: metric.direction,
        noise_band: metric.noise_band,
        rounds: s.rounds,
        max_rounds: s.max_rounds.max(s.rounds),
    })
}

/// The repository's worktree cache in the user's cache folder.
fn worktree_cache(repo: crate::git::Repo) -> Result<WorktreeCache, BisectError> {
    let cache_root = crate::git::cache_dir().ok_or_else(|| {
        BisectError::Setup("no cache folder: set KURABE_CACHE_DIR, XDG_CACHE_HOME or HOME".into())
    })?;
    Ok(WorktreeCache::new(repo, &cache_root))
}

/// A failed search as the error to show: an endpoint (`good` is
/// `first`, else `bad`) that cannot be measured is a setup problem.
fn search_error(e: MeasureError, s: &BisectSettings, first: &str) -> BisectError {
    match e {
        MeasureError::Fatal(m) if m == "interrupted" => BisectError::Interrupted,
        MeasureError::Fatal(m) => BisectError::Failed(m),
        MeasureError::Unbuildable { commit, reason } => {
            let end = if commit == first { &s.good } else { &s.bad };
            BisectError::Setup(format!(
                "cannot measure {end} ({}): {reason}",
                short(&commit)
            ))
        }
    }
}

/// Every commit a search result names.
fn named_commits(b: &kurabe_model::stats::bisect::Bisection) -> Vec<String> {
    let mut out: Vec<String> = b.steps.iter().map(|s| s.commit.clone()).collect();
    out.extend(b.skipped.iter().map(|s| s.commit.clone()));
    match &b.found {
        Found::Commit {
            first_bad,
            last_good,
        } => out.extend([first_bad.clone(), last_good.clone()]),
        Found::Range { candidates } => out.extend(candidates.iter().cloned()),
        Found::NoChange => {}
    }
    out
}
