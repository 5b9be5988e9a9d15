//! A private cgroup per run: limits (`--cpus`, `--cpuset`, `--memory`), a CPU
//! counter that sees every descendant, and a handle that kills them all.
//!
//! cgroup v2 is used when the v2 parent cgroup offers every controller the
//! limits need (listed in its `cgroup.controllers`); otherwise cgroup v1, one
//! directory per controller hierarchy (`cpu`, `cpuacct`, `cpuset`, `memory`
//! mounted separately or together). The run's directories are created inside
//! kurabe's own cgroup of each hierarchy (so the run stays inside whatever
//! limits kurabe itself runs under), named `kurabe-<pid>-<n>`.
//!
//! The command joins the cgroup *before exec*: [`RunCgroup::prepare`] installs
//! a `pre_exec` hook that writes `0` (= "this process") to every
//! `cgroup.procs`, so no CPU escapes the counter. [`RunCgroup`] is a guard: its
//! `Drop` kills what is left in the cgroup (`cgroup.kill` on v2, else SIGKILL
//! to each PID of `cgroup.procs` until it is empty) and removes the
//! directories, on success, error, panic or Ctrl-C alike.
//!
//! Without permission the error names the file that could not be written and
//! how to delegate the subtree to the user.

use std::ffi::CString;
use std::fmt;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::exitwait;

/// Resource limits for a started command.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// CPU quota in cores (0.5 = half of one core), enforced by CFS quota per 100 ms period.
    pub cpus: Option<f64>,
    /// CPUs the command may run on, kernel list syntax (`0`, `0-1`, `0,2`).
    pub cpuset: Option<String>,
    /// Memory limit, bytes.
    pub memory_bytes: Option<u64>,
}

impl From<&kurabe_model::plan::Limits> for Limits {
    /// A plan's (or the limit flags') limits in the form the cgroup code takes.
    fn from(l: &kurabe_model::plan::Limits) -> Limits {
        Limits {
            cpus: l.cpus,
            cpuset: l.cpuset.clone(),
            memory_bytes: l.memory.map(|m| m.0),
        }
    }
}

impl Limits {
    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.cpuset.is_none() && self.memory_bytes.is_none()
    }
}

/// Errors of cgroup setup and teardown.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// No hierarchy offers a controller a limit needs.
    #[error("cannot apply {flag}: no cgroup hierarchy offers the '{controller}' controller (cgroup v2 parent offers: {v2_offers}; no cgroup v1 mount of it); enable it (v2: add it to the parent's cgroup.subtree_control) or drop {flag}")]
    NoController {
        /// The flag that needs the controller.
        flag: &'static str,
        /// Controller name.
        controller: &'static str,
        /// What the v2 parent offers.
        v2_offers: String,
    },
    /// No cgroup hierarchy is mounted at all.
    #[error("no cgroup filesystem is mounted (checked /proc/self/mountinfo); mount cgroup2 on /sys/fs/cgroup or run without limits")]
    NotMounted,
    /// A limit value the kernel or kurabe rejected.
    #[error("invalid {flag} '{value}': {why}")]
    Invalid {
        /// Flag name.
        flag: &'static str,
        /// Value given.
        value: String,
        /// Why it is wrong.
        why: String,
    },
    /// Permission denied on a cgroup file.
    #[error("cannot {action} {path}: permission denied; run as root or delegate the cgroup to your user: {hint}")]
    Permission {
        /// What kurabe tried (create, write to).
        action: &'static str,
        /// File or directory.
        path: PathBuf,
        /// How to delegate for this hierarchy.
        hint: String,
    },
    /// Any other I/O failure on a cgroup file.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What kurabe tried.
        action: &'static str,
        /// File or directory.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
}

/// A mounted cgroup hierarchy and kurabe's own cgroup directory in it.
#[derive(Debug, Clone, PartialEq)]
struct Hierarchy {
    version: u8,
    controllers: Vec<String>,
    /// kurabe's own cgroup in this hierarchy (absolute path under the mount).
    own_dir: PathBuf,
}

/// Parse `/proc/self/mountinfo` + `/proc/self/cgroup` into hierarchies.
fn hierarchies(mountinfo: &str, self_cgroup: &str) -> Vec<Hierarchy> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (root, mount, version, controllers) = cgroup_mount(line)?;
            let own = own_path(self_cgroup, version, &controllers)?;
            let rel = own.strip_prefix(root).unwrap_or(own);
            Some(Hierarchy {
                version,
                controllers,
                own_dir: Path::new(mount).join(rel.trim_start_matches('/')),
            })
        })
        .collect()
}

/// A mountinfo line's (root, mount point, cgroup version, v1 controllers)
/// when it mounts a cgroup hierarchy.
fn cgroup_mount(line: &str) -> Option<(&str, &str, u8, Vec<String>)> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split_whitespace().collect();
    let r: Vec<&str> = right.split_whitespace().collect();
    if l.len() < 5 || r.len() < 3 {
        return None;
    }
    let (version, controllers) = match r[0] {
        "cgroup2" => (2, Vec::new()),
        "cgroup" => (
            1,
            r[2].split(',')
                .filter(|o| !matches!(*o, "rw" | "ro") && !o.contains('='))
                .map(str::to_string)
                .collect(),
        ),
        _ => return None,
    };
    Some((l[3], l[4], version, controllers))
}

/// This process's path in the hierarchy with `controllers`, from
/// `/proc/self/cgroup`: "0::/p" for v2, "N:ctrl,ctrl:/p" for v1.
fn own_path<'a>(self_cgroup: &'a str, version: u8, controllers: &[String]) -> Option<&'a str> {
    self_cgroup.lines().find_map(|cl| {
        let mut parts = cl.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if version == 2 {
            ctrls.is_empty()
        } else {
            let set: Vec<&str> = ctrls.split(',').collect();
            controllers.iter().all(|c| set.contains(&c.as_str())) && set.len() == controllers.len()
        };
        matches.then_some(path)
    })
}

/// The cgroup limits in force on this process: the tightest CPU quota and
/// memory limit of its cgroup and every cgroup above it, over all mounted
/// hierarchies (v2 `cpu.max`/`memory.max`, v1 `cpu.cfs_quota_us`/
/// `memory.limit_in_bytes`). Part of the host fingerprint: a container's
/// quota changes results as much as the CPU model does. Unreadable files
/// count as no limit.
pub fn limits_in_force() -> kurabe_model::record::CgroupLimits {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let self_cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut out = kurabe_model::record::CgroupLimits::default();
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
    for h in hierarchies(&mountinfo, &self_cg) {
        let mut dir = Some(h.own_dir.as_path());
        // Up to the hierarchy's root, which still has `cgroup.procs`.
        while let Some(d) = dir.filter(|d| d.join("cgroup.procs").exists()) {
            let cpus = match h.version {
                2 => read(d, "cpu.max").and_then(|t| cpus_from_v2(&t)),
                _ => read(d, "cpu.cfs_quota_us")
                    .zip(read(d, "cpu.cfs_period_us"))
                    .and_then(|(q, p)| cpus_from_v1(&q, &p)),
            };
            let file = if h.version == 2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            let memory = read(d, file).and_then(|t| memory_limit(&t));
            out.cpus = min_some(out.cpus, cpus);
            out.memory_bytes = min_some(out.memory_bytes, memory);
            dir = d.parent();
        }
    }
    out
}

/// The smaller of two optional limits (absent = unlimited).
fn min_some<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Cores from a v2 `cpu.max` (`max 100000` = unlimited, `50000 100000` = 0.5).
fn cpus_from_v2(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// Cores from v1 `cpu.cfs_quota_us` (-1 = unlimited) and `cpu.cfs_period_us`.
fn cpus_from_v1(quota: &str, period: &str) -> Option<f64> {
    let quota: f64 = quota.trim().parse().ok()?;
    let period: f64 = period.trim().parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// Bytes from `memory.max` (`max`) or v1 `memory.limit_in_bytes` (a huge
/// page-rounded number when unlimited).
fn memory_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|b| *b < 1 << 62)
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Reads a run cgroup's counters; cheap to clone into a sampler.
#[derive(Debug, Clone)]
pub struct CgroupReader {
    version: u8,
    cpu_file: Option<PathBuf>,
    procs: Vec<PathBuf>,
    mem_peak: Option<PathBuf>,
    /// v2 `memory.events` or v1 `memory.oom_control`.
    oom_file: Option<PathBuf>,
}

impl CgroupReader {
    /// The counter files of a cgroup of `version` made of `dirs`.
    fn of(version: u8, dirs: &[PathBuf]) -> Self {
        let find = |file: &str| dirs.iter().map(|d| d.join(file)).find(|p| p.exists());
        let (cpu_file, mem_peak, oom_file) = if version == 2 {
            (find("cpu.stat"), find("memory.peak"), find("memory.events"))
        } else {
            (
                find("cpuacct.usage"),
                find("memory.max_usage_in_bytes"),
                find("memory.oom_control"),
            )
        };
        Self {
            version,
            cpu_file,
            procs: dirs.iter().map(|d| d.join("cgroup.procs")).collect(),
            mem_peak,
            oom_file,
        }
    }

    /// CPU time of everything that ever ran in the cgroup, nanoseconds.
    pub fn cpu_ns(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.cpu_file.as_ref()?).ok()?;
        if self.version == 2 {
            let usec: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix("usage_usec "))?
                .trim()
                .parse()
                .ok()?;
            Some(usec * 1000)
        } else {
            text.trim().parse().ok()
        }
    }

    /// Peak memory charged to the cgroup, bytes.
    pub fn memory_peak_bytes(&self) -> Option<u64> {
        std::fs::read_to_string(self.mem_peak.as_ref()?)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// OOM kills inside the cgroup so far (`None` without a memory controller
    /// or on a kernel that does not count them).
    pub fn oom_kills(&self) -> Option<u64> {
        let path = self.oom_file.as_ref()?;
        parse_oom_kills(&std::fs::read_to_string(path).ok()?)
    }

    /// Processes in the cgroup now.
    pub fn pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for f in &self.procs {
            if let Ok(text) = std::fs::read_to_string(f) {
                out.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The private cgroup of one run. Dropping it kills its processes and removes it.
pub struct RunCgroup {
    version: u8,
    dirs: Vec<PathBuf>,
    limits: Limits,
    reader: CgroupReader,
    procs_c: Vec<CString>,
    removed: bool,
}

impl fmt::Debug for RunCgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunCgroup")
            .field("version", &self.version)
            .field("dirs", &self.dirs)
            .finish()
    }
}

fn delegate_hint(version: u8, parent: &Path) -> String {
    if version == 2 {
        format!(
            "`sudo chown -R $USER {}` (or run under `systemd-run --user --scope -p Delegate=yes`)",
            parent.display()
        )
    } else {
        format!(
            "`sudo chown -R $USER {}` for each controller used (cpu, cpuacct, cpuset, memory)",
            parent.display()
        )
    }
}

fn io_err(action: &'static str, path: &Path, e: std::io::Error, version: u8) -> CgroupError {
    if e.kind() == ErrorKind::PermissionDenied {
        let parent = path.parent().unwrap_or(path);
        let parent = if action == "create" {
            parent
        } else {
            parent.parent().unwrap_or(parent)
        };
        CgroupError::Permission {
            action,
            path: path.to_path_buf(),
            hint: delegate_hint(version, parent),
        }
    } else {
        CgroupError::Io {
            action,
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Largest memory limit accepted: the kernel's counters are signed 64-bit
/// pages; anything near it is a typo, not a limit.
const MAX_MEMORY_BYTES: u64 = 1 << 62;

/// Refuse limits the kernel would reject with a misleading error or wrap:
/// more CPUs than the machine has, a malformed CPU list, an absurd memory size.
fn check_limits(limits: &Limits, online: Option<usize>) -> Result<(), CgroupError> {
    let invalid = |flag, value: String, why: String| CgroupError::Invalid { flag, value, why };
    if let Some(why) = limits.cpus.and_then(|c| cpus_problem(c, online)) {
        return Err(invalid(
            "--cpus",
            limits.cpus.unwrap_or(0.0).to_string(),
            why,
        ));
    }
    if let Some(set) = &limits.cpuset {
        if let Some(why) = cpuset_problem(set, online) {
            return Err(invalid("--cpuset", set.clone(), why));
        }
    }
    if let Some(m) = limits.memory_bytes.filter(|&m| m > MAX_MEMORY_BYTES) {
        return Err(invalid(
            "--memory",
            m.to_string(),
            "too large: give a size like 512M or 2G".into(),
        ));
    }
    Ok(())
}

/// What is wrong with a `--cpus` of `c` cores, and the fix.
fn cpus_problem(c: f64, online: Option<usize>) -> Option<String> {
    if !(c.is_finite() && c >= 0.01) {
        return Some("give a number of cores ≥ 0.01, e.g. 0.5".into());
    }
    online
        .filter(|&n| c > n as f64)
        .map(|n| format!("this machine has {n} CPUs; give at most {n}"))
}

/// What is wrong with a `--cpuset` list, and the fix.
fn cpuset_problem(set: &str, online: Option<usize>) -> Option<String> {
    match (cpu_list(set), online) {
        (None, _) => Some("give CPU numbers and ranges like 0, 0-1 or 0,2".to_owned()),
        (Some(cpus), Some(n)) if cpus.iter().any(|&c| c >= n) => {
            Some(format!("this machine has CPUs 0-{}", n - 1))
        }
        _ => None,
    }
}

/// The CPUs of a kernel list (`0-3,5`); `None` when it is malformed or empty.
fn cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for item in text.trim().split(',') {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        if a > b || b - a > 1 << 16 {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

/// How many CPUs this machine has online (`/sys/devices/system/cpu/online`).
fn online_cpus() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    cpu_list(&text).map(|cpus| cpus.iter().max().map_or(0, |m| m + 1))
}

fn write_file(path: &Path, value: &str, version: u8) -> Result<(), CgroupError> {
    std::fs::write(path, value).map_err(|e| io_err("write to", path, e, version))
}

/// The controllers `limits` need, each with the flag that needs it.
fn needed_controllers(limits: &Limits) -> Vec<(&'static str, &'static str)> {
    let mut needed = Vec::new();
    if limits.cpus.is_some() {
        needed.push(("cpu", "--cpus"));
    }
    if limits.cpuset.is_some() {
        needed.push(("cpuset", "--cpuset"));
    }
    if limits.memory_bytes.is_some() {
        needed.push(("memory", "--memory"));
    }
    needed
}

/// The v1 hierarchy that has controller `c`.
fn v1_hierarchy<'a>(hs: &'a [Hierarchy], c: &str) -> Option<&'a Hierarchy> {
    hs.iter()
        .find(|h| h.version == 1 && h.controllers.iter().any(|x| x == c))
}

/// Every `needed` controller has a v1 hierarchy, or the error naming the
/// flag and what v2 offers instead.
fn require_v1(
    hs: &[Hierarchy],
    needed: &[(&'static str, &'static str)],
    v2_offers: &str,
) -> Result<(), CgroupError> {
    match needed.iter().find(|(c, _)| v1_hierarchy(hs, c).is_none()) {
        None => Ok(()),
        Some(&(controller, flag)) => Err(CgroupError::NoController {
            flag,
            controller,
            v2_offers: if v2_offers.trim().is_empty() {
                "none".into()
            } else {
                v2_offers.trim().into()
            },
        }),
    }
}

/// Enable the `needed` controllers for the children of the v2 cgroup `parent`.
fn enable_controllers(
    parent: &Path,
    needed: &[(&'static str, &'static str)],
) -> Result<(), CgroupError> {
    let ctl = parent.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&ctl).unwrap_or_default();
    let want: Vec<String> = needed
        .iter()
        .filter(|(c, _)| !enabled.split_whitespace().any(|e| e == *c))
        .map(|(c, _)| format!("+{c}"))
        .collect();
    if want.is_empty() {
        return Ok(());
    }
    write_file(&ctl, &want.join(" "), 2)
}

impl RunCgroup {
    /// Create a private cgroup for one run with `limits` applied (none = counting
    /// and killing only).
    pub fn create(limits: &Limits) -> Result<Self, CgroupError> {
        check_limits(limits, online_cpus())?;
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let self_cg = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let hs = hierarchies(&mountinfo, &self_cg);
        if hs.is_empty() {
            return Err(CgroupError::NotMounted);
        }
        for h in &hs {
            sweep_stale(&h.own_dir);
        }
        let needed = needed_controllers(limits);
        let v2 = hs.iter().find(|h| h.version == 2);
        let v2_offers = v2
            .and_then(|h| std::fs::read_to_string(h.own_dir.join("cgroup.controllers")).ok())
            .unwrap_or_default();
        let v2_has = |c: &str| v2_offers.split_whitespace().any(|o| o == c);
        let name = format!(
            "kurabe-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(v2) = v2.filter(|_| {
            needed.iter().all(|(c, _)| v2_has(c))
                && (!needed.is_empty() || v1_hierarchy(&hs, "cpuacct").is_none())
        }) {
            return Self::create_v2(&v2.own_dir, &name, limits, &needed);
        }
        require_v1(&hs, &needed, &v2_offers)?;
        Self::create_v1(&hs, &name, limits)
    }

    fn create_v2(
        parent: &Path,
        name: &str,
        limits: &Limits,
        needed: &[(&'static str, &'static str)],
    ) -> Result<Self, CgroupError> {
        enable_controllers(parent, needed)?;
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| io_err("create", &dir, e, 2))?;
        let cg = Self::assemble(2, vec![dir.clone()], limits.clone());
        if let Some(c) = limits.cpus {
            write_file(
                &dir.join("cpu.max"),
                &format!("{} 100000", (c * 100_000.0).round() as u64),
                2,
            )?;
        }
        if let Some(s) = &limits.cpuset {
            cg.write_cpuset(&dir.join("cpuset.cpus"), s)?;
        }
        if let Some(m) = limits.memory_bytes {
            write_file(&dir.join("memory.max"), &m.to_string(), 2)?;
        }
        Ok(cg)
    }

    fn create_v1(hs: &[Hierarchy], name: &str, limits: &Limits) -> Result<Self, CgroupError> {
        let mut want: Vec<&str> = vec!["cpuacct", "memory"];
        if limits.cpus.is_some() {
            want.push("cpu");
        }
        if limits.cpuset.is_some() {
            want.push("cpuset");
        }
        // Directories join `cg` as they are made, so an error half-way removes them.
        let mut cg = Self::assemble(1, Vec::new(), limits.clone());
        for c in want {
            // cpuacct/memory are optional when no limit needs them.
            if let Some(h) = v1_hierarchy(hs, c) {
                cg.add_v1_dir(h, name, limits)?;
            }
        }
        let dirs = std::mem::take(&mut cg.dirs);
        if dirs.is_empty() {
            return Err(CgroupError::NotMounted);
        }
        Ok(Self::assemble(1, dirs, limits.clone()))
    }

    /// Make the run's directory in the v1 hierarchy `h` (once per
    /// hierarchy) and write the limits its controllers take.
    fn add_v1_dir(
        &mut self,
        h: &Hierarchy,
        name: &str,
        limits: &Limits,
    ) -> Result<(), CgroupError> {
        let dir = h.own_dir.join(name);
        if self.dirs.contains(&dir) {
            return Ok(());
        }
        std::fs::create_dir(&dir).map_err(|e| io_err("create", &dir, e, 1))?;
        self.dirs.push(dir.clone());
        let has = |x: &str| h.controllers.iter().any(|y| y == x);
        if has("cpuset") {
            // A v1 cpuset cgroup needs cpus and mems before it accepts tasks.
            let inherited = |f: &str| {
                let text = std::fs::read_to_string(h.own_dir.join(f)).unwrap_or_default();
                text.trim().to_string()
            };
            write_file(&dir.join("cpuset.mems"), &inherited("cpuset.mems"), 1)?;
            let cpus = limits
                .cpuset
                .clone()
                .unwrap_or_else(|| inherited("cpuset.cpus"));
            self.write_cpuset(&dir.join("cpuset.cpus"), &cpus)?;
        }
        if let Some(c) = limits.cpus.filter(|_| has("cpu")) {
            write_file(&dir.join("cpu.cfs_period_us"), "100000", 1)?;
            let quota = ((c * 100_000.0).round() as u64).to_string();
            write_file(&dir.join("cpu.cfs_quota_us"), &quota, 1)?;
        }
        if let Some(m) = limits.memory_bytes.filter(|_| has("memory")) {
            write_file(&dir.join("memory.limit_in_bytes"), &m.to_string(), 1)?;
        }
        Ok(())
    }

    fn write_cpuset(&self, path: &Path, cpus: &str) -> Result<(), CgroupError> {
        std::fs::write(path, cpus).map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ERANGE) => CgroupError::Invalid {
                flag: "--cpuset",
                value: cpus.to_string(),
                why: format!(
                    "the kernel rejected it; online CPUs are {}",
                    std::fs::read_to_string("/sys/devices/system/cpu/online")
                        .unwrap_or_default()
                        .trim()
                ),
            },
            _ => io_err("write to", path, e, self.version),
        })
    }

    fn assemble(version: u8, dirs: Vec<PathBuf>, limits: Limits) -> Self {
        let reader = CgroupReader::of(version, &dirs);
        let procs_c = reader
            .procs
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect();
        Self {
            version,
            reader,
            dirs,
            limits,
            procs_c,
            removed: false,
        }
    }

    /// cgroup version in use (1 or 2).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The run's directories (one on v2, one per hierarchy on v1).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Limits applied.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A reader of the counters, for a [`crate::TreeSampler`].
    pub fn reader(&self) -> CgroupReader {
        self.reader.clone()
    }

    /// Make `cmd` join this cgroup before exec (it also gets its own process group).
    pub fn prepare(&self, cmd: &mut Command) {
        let files = self.procs_c.clone();
        cmd.process_group(0);
        // SAFETY: the hook only calls async-signal-safe functions (open,
        // write, close) on memory prepared before fork.
        unsafe {
            cmd.pre_exec(move || {
                for f in &files {
                    let fd = libc::open(f.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                    let err = std::io::Error::last_os_error();
                    libc::close(fd);
                    if n != 1 {
                        return Err(err);
                    }
                }
                Ok(())
            });
        }
    }

    /// SIGKILL everything in the cgroup and wait (up to 2 s) until it is empty.
    pub fn kill_all(&self) {
        if self.version == 2 {
            for d in &self.dirs {
                let _ = std::fs::write(d.join("cgroup.kill"), "1");
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        exitwait::kill_until_empty(|| self.reader.pids(), deadline);
    }

    /// `dir` could not be removed because it is busy: kill whatever got in
    /// after [`RunCgroup::kill_all`] and wait until the kernel counts it
    /// empty (an exited task can stay counted for a moment after its pidfd
    /// says it exited).
    fn wait_emptied(&self, dir: &Path, deadline: Instant) {
        exitwait::kill_until_empty(|| self.reader.pids(), deadline);
        if self.version == 2 {
            wait_unpopulated(dir, deadline);
        } else {
            // cgroup v1 tells nobody when a group empties: this short
            // pause before trying `rmdir` again is the one timed retry kept.
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kill what is left and remove the directories. Idempotent.
    pub fn cleanup(&mut self) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        self.kill_all();
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut first_err = None;
        for d in &self.dirs {
            loop {
                match std::fs::remove_dir(d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == ErrorKind::NotFound => break,
                    Err(e)
                        if Instant::now() < deadline && e.raw_os_error() == Some(libc::EBUSY) =>
                    {
                        self.wait_emptied(d, deadline);
                    }
                    Err(e) => {
                        first_err.get_or_insert(io_err("remove", d, e, self.version));
                        break;
                    }
                }
            }
        }
        self.removed = true;
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

/// Block until the v2 cgroup `dir` reports `populated 0` in
/// `cgroup.events`, or until `deadline`. The kernel flags that file for
/// `poll(2)` (`POLLPRI`) whenever it changes, so this sleeps in the kernel
/// rather than looking again and again.
fn wait_unpopulated(dir: &Path, deadline: Instant) -> bool {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let Ok(mut f) = std::fs::File::open(dir.join("cgroup.events")) else {
        return true;
    };
    let mut text = String::new();
    loop {
        text.clear();
        if f.rewind()
            .and_then(|()| f.read_to_string(&mut text))
            .is_err()
        {
            return true;
        }
        if text.lines().any(|l| l.trim() == "populated 0") {
            return true;
        }
        let mut p = [libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        }];
        if !exitwait::poll_until(&mut p, deadline) {
            return false;
        }
    }
}

/// The `oom_kill` count of a v2 `memory.events` or a v1 `memory.oom_control`
/// file (both are `key value` lines; v1 has it since Linux 4.13).
pub fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

/// The PID in a run cgroup's name `kurabe-<pid>-<n>`, if it is one.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("kurabe-")?;
    let (pid, seq) = rest.split_once('-')?;
    seq.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Remove run cgroups under `parent` whose kurabe is gone.
///
/// A drop guard cannot run when kurabe is SIGKILLed; the next kurabe that
/// makes a cgroup here cleans up after it: whatever still runs in a dead
/// owner's cgroup is an orphan of that run (e.g. a double-forked helper), so
/// it is killed, then the directory is removed. Cgroups of live owners are
/// left alone. Best effort: failures are ignored.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let dir = entry.path();
        let procs = dir.join("cgroup.procs");
        let members = || {
            std::fs::read_to_string(&procs)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        };
        exitwait::kill_until_empty(members, Instant::now() + Duration::from_secs(1));
        let _ = std::fs::remove_dir(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_files_parse_to_cores_and_bytes() {
        assert_eq!(cpus_from_v2("max 100000\n"), None);
        assert_eq!(cpus_from_v2("50000 100000\n"), Some(0.5));
        assert_eq!(cpus_from_v1("-1\n", "100000\n"), None);
        assert_eq!(cpus_from_v1("200000\n", "100000\n"), Some(2.0));
        assert_eq!(memory_limit("max\n"), None);
        assert_eq!(memory_limit("9223372036854771712\n"), None);
        assert_eq!(memory_limit("536870912\n"), Some(512 << 20));
        assert_eq!(min_some(Some(2.0), Some(0.5)), Some(0.5));
        assert_eq!(min_some(None, Some(3u64)), Some(3));
    }

    #[test]
    fn limits_in_force_match_the_own_cgroup_files() {
        // At least as tight as this process's own cgroup says.
        let l = limits_in_force();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
            let dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
            if let Ok(t) = std::fs::read_to_string(dir.join("memory.max")) {
                if let (Some(own), Some(found)) = (memory_limit(&t), l.memory_bytes) {
                    assert!(found <= own);
                }
            }
        }
        assert!(l.cpus.is_none_or(|c| c > 0.0));
    }

    #[test]
    fn limits_beyond_the_machine_or_malformed_are_refused() {
        let l = |cpus, cpuset: Option<&str>, memory_bytes| Limits {
            cpus,
            cpuset: cpuset.map(str::to_owned),
            memory_bytes,
        };
        let err = |limits: Limits| check_limits(&limits, Some(2)).unwrap_err().to_string();
        assert!(err(l(Some(1000.0), None, None)).contains("this machine has 2 CPUs"));
        assert!(err(l(None, Some(",,"), None)).contains("ranges like 0, 0-1"));
        assert!(err(l(None, Some("1-0"), None)).contains("--cpuset"));
        assert!(err(l(None, Some("0-5"), None)).contains("CPUs 0-1"));
        assert!(err(l(None, None, Some(u64::MAX))).contains("too large"));
        assert!(check_limits(&l(Some(2.0), Some("0,1"), Some(1 << 30)), Some(2)).is_ok());
        assert_eq!(cpu_list("0-2,5\n"), Some(vec![0, 1, 2, 5]));
    }

    const MOUNTINFO: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const SELF: &str = "9:name=systemd:/\n4:memory:/api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n";

    #[test]
    fn hierarchies_from_mountinfo() {
        let hs = hierarchies(MOUNTINFO, SELF);
        let mem = hs.iter().find(|h| h.controllers == ["memory"]).unwrap();
        assert_eq!(mem.own_dir, Path::new("/sys/fs/cgroup/memory/api/abc"));
        let v2 = hs.iter().find(|h| h.version == 2).unwrap();
        assert_eq!(v2.own_dir, Path::new("/sys/fs/cgroup/unified"));
        assert!(hs.iter().any(|h| h.controllers == ["cpuacct"]));
    }

    #[test]
    fn co_mounted_controllers() {
        let mi = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let hs = hierarchies(mi, "3:cpu,cpuacct:/user.slice\n");
        assert_eq!(hs[0].controllers, ["cpu", "cpuacct"]);
        assert_eq!(
            hs[0].own_dir,
            Path::new("/sys/fs/cgroup/cpu,cpuacct/user.slice")
        );
    }

    #[test]
    fn permission_error_names_the_file_and_how_to_delegate() {
        let denied = std::io::Error::from(ErrorKind::PermissionDenied);
        let path = Path::new("/sys/fs/cgroup/cpu/user/kurabe-1-0");
        let msg = io_err("create", path, denied, 1).to_string();
        assert!(
            msg.contains("cannot create /sys/fs/cgroup/cpu/user/kurabe-1-0"),
            "{msg}"
        );
        assert!(
            msg.contains("chown -R $USER /sys/fs/cgroup/cpu/user"),
            "{msg}"
        );
        let denied = std::io::Error::from(ErrorKind::PermissionDenied);
        let file = Path::new("/sys/fs/cgroup/app/kurabe-1-0/cpu.max");
        let msg = io_err("write to", file, denied, 2).to_string();
        assert!(
            msg.contains("cpu.max") && msg.contains("Delegate=yes"),
            "{msg}"
        );
        assert!(msg.contains("chown -R $USER /sys/fs/cgroup/app`"), "{msg}");
    }

    #[test]
    fn run_cgroup_names_give_their_owner() {
        assert_eq!(owner_pid("kurabe-4686-3"), Some(4686));
        assert_eq!(owner_pid("kurabe-4686"), None);
        assert_eq!(owner_pid("kurabe-x-1"), None);
        assert_eq!(owner_pid("user.slice"), None);
    }

    #[test]
    fn stale_run_cgroups_of_dead_owners_are_swept_live_ones_kept() {
        // A plain directory tree stands in for a cgroup parent: the sweep only
        // reads cgroup.procs (absent = empty) and removes empty directories.
        let parent = std::env::temp_dir().join(format!("kurabe-sweep-{}", std::process::id()));
        let dead = parent.join("kurabe-999999999-0");
        let live = parent.join(format!("kurabe-{}-0", std::process::id()));
        let other = parent.join("unrelated");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        sweep_stale(&parent);
        assert!(!dead.exists(), "a dead owner's cgroup is removed");
        assert!(live.exists(), "a live owner's cgroup is kept");
        assert!(other.exists(), "other directories are not touched");
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn oom_kills_from_v2_memory_events_and_v1_oom_control() {
        let dir = std::env::temp_dir().join(format!("kurabe-oom-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let events = dir.join("memory.events");
        std::fs::write(
            &events,
            "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
        )
        .unwrap();
        let reader = CgroupReader {
            version: 2,
            cpu_file: None,
            procs: Vec::new(),
            mem_peak: None,
            oom_file: Some(events),
        };
        assert_eq!(reader.oom_kills(), Some(1));
        std::fs::remove_dir_all(&dir).unwrap();
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(parse_oom_kills(v1), Some(3));
        assert_eq!(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n"), None);
    }
}
