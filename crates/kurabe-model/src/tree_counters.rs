//! The kernel's counters of a measured process tree: CPU split into user
//! and system, context switches, page faults, read/write system calls and
//! bytes, CPU migrations and, where the machine has a PMU, hardware
//! counters.
//!
//! Owns [`Counter`] (the one list of counters: adding one is one variant
//! and one row of `DEFS`) and [`Counts`] (a value per counter, each absent
//! when it was not counted: a counter kurabe could not read is never 0).
//! Must not read anything: kurabe-probe counts, kurabe-report renders.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a counter's values are in (the metric catalogue maps these to its units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds of CPU.
    Milliseconds,
    /// Bytes.
    Bytes,
    /// Events.
    Count,
}

impl Unit {
    /// Short symbol for descriptions.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Milliseconds => "ms",
            Unit::Bytes => "B",
            Unit::Count => "",
        }
    }
}

/// How many counters there are.
pub const COUNTERS: usize = 16;

/// One counter of a process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    /// User CPU, ms (`/proc/PID/stat` utime + cutime; rusage `ru_utime`).
    UserCpuMs,
    /// System CPU, ms (stime + cstime; rusage `ru_stime`).
    SystemCpuMs,
    /// Voluntary context switches (the task blocked: I/O, a lock, sleep).
    VoluntarySwitches,
    /// Involuntary context switches (the scheduler took the CPU away).
    InvoluntarySwitches,
    /// Minor page faults (no disk read: a fresh page, a page in cache).
    MinorFaults,
    /// Major page faults (a disk read).
    MajorFaults,
    /// `read`-family system calls (`/proc/PID/io` syscr).
    ReadSyscalls,
    /// `write`-family system calls (syscw).
    WriteSyscalls,
    /// Bytes passed to `read`-family calls (rchar; page cache, sockets, pipes too).
    ReadBytes,
    /// Bytes passed to `write`-family calls (wchar).
    WriteBytes,
    /// Moves of a task from one CPU to another.
    CpuMigrations,
    /// Instructions retired (hardware PMU).
    Instructions,
    /// CPU cycles (hardware PMU).
    Cycles,
    /// Last-level cache references (hardware PMU).
    CacheReferences,
    /// Last-level cache misses (hardware PMU).
    CacheMisses,
    /// Mispredicted branches (hardware PMU).
    BranchMisses,
}

/// What a counter is called and means.
struct Def {
    key: &'static str,
    per_request: &'static str,
    unit: Unit,
    what: &'static str,
}

/// One row per counter, in [`Counter`] order.
const DEFS: [Def; COUNTERS] = [
    def(
        "user_cpu_ms",
        "user_cpu_ms_per_request",
        Unit::Milliseconds,
        "user CPU time",
    ),
    def(
        "system_cpu_ms",
        "system_cpu_ms_per_request",
        Unit::Milliseconds,
        "system CPU time",
    ),
    def(
        "voluntary_switches",
        "voluntary_switches_per_request",
        Unit::Count,
        "voluntary context switches",
    ),
    def(
        "involuntary_switches",
        "involuntary_switches_per_request",
        Unit::Count,
        "involuntary context switches",
    ),
    def(
        "minor_faults",
        "minor_faults_per_request",
        Unit::Count,
        "minor page faults",
    ),
    def(
        "major_faults",
        "major_faults_per_request",
        Unit::Count,
        "major page faults",
    ),
    def(
        "read_syscalls",
        "read_syscalls_per_request",
        Unit::Count,
        "read system calls (/proc/PID/io syscr)",
    ),
    def(
        "write_syscalls",
        "write_syscalls_per_request",
        Unit::Count,
        "write system calls (/proc/PID/io syscw)",
    ),
    def(
        "syscall_read_bytes",
        "syscall_read_bytes_per_request",
        Unit::Bytes,
        "bytes read by system calls (/proc/PID/io rchar)",
    ),
    def(
        "syscall_write_bytes",
        "syscall_write_bytes_per_request",
        Unit::Bytes,
        "bytes written by system calls (/proc/PID/io wchar)",
    ),
    def(
        "cpu_migrations",
        "cpu_migrations_per_request",
        Unit::Count,
        "CPU migrations",
    ),
    def(
        "hw_instructions",
        "hw_instructions_per_request",
        Unit::Count,
        "instructions retired (hardware PMU)",
    ),
    def(
        "hw_cycles",
        "hw_cycles_per_request",
        Unit::Count,
        "CPU cycles (hardware PMU)",
    ),
    def(
        "hw_cache_references",
        "hw_cache_references_per_request",
        Unit::Count,
        "cache references (hardware PMU)",
    ),
    def(
        "hw_cache_misses",
        "hw_cache_misses_per_request",
        Unit::Count,
        "cache misses (hardware PMU)",
    ),
    def(
        "hw_branch_misses",
        "hw_branch_misses_per_request",
        Unit::Count,
        "branch misses (hardware PMU)",
    ),
];

/// A row of `DEFS`.
const fn def(key: &'static str, per_request: &'static str, unit: Unit, what: &'static str) -> Def {
    Def {
        key,
        per_request,
        unit,
        what,
    }
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; COUNTERS] = [
        Counter::UserCpuMs,
        Counter::SystemCpuMs,
        Counter::VoluntarySwitches,
        Counter::InvoluntarySwitches,
        Counter::MinorFaults,
        Counter::MajorFaults,
        Counter::ReadSyscalls,
        Counter::WriteSyscalls,
        Counter::ReadBytes,
        Counter::WriteBytes,
        Counter::CpuMigrations,
        Counter::Instructions,
        Counter::Cycles,
        Counter::CacheReferences,
        Counter::CacheMisses,
        Counter::BranchMisses,
    ];

    /// The hardware counters (PMU), which many machines do not have.
    pub const HARDWARE: [Counter; 5] = [
        Counter::Instructions,
        Counter::Cycles,
        Counter::CacheReferences,
        Counter::CacheMisses,
        Counter::BranchMisses,
    ];

    fn def(self) -> &'static Def {
        &DEFS[self as usize]
    }

    /// JSON key and metric name of the total (per execution for commands,
    /// over the phase for a watch): `minor_faults`.
    pub fn key(self) -> &'static str {
        self.def().key
    }

    /// Metric name per request of a load: `minor_faults_per_request`.
    pub fn per_request(self) -> &'static str {
        self.def().per_request
    }

    /// Unit of the values.
    pub fn unit(self) -> Unit {
        self.def().unit
    }

    /// What it counts, for listings and reports.
    pub fn what(self) -> &'static str {
        self.def().what
    }

    /// True for the hardware (PMU) counters.
    pub fn is_hardware(self) -> bool {
        Counter::HARDWARE.contains(&self)
    }

    /// The counter whose [`Counter::key`] is `key`.
    pub fn from_key(key: &str) -> Option<Counter> {
        Counter::ALL.into_iter().find(|c| c.key() == key)
    }

    /// True for a metric name that is a counter's (total or per request).
    pub fn is_metric(name: &str) -> bool {
        Counter::ALL
            .iter()
            .any(|c| c.key() == name || c.per_request() == name)
    }
}

/// Why the hardware counters (instructions, cycles, cache and branch
/// misses) were not counted on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum HardwareOff {
    /// The machine has no hardware PMU the kernel can count with (most
    /// VMs, cloud containers and CI runners).
    NoPmu,
    /// Perf events are not allowed to this user.
    NotAllowed {
        /// `kernel.perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
    },
    /// The kernel has no perf events at all.
    NoPerfEvents,
}

/// A value per counter; a counter that was not counted has none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts([Option<f64>; COUNTERS]);

impl Counts {
    /// The value of `c`, if it was counted.
    pub fn get(&self, c: Counter) -> Option<f64> {
        self.0[c as usize]
    }

    /// Set `c` to `v`.
    pub fn set(&mut self, c: Counter, v: f64) {
        self.0[c as usize] = Some(v);
    }

    /// Forget `c`: it was not counted.
    pub fn clear(&mut self, c: Counter) {
        self.0[c as usize] = None;
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// The counted counters with their values, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Counter, f64)> + '_ {
        Counter::ALL
            .into_iter()
            .filter_map(|c| Some((c, self.get(c)?)))
    }

    /// Each value divided by `n` (per request, per execution); nothing
    /// when `n` is 0: a count per nothing is unknown, not 0.
    pub fn per(&self, n: f64) -> Counts {
        if n <= 0.0 || !n.is_finite() {
            return Counts::default();
        }
        Counts(self.0.map(|v| v.map(|v| v / n)))
    }

    /// The sum of two counts: a counter is counted in the sum only when it
    /// was counted in both (a part missing would make the sum too small).
    pub fn plus(&self, other: &Counts) -> Counts {
        let mut out = Counts::default();
        for c in Counter::ALL {
            if let (Some(a), Some(b)) = (self.get(c), other.get(c)) {
                out.set(c, a + b);
            }
        }
        out
    }

    /// Instructions per cycle, when both were counted and cycles are not 0.
    pub fn ipc(&self) -> Option<f64> {
        let cycles = self.get(Counter::Cycles).filter(|c| *c > 0.0)?;
        Some(self.get(Counter::Instructions)? / cycles)
    }
}

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (c, v) in self.iter() {
            map.serialize_entry(c.key(), &v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Counts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of counter names to numbers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Counts, A::Error> {
                let mut out = Counts::default();
                while let Some((k, v)) = m.next_entry::<String, f64>()? {
                    // A counter from a newer kurabe is skipped, not an error.
                    if let Some(c) = Counter::from_key(&k) {
                        out.set(c, v);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

impl JsonSchema for Counts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Counts".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut props = serde_json::Map::new();
        for c in Counter::ALL {
            let unit = match c.unit() {
                Unit::Count => String::new(),
                u => format!(", {}", u.symbol()),
            };
            props.insert(
                c.key().into(),
                serde_json::json!({"type": "number", "minimum": 0, "description": format!("{}{unit}", c.what())}),
            );
        }
        schemars::json_schema!({
            "description": "The kernel's counters of a process tree; a counter that was not counted is absent (never 0).",
            "type": "object",
            "properties": props,
            "additionalProperties": false
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defs_follow_the_enum_and_names_are_unique() {
        for (i, c) in Counter::ALL.into_iter().enumerate() {
            assert_eq!(c as usize, i);
            assert_eq!(Counter::from_key(c.key()), Some(c));
            assert_eq!(c.per_request(), format!("{}_per_request", c.key()));
        }
        let mut keys: Vec<_> = Counter::ALL.iter().map(|c| c.key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), COUNTERS);
    }

    #[test]
    fn not_counted_is_absent_not_zero() {
        let mut c = Counts::default();
        c.set(Counter::MinorFaults, 120.0);
        c.set(Counter::MajorFaults, 0.0);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"minor_faults":120.0,"major_faults":0.0}"#);
        let back: Counts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.get(Counter::Instructions), None);
        // Per nothing is unknown, not 0.
        assert!(c.per(0.0).is_empty());
        assert_eq!(c.per(4.0).get(Counter::MinorFaults), Some(30.0));
        // A sum with a part missing is not counted.
        let mut d = Counts::default();
        d.set(Counter::MinorFaults, 1.0);
        let s = c.plus(&d);
        assert_eq!(s.get(Counter::MinorFaults), Some(121.0));
        assert_eq!(s.get(Counter::MajorFaults), None);
        assert_eq!(c.ipc(), None);
    }
}
