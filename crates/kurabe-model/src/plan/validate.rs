//! Validation of a parsed plan.
//!
//! serde already rejected wrong types and unknown keys; this catches what
//! types cannot say: duplicate names, a baseline that does not exist, limits
//! that would kill any target, metrics a workload cannot produce, checks that
//! refer to nothing. Every problem carries the path of the field at fault so
//! the loader can name the line.

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use super::{
    Bound, Check, CommandWorkload, Limits, Plan, Ready, ResolvedVariant, SystemWorkload, Threshold,
    Variant, WatchWorkload, Workload, WorkloadKind, KURABE_PLACEHOLDER, MAX_RUNS, MAX_VARIANTS,
    PORT_PLACEHOLDER, WORKTREE_PLACEHOLDER,
};
use crate::capacity::FindRate;
use crate::load::LoadSpec;
use crate::stats::{metric, Metric};

/// One segment of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    /// A table key.
    Key(String),
    /// An array index (0-based).
    Index(usize),
}

/// Path of a field in the plan, e.g. `variant[1].limits.cpus`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(pub Vec<PathSeg>);

impl FieldPath {
    /// Parse the dotted form back (`variant[1].limits.cpus`).
    pub fn parse(text: &str) -> FieldPath {
        let mut segs = Vec::new();
        for part in text.split('.').filter(|p| !p.is_empty()) {
            let mut rest = part;
            if let Some(open) = rest.find('[') {
                segs.push(PathSeg::Key(rest[..open].to_owned()));
                rest = &rest[open..];
                while let Some(close) = rest.find(']') {
                    if let Ok(i) = rest[1..close].parse() {
                        segs.push(PathSeg::Index(i));
                    }
                    rest = &rest[close + 1..];
                }
            } else {
                segs.push(PathSeg::Key(rest.to_owned()));
            }
        }
        FieldPath(segs)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) if i == 0 => f.write_str(k)?,
                PathSeg::Key(k) => write!(f, ".{k}")?,
                PathSeg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A problem found in a plan: which field and what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Field at fault.
    pub path: FieldPath,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.message)
    }
}

struct Collector(Vec<Problem>);

impl Collector {
    fn at(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(Problem {
            path: FieldPath::parse(path),
            message: message.into(),
        });
    }
}

/// Every problem in the plan, in file order as far as possible.
pub(super) fn validate(plan: &Plan) -> Vec<Problem> {
    let mut c = Collector(Vec::new());
    top_level(plan, &mut c);
    let known: BTreeSet<String> = [PORT_PLACEHOLDER, KURABE_PLACEHOLDER, WORKTREE_PLACEHOLDER]
        .into_iter()
        .map(str::to_owned)
        .chain(plan.matrix.keys().cloned())
        .chain(plan.variants.iter().flat_map(|v| v.vars.keys().cloned()))
        .collect();
    target(plan, &known, &mut c);
    revisions(plan, &known, &mut c);
    matrix(plan, &mut c);
    if !size(plan, &mut c) {
        // Expanding the variants (as the checks below do) would exhaust memory.
        return c.0;
    }
    variants(plan, &known, &mut c);
    variant_versions(plan, &mut c);
    workloads(plan, &known, &mut c);
    checks(plan, &mut c);
    c.0
}

/// `http2`, `http3` and `streams`: one protocol; streams need HTTP/2 or
/// HTTP/3; pipelining is HTTP/1.1's.
fn http2_fields(h: &LoadSpec, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    if h.http2 && h.http3 {
        c.at(&p("http3"), "with `http2 = true`: give one protocol");
    }
    match h.streams {
        Some(0) => c.at(&p("streams"), "must be at least 1"),
        Some(n) if n > 1 && !h.http2 && !h.http3 => c.at(
            &p("streams"),
            format!(
                "{n} streams per connection need HTTP/2 or HTTP/3: add `http2 = true` or `http3 = true`"
            ),
        ),
        _ => {}
    }
    let multiplexed = if h.http3 { "http3" } else { "http2" };
    if (h.http2 || h.http3) && h.pipeline > 1 {
        c.at(
            &p("pipeline"),
            format!("pipelining is HTTP/1.1's; with `{multiplexed} = true` use `streams` for requests in flight per connection"),
        );
    }
}

/// A variant's `http_version`: there is an http workload to speak it,
/// and every http workload spoken at that version still means something
/// (no pipelining over HTTP/2 or HTTP/3, no streams over HTTP/1.1).
fn variant_versions(plan: &Plan, c: &mut Collector) {
    for (i, v) in plan.variants.iter().enumerate() {
        let Some(version) = v.http_version else {
            continue;
        };
        let p = |field: &str| format!("variant[{i}].http_version ({field})");
        let mut http = plan.workloads.iter().filter_map(|w| match &w.kind {
            WorkloadKind::Http(h) => Some(h),
            _ => None,
        });
        let Some(first) = http.next() else {
            c.at(
                &format!("variant[{i}].http_version"),
                "applies to http workloads, and this plan has none",
            );
            continue;
        };
        for h in std::iter::once(first).chain(http) {
            http2_fields(&version.apply(h), &p, c);
        }
    }
}

/// The plan's own fields: a name, at least one round, and noise bands.
fn top_level(plan: &Plan, c: &mut Collector) {
    if plan.name.trim().is_empty() {
        c.at("name", "must not be empty: name the experiment");
    }
    if plan.repeat == 0 {
        c.at(
            "repeat",
            "must be at least 1 (3 or more give a confidence interval)",
        );
    }
    noise_bands(plan, c);
}

/// `noise_band` and each of `noise_bands`: a fraction between 0 and 1, and
/// for a metric that exists.
fn noise_bands(plan: &Plan, c: &mut Collector) {
    if let Some(band) = plan.noise_band {
        if !(band.0 > 0.0 && band.0 < 1.0) {
            c.at("noise_band", not_a_fraction(band.0));
        }
    }
    for (name, band) in &plan.noise_bands {
        if metric::lookup(name).is_none() {
            c.at(&format!("noise_bands.{name}"), unknown_metric(name));
        } else if !(band.0 > 0.0 && band.0 < 1.0) {
            c.at(&format!("noise_bands.{name}"), not_a_fraction(band.0));
        }
    }
}

/// What to write instead of a noise band that is no fraction.
fn not_a_fraction(got: f64) -> String {
    format!("expected a fraction between 0 and 1 like 0.02 or \"2%\", got {got}")
}

/// `[target]`: a command to start, known placeholders, a startup timeout
/// and a way to know it is ready.
fn target(plan: &Plan, known: &BTreeSet<String>, c: &mut Collector) {
    let Some(t) = &plan.target else { return };
    if t.command.is_empty() {
        c.at(
            "target.command",
            "must not be empty: give the command that starts the program under test",
        );
    }
    placeholders_in(&t.command.parts(), known, "target.command", c);
    for (k, v) in &t.env {
        placeholders_in(&[v], known, &format!("target.env.{k}"), c);
    }
    if t.startup_timeout.0.is_zero() {
        c.at(
            "target.startup_timeout",
            "must be longer than 0s, e.g. \"30s\"",
        );
    }
    if let Some(r) = &t.ready {
        ready(r, known, c);
    }
}

/// `target.ready`: a URL on this machine to poll, or a log line to wait for.
fn ready(ready: &Ready, known: &BTreeSet<String>, c: &mut Collector) {
    match ready {
        Ready::Url(url) => {
            if let Err(e) = ready_url(url) {
                c.at("target.ready", e);
            }
            placeholders_in(&[url], known, "target.ready", c);
        }
        Ready::Log(line) if line.is_empty() => {
            c.at("target.ready", "the log line to wait for must not be empty");
        }
        _ => {}
    }
}

/// `[build]` and each variant's `rev`: a build needs a command, and a
/// revision must not read as a git option.
fn revisions(plan: &Plan, known: &BTreeSet<String>, c: &mut Collector) {
    for (i, v) in plan.variants.iter().enumerate() {
        let Some(rev) = &v.rev else { continue };
        let path = format!("variant[{i}].rev");
        if rev.trim().is_empty() || rev.starts_with('-') || rev.contains(char::is_whitespace) {
            c.at(
                &path,
                format!(
                    "`{rev}` is not a git revision; give a tag, branch or commit like \"v1.2\""
                ),
            );
        }
        placeholders_in(&[rev], known, &path, c);
    }
    let Some(b) = &plan.build else { return };
    if b.command.is_empty() {
        c.at(
            "build.command",
            "must not be empty: give the command that builds a revision, e.g. \"cargo build --release\"",
        );
    }
    // A [build] without any `rev` is kept for `kurabe bisect`, which sets the revisions.
    placeholders_in(&b.command.parts(), known, "build.command", c);
}

fn matrix(plan: &Plan, c: &mut Collector) {
    for (key, values) in &plan.matrix {
        let path = format!("matrix.{key}");
        if key == PORT_PLACEHOLDER || key == KURABE_PLACEHOLDER || key == WORKTREE_PLACEHOLDER {
            c.at(
                &path,
                format!("`{key}` is reserved (`{{port}}` is the port allocated per run, `{{kurabe}}` this kurabe executable, `{{worktree}}` the variant's git work tree); choose another name"),
            );
        } else if super::placeholders(&format!("{{{key}}}")) != [key.as_str()] {
            c.at(
                &path,
                "a matrix key must be a lowercase name (letters, digits, `_`) usable as `{key}`",
            );
        }
        if values.is_empty() {
            c.at(&path, "needs at least one value, e.g. `fps = [77, 12]`");
        }
    }
}

/// The plan's size against [`MAX_VARIANTS`] and [`MAX_RUNS`], computed
/// before anything is expanded; false when the variants must not be.
fn size(plan: &Plan, c: &mut Collector) -> bool {
    let Some(variants) = plan.variant_count().filter(|&n| n <= MAX_VARIANTS) else {
        let n = plan
            .variant_count()
            .map_or("more than 2^64".to_owned(), |n| n.to_string());
        c.at(
            "matrix",
            format!("expands to {n} variants, more than the {MAX_VARIANTS} a plan may have; use fewer values or split the plan"),
        );
        return false;
    };
    match plan.run_count(plan.repeat) {
        Some(runs) if runs <= MAX_RUNS => {}
        _ => c.at(
            "repeat",
            format!(
                "{variants} variants × {} workloads × {} rounds is more than the {MAX_RUNS} runs an experiment may have; lower repeat or split the plan",
                plan.workloads.len(),
                plan.repeat
            ),
        ),
    }
    true
}

/// The variants: at least one, each sound, unique names and a baseline
/// that exists.
fn variants(plan: &Plan, known: &BTreeSet<String>, c: &mut Collector) {
    if plan.variants.is_empty() && plan.matrix.is_empty() {
        c.at(
            "variant",
            "a plan needs at least one [[variant]] (or a [matrix]) to run",
        );
    }
    let applies = Applies::of(plan);
    for (i, v) in plan.variants.iter().enumerate() {
        variant(i, v, known, applies, c);
    }
    same_vars(plan, c);
    let resolved = plan.resolved_variants();
    unique_names(plan, &resolved, c);
    if let Some(b) = &plan.baseline {
        if !resolved.iter().any(|r| &r.name == b) {
            let names: Vec<&str> = resolved.iter().map(|r| r.name.as_str()).collect();
            c.at(
                "baseline",
                format!(
                    "no variant named `{b}`; expected one of: {}",
                    names.join(", ")
                ),
            );
        }
    }
}

/// No two variants share a name once the matrix is expanded.
fn unique_names(plan: &Plan, resolved: &[ResolvedVariant], c: &mut Collector) {
    let mut seen = HashSet::new();
    for r in resolved {
        let path = match r.source {
            Some(i) => format!("variant[{i}].name"),
            None => "matrix".to_owned(),
        };
        if !seen.insert(r.name.as_str()) {
            let hint = if plan.matrix.is_empty() {
                ""
            } else {
                " (after matrix expansion; put `{key}` in the name)"
            };
            c.at(&path, format!("duplicate variant name `{}`{hint}", r.name));
        }
    }
}

/// What a variant's `command` and `limits` can apply to.
#[derive(Clone, Copy)]
struct Applies {
    target: bool,
    command_workload: bool,
    system_workload: bool,
}

impl Applies {
    /// What the plan has for variants to apply to.
    fn of(plan: &Plan) -> Applies {
        let has_kind = |f: fn(&WorkloadKind) -> bool| plan.workloads.iter().any(|w| f(&w.kind));
        Applies {
            target: plan.target.is_some(),
            command_workload: has_kind(|k| matches!(k, WorkloadKind::Command(_))),
            // `system` workloads' test processes run in a cgroup with the limits.
            system_workload: has_kind(|k| matches!(k, WorkloadKind::System(_))),
        }
    }
}

/// Every variant sets the same `vars` keys, so no placeholder is left
/// unfilled in some variant.
fn same_vars(plan: &Plan, c: &mut Collector) {
    let all: BTreeSet<&String> = plan.variants.iter().flat_map(|v| v.vars.keys()).collect();
    for (i, v) in plan.variants.iter().enumerate() {
        if let Some(missing) = all.iter().find(|k| !v.vars.contains_key(k.as_str())) {
            c.at(
                &format!("variant[{i}].vars"),
                format!("does not set `{missing}`, which another variant sets; every variant sets the same keys"),
            );
        }
        for k in v.vars.keys() {
            if plan.matrix.contains_key(k)
                || [PORT_PLACEHOLDER, KURABE_PLACEHOLDER, WORKTREE_PLACEHOLDER]
                    .contains(&k.as_str())
            {
                c.at(
                    &format!("variant[{i}].vars.{k}"),
                    format!("`{k}` is already a placeholder (matrix key or built-in); choose another name"),
                );
            }
        }
    }
}

/// One `[[variant]]`: its own fields, what they apply to, and its limits.
fn variant(i: usize, v: &Variant, known: &BTreeSet<String>, applies: Applies, c: &mut Collector) {
    let p = |field: &str| format!("variant[{i}].{field}");
    variant_texts(v, known, &p, c);
    if let Some(url) = &v.url {
        variant_url(url, applies, known, &p, c);
    }
    variant_applies(v, applies, &p, c);
    if let Some(l) = &v.limits {
        limits(l, &p, c);
    }
}

/// A variant's name, args, env and command: not empty where that matters,
/// and only known placeholders.
fn variant_texts(
    v: &Variant,
    known: &BTreeSet<String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    if v.name.trim().is_empty() {
        c.at(&p("name"), "must not be empty");
    }
    placeholders_in(&[&v.name], known, &p("name"), c);
    for a in &v.args {
        placeholders_in(&[a], known, &p("args"), c);
    }
    for (k, val) in &v.env {
        placeholders_in(&[val], known, &p(&format!("env.{k}")), c);
    }
    if let Some(cmd) = &v.command {
        if cmd.is_empty() {
            c.at(&p("command"), "must not be empty");
        }
        placeholders_in(&cmd.parts(), known, &p("command"), c);
    }
}

/// A variant's `url`: an http(s) URL, and only where the plan starts no
/// [target].
fn variant_url(
    url: &str,
    applies: Applies,
    known: &BTreeSet<String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    if applies.target {
        c.at(
            &p("url"),
            "names an existing server, but the plan starts a [target]; remove one of them",
        );
    } else if let Err(e) = http_url(url) {
        c.at(&p("url"), e);
    }
    placeholders_in(&[url], known, &p("url"), c);
}

/// A variant's `args`, `command` and `limits` have something in the plan
/// to apply to.
fn variant_applies(v: &Variant, applies: Applies, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    let to_commands = !applies.target && applies.command_workload;
    if !applies.target && !v.args.is_empty() {
        c.at(
            &p("args"),
            "applies to the target, but the plan has no [target]",
        );
    } else if !applies.target && !to_commands && v.command.is_some() {
        c.at(
            &p("command"),
            "applies to the target (or, without one, to `command` workloads), but the plan has neither",
        );
    }
    let limited = applies.target || applies.command_workload || applies.system_workload;
    if !limited && v.limits.is_some() {
        c.at(
            &p("limits"),
            "applies to the target, or to `command` or `system` workloads, but the plan has none of them",
        );
    }
}

/// A variant's `limits`: a CPU quota, a cpuset and memory a target can
/// start in.
fn limits(l: &Limits, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    if let Some(cpus) = l.cpus {
        if !(0.01..=4096.0).contains(&cpus) {
            c.at(
                &p("limits.cpus"),
                format!("expected a number of cores from 0.01 up, like 0.5 or 2, got {cpus}"),
            );
        }
    }
    if let Some(set) = &l.cpuset {
        if let Err(e) = cpuset(set) {
            c.at(&p("limits.cpuset"), e);
        }
    }
    if let Some(mem) = l.memory {
        if mem.0 < 1 << 20 {
            c.at(
                &p("limits.memory"),
                format!(
                    "{} bytes would kill any target at start; expected at least 1M, like \"512M\"",
                    mem.0
                ),
            );
        }
    }
}

/// The workloads: at least one, unique names, metrics they report, and
/// each one's own table.
fn workloads(plan: &Plan, known: &BTreeSet<String>, c: &mut Collector) {
    if plan.workloads.is_empty() {
        c.at(
            "workload",
            "a plan needs at least one [[workload]], e.g. `http = { requests = 1000 }`",
        );
    }
    let mut seen = HashSet::new();
    for (i, w) in plan.workloads.iter().enumerate() {
        let p = |field: &str| format!("workload[{i}].{field}");
        if w.name.trim().is_empty() {
            c.at(&p("name"), "must not be empty");
        } else if !seen.insert(w.name.as_str()) {
            c.at(&p("name"), format!("duplicate workload name `{}`", w.name));
        }
        workload_metrics(w, &p, c);
        workload_kind(plan, i, &w.kind, known, &p, c);
    }
}

/// The table of one workload, by its kind.
fn workload_kind(
    plan: &Plan,
    i: usize,
    kind: &WorkloadKind,
    known: &BTreeSet<String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    let has_target = plan.target.is_some();
    match kind {
        WorkloadKind::Http(h) => {
            http_target(plan, h, i, known, c);
            http_amounts(h, i, c);
        }
        WorkloadKind::Command(cmd) => command_workload(cmd, known, p, c),
        WorkloadKind::Watch(wt) => watch_workload(wt, has_target, known, p, c),
        WorkloadKind::Idle(idle) => {
            if idle.scope == super::MemoryScope::Target && !has_target {
                c.at(
                    &p("idle"),
                    "needs a [target] to measure, or `scope = \"system\"`",
                );
            }
        }
        WorkloadKind::System(s) => system_workload(s, p, c),
    }
}

/// A `command` workload: a command to run, at least once.
fn command_workload(
    cmd: &CommandWorkload,
    known: &BTreeSet<String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    if cmd.command.is_empty() {
        c.at(&p("command.command"), "must not be empty");
    }
    placeholders_in(&cmd.command.parts(), known, &p("command.command"), c);
    if cmd.runs == 0 {
        c.at(&p("command.runs"), "must be at least 1");
    }
}

/// A workload's `metrics`: known, and reported by its kind.
fn workload_metrics(w: &Workload, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    let Some(ms) = &w.metrics else { return };
    if ms.is_empty() {
        c.at(
            &p("metrics"),
            "must list at least one metric, or be left out for the defaults",
        );
    }
    for m in ms {
        if metric::lookup(m).is_none() {
            c.at(&p("metrics"), unknown_metric(m));
        } else if !w.kind.available_metrics().contains(&m.as_str()) {
            c.at(
                &p("metrics"),
                format!(
                    "`{}` workloads do not report `{m}`; expected one of: {}",
                    w.kind.key(),
                    w.kind.available_metrics().join(", ")
                ),
            );
        }
    }
}

/// What an http workload loads: `path` on the target or a `url`.
fn http_target(plan: &Plan, h: &LoadSpec, i: usize, known: &BTreeSet<String>, c: &mut Collector) {
    let p = |field: &str| format!("workload[{i}].http.{field}");
    match (&h.path, &h.url) {
        (Some(_), Some(_)) => c.at(
            &p("url"),
            "give either `path` (on the target) or `url`, not both",
        ),
        (_, Some(url)) => {
            if let Err(e) = http_url(url) {
                c.at(&p("url"), e);
            }
            placeholders_in(&[url], known, &p("url"), c);
        }
        (path, None) => http_path(plan, path.as_deref(), i, c),
    }
}

/// An http workload without a `url`: a server to load, and a `path` on it
/// that starts with `/`.
fn http_path(plan: &Plan, path: Option<&str>, i: usize, c: &mut Collector) {
    let every_variant_has_url =
        !plan.variants.is_empty() && plan.variants.iter().all(|v| v.url.is_some());
    if plan.target.is_none() && !every_variant_has_url {
        c.at(
            &format!("workload[{i}].http"),
            "needs a [target] to load, a `url`, or a `url` on every variant (existing servers)",
        );
    }
    if let Some(path) = path.filter(|s| !s.starts_with('/')) {
        c.at(
            &format!("workload[{i}].http.path"),
            format!("expected a path starting with `/`, got `{path}`"),
        );
    }
}

/// How much load an http workload sends, and how.
fn http_amounts(h: &LoadSpec, i: usize, c: &mut Collector) {
    let p = |field: &str| format!("workload[{i}].http.{field}");
    if let Some(find) = &h.find_rate {
        find_rate_fields(h, find, i, c);
        return;
    }
    http_length(h, i, &p, c);
    if let Some(r) = h.rate {
        if !(r.is_finite() && r > 0.0) {
            c.at(
                &p("rate"),
                format!("expected requests per second above 0, got {r}"),
            );
        }
    }
    if h.pipeline == 0 {
        c.at(&p("pipeline"), "must be at least 1 (1 = no pipelining)");
    }
    http2_fields(h, &p, c);
    if h.threads == Some(0) {
        c.at(
            &p("threads"),
            "must be at least 1, or left out for the default",
        );
    }
}

/// `find_rate`: valid settings, and none of the fields the search sets.
fn find_rate_fields(h: &LoadSpec, find: &FindRate, i: usize, c: &mut Collector) {
    let at = format!("workload[{i}].http");
    if let Err(e) = find.settings(&crate::capacity::FindRateNames::PLAN) {
        c.at(&at, e.to_string());
    }
    for (key, given) in [
        ("requests", h.requests.is_some()),
        ("duration", h.duration.is_some()),
        ("rate", h.rate.is_some()),
        ("soak", h.soak.is_some()),
    ] {
        if given {
            c.at(
                &at,
                format!("`{key}` contradicts `find_rate`: the search sets each step's rate and length (find_rate.step)"),
            );
        }
    }
}

/// How long an http run lasts (`requests`, `duration`, `soak` or `stages`),
/// and enough requests for its connections.
fn http_length(h: &LoadSpec, i: usize, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    // Stages give the run's length.
    if h.requests.is_none() && h.duration.is_none() && h.soak.is_none() && h.stages.is_empty() {
        c.at(
            &format!("workload[{i}].http"),
            "needs `requests` (like `-n`), `duration` (like `-t`) or `stages`",
        );
    }
    if h.soak.is_some() && (h.requests.is_some() || h.duration.is_some()) {
        c.at(
            &p("soak"),
            "a soak run lasts `soak`: remove `requests` and `duration`",
        );
    }
    if h.concurrency == 0 {
        c.at(&p("concurrency"), "must be at least 1");
    }
    if let Some(n) = h.requests {
        http_requests(n, h.concurrency, p, c);
    }
    if h.duration.is_some_and(|d| d.0.is_zero()) {
        c.at(&p("duration"), "must be longer than 0s");
    }
}

/// `requests`: at least one for each connection.
fn http_requests(n: u64, concurrency: u32, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    if n == 0 {
        c.at(&p("requests"), "must be at least 1");
    } else if n < u64::from(concurrency) {
        c.at(&p("requests"), format!("{n} requests cannot keep {concurrency} connections busy; lower `concurrency` or raise `requests`"));
    }
}

fn watch_workload(
    wt: &WatchWorkload,
    has_target: bool,
    known: &BTreeSet<String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    if wt.duration.0.is_zero() {
        c.at(&p("watch.duration"), "must be longer than 0s, e.g. \"30s\"");
    }
    if let Some(iv) = wt.interval {
        if iv.0.is_zero() || iv.0 > wt.duration.0 {
            c.at(
                &p("watch.interval"),
                "must be longer than 0s and no longer than `duration`",
            );
        }
    }
    match &wt.command {
        Some(cmd) => placeholders_in(&cmd.parts(), known, &p("watch.command"), c),
        None if !has_target => c.at(&p("watch"), "needs a [target] to watch, or a `command`"),
        None => {}
    }
}

fn system_workload(s: &SystemWorkload, p: &dyn Fn(&str) -> String, c: &mut Collector) {
    if s.copies == Some(0) {
        c.at(&p("system.copies"), "must be at least 1");
    }
    if s.precision.is_some_and(|f| !(0.001..=0.5).contains(&f.0)) {
        c.at(&p("system.precision"), "must be between 0.1% and 50%");
    }
    if s.max_time.is_some_and(|d| d.0.as_secs_f64() < 10.0) {
        c.at(&p("system.max_time"), "must be at least 10s");
    }
    let fixed = [(s.quick, "quick"), (s.unixbench, "unixbench")];
    let rule = s.precision.is_some() || s.max_time.is_some();
    if fixed.iter().filter(|f| f.0).count() + usize::from(rule) > 1 {
        c.at(
            &p("system"),
            "choose one of `quick`, `unixbench` or `precision`/`max_time`",
        );
    }
}

/// Each `[[check]]`: a known metric, a variant and workloads that exist and
/// report it, and a bound that fits.
fn checks(plan: &Plan, c: &mut Collector) {
    let resolved = plan.resolved_variants();
    let baseline = plan.baseline_name();
    for (i, ch) in plan.checks.iter().enumerate() {
        let p = |field: &str| format!("check[{i}].{field}");
        let Some(m) = metric::lookup(&ch.metric) else {
            c.at(&p("metric"), unknown_metric(&ch.metric));
            continue;
        };
        check_variant(ch, &resolved, baseline.as_ref(), &p, c);
        let Some(workloads) = check_workloads(plan, ch, &p, c) else {
            continue;
        };
        check_reported(ch, &workloads, &p, c);
        check_bound(ch, &m, resolved.len(), &p, c);
    }
}

/// A check's `variant`: one that exists, and for a ratio not the baseline.
fn check_variant(
    ch: &Check,
    resolved: &[ResolvedVariant],
    baseline: Option<&String>,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    let Some(v) = &ch.variant else { return };
    if !resolved.iter().any(|r| &r.name == v) {
        let names: Vec<&str> = resolved.iter().map(|r| r.name.as_str()).collect();
        c.at(
            &p("variant"),
            format!(
                "no variant named `{v}`; expected one of: {}",
                names.join(", ")
            ),
        );
    } else if ch.is_ratio() && baseline == Some(v) {
        c.at(
            &p("variant"),
            format!("`{v}` is the baseline; a ratio check compares another variant to it"),
        );
    }
}

/// The workloads a check covers: the one its `workload` names, or all of
/// them; `None` when the name is no workload of the plan.
fn check_workloads<'a>(
    plan: &'a Plan,
    ch: &Check,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) -> Option<Vec<&'a Workload>> {
    let Some(name) = &ch.workload else {
        return Some(plan.workloads.iter().collect());
    };
    let found: Vec<_> = plan.workloads.iter().filter(|w| &w.name == name).collect();
    if found.is_empty() {
        let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
        c.at(
            &p("workload"),
            format!(
                "no workload named `{name}`; expected one of: {}",
                names.join(", ")
            ),
        );
        return None;
    }
    Some(found)
}

/// Some workload a check covers reports the check's metric.
fn check_reported(
    ch: &Check,
    workloads: &[&Workload],
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    if !workloads.is_empty()
        && !workloads
            .iter()
            .any(|w| w.selected_metrics().contains(&ch.metric))
    {
        c.at(
            &p("metric"),
            format!(
                "no workload checked here reports `{}`; add it to the workload's `metrics`",
                ch.metric
            ),
        );
    }
}

/// A check's bound: a ratio that can be compared, or a threshold in the
/// metric's unit.
fn check_bound(
    ch: &Check,
    m: &Metric,
    variants: usize,
    p: &dyn Fn(&str) -> String,
    c: &mut Collector,
) {
    match &ch.bound {
        Bound::MinRatio(r) => ratio_bound(*r, variants, &p("min_ratio"), c),
        Bound::MaxRatio(r) => ratio_bound(*r, variants, &p("max_ratio"), c),
        Bound::Min(t) => threshold_bound(t, m, &p("min"), c),
        Bound::Max(t) => threshold_bound(t, m, &p("max"), c),
    }
}

/// An absolute bound: a value the metric's unit can read.
fn threshold_bound(t: &Threshold, m: &Metric, path: &str, c: &mut Collector) {
    if let Err(e) = t.value_for(m) {
        c.at(path, e);
    }
}

/// A ratio bound: above 0, with at least two variants to compare.
fn ratio_bound(r: f64, variants: usize, path: &str, c: &mut Collector) {
    if !(r.is_finite() && r > 0.0) {
        c.at(path, format!("expected a ratio above 0 like 1.05, got {r}"));
    }
    if variants < 2 {
        c.at(path, "a ratio check needs at least two variants");
    }
}

fn unknown_metric(name: &str) -> String {
    let names: Vec<&str> = metric::names().collect();
    format!(
        "unknown metric `{name}`; expected one of: {}",
        names.join(", ")
    )
}

fn placeholders_in(texts: &[&str], known: &BTreeSet<String>, path: &str, c: &mut Collector) {
    for text in texts {
        for ph in super::placeholders(text) {
            if !known.contains(ph) {
                let list: Vec<String> = known.iter().map(|k| format!("{{{k}}}")).collect();
                c.at(
                    path,
                    format!(
                        "unknown placeholder `{{{ph}}}`; known: {} (or give it with `kurabe run --set {ph}=VALUE`)",
                        list.join(", ")
                    ),
                );
            }
        }
    }
}

/// An `http://` or `https://` URL with a host: any server, remote ones
/// included (only server-side metrics need it to be on this machine).
pub(super) fn http_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("expected an http:// or https:// URL, got `{url}`"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return Err(format!(
            "`{url}` has no host; expected http://host[:port]/path"
        ));
    }
    Ok(())
}

/// The target's ready URL: an http(s) URL on loopback, since the target
/// is started on this machine.
fn ready_url(url: &str) -> Result<(), String> {
    http_url(url)?;
    let rest = url.split_once("://").map_or("", |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    if host == "localhost" || host == "::1" || host.starts_with("127.") {
        Ok(())
    } else {
        Err(format!(
            "`{url}` is not on this machine; the target runs here, so poll it on 127.0.0.1, ::1 or localhost"
        ))
    }
}

/// Check cpuset syntax: comma-separated CPUs or ranges, `0-3,5`.
fn cpuset(set: &str) -> Result<(), String> {
    let bad = || format!("expected a CPU list like \"0\", \"0-3\" or \"0-1,4\", got `{set}`");
    if set.trim().is_empty() {
        return Err(bad());
    }
    for part in set.split(',') {
        let mut ends = part.trim().splitn(2, '-');
        let lo: u32 = ends
            .next()
            .unwrap_or("")
            .trim()
            .parse()
            .map_err(|_| bad())?;
        if let Some(hi) = ends.next() {
            let hi: u32 = hi.trim().parse().map_err(|_| bad())?;
            if hi < lo {
                return Err(bad());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_path_round_trips() {
        for text in [
            "variant[1].limits.cpus",
            "name",
            "check[0].max",
            "matrix.fps",
            "workload[2].http.url",
        ] {
            assert_eq!(FieldPath::parse(text).to_string(), text);
        }
        assert_eq!(
            FieldPath::parse("variant[1].name").0,
            vec![
                PathSeg::Key("variant".into()),
                PathSeg::Index(1),
                PathSeg::Key("name".into())
            ]
        );
    }

    #[test]
    fn any_http_url_is_accepted() {
        assert!(http_url("http://127.0.0.1:{port}/").is_ok());
        assert!(http_url("http://localhost/x").is_ok());
        assert!(http_url("http://[::1]:80/").is_ok());
        assert!(http_url("https://staging.example.com/api?q=1").is_ok());
        assert!(http_url("http://10.0.0.1:8080").is_ok());
        assert!(http_url("ftp://127.0.0.1/").is_err());
        assert!(http_url("http:///path").is_err());
    }

    #[test]
    fn http_engine_must_be_a_known_name() {
        let plan = |engine: &str| {
            serde_json::from_str::<Plan>(&format!(
                r#"{{"name": "p", "variant": [{{"name": "a", "url": "http://127.0.0.1:1/"}}],
                    "workload": [{{"name": "w", "http": {{"requests": 1, "engine": "{engine}"}}}}]}}"#
            ))
        };
        let bad = plan("kqueue").unwrap_err().to_string();
        assert!(bad.contains("kqueue") && bad.contains("io_uring"), "{bad}");
        for ok in ["auto", "epoll", "io_uring"] {
            let problems = validate(&plan(ok).unwrap());
            assert!(problems.is_empty(), "{problems:?}");
        }
    }

    #[test]
    fn a_variants_http_version_is_checked_against_each_http_workload() {
        let plan = |version: &str, http: &str| {
            serde_json::from_str::<Plan>(&format!(
                r#"{{"name": "p", "variant": [{{"name": "a", "url": "https://h/", "http_version": "{version}"}}],
                    "workload": [{{"name": "w", {http}}}]}}"#
            ))
            .unwrap()
        };
        let http = r#""http": {"requests": 1, "keep_alive": true, "pipeline": 4}"#;
        assert!(validate(&plan("1.1", http)).is_empty());
        let problems = validate(&plan("3", http));
        assert_eq!(problems.len(), 1, "{problems:?}");
        let text = problems[0].to_string();
        assert!(
            text.contains("http_version (pipeline)") && text.contains("pipelining is HTTP/1.1's"),
            "{text}"
        );
        let idle = r#""idle": {"scope": "system"}"#;
        let problems = validate(&plan("2", idle));
        assert!(
            problems[0]
                .to_string()
                .contains("applies to http workloads"),
            "{problems:?}"
        );
        let bad = serde_json::from_str::<Plan>(
            r#"{"name": "p", "variant": [{"name": "a", "http_version": "4"}]}"#,
        );
        assert!(bad.is_err());
    }

    #[test]
    fn cpusets() {
        for ok in ["0", "0-3", "0-1,4", " 2 , 5-6 "] {
            assert!(cpuset(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a", "3-1", "0-", "0,,1"] {
            assert!(cpuset(bad).is_err(), "{bad}");
        }
    }
}
