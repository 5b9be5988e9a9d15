//! The 12 index tests: ids, display names, units, BYTE baselines and the
//! durations and pass counts UnixBench's `Run` driver gives them.
//!
//! Pure data. The baselines are the SPARCstation 20-61 ("George") figures of
//! UnixBench's `pgms/index.base`; a machine as fast as George scores 10.0 on
//! every test.

/// One of the 12 tests of the System Benchmarks Index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TestId {
    /// Dhrystone 2.1, register variant.
    Dhry2reg,
    /// Double-precision Whetstone.
    Whetstone,
    /// Execl throughput.
    Execl,
    /// File copy, 1024-byte buffers, 2000 blocks.
    Fstime,
    /// File copy, 256-byte buffers, 500 blocks.
    Fsbuffer,
    /// File copy, 4096-byte buffers, 8000 blocks.
    Fsdisk,
    /// Pipe throughput.
    Pipe,
    /// Pipe-based context switching.
    Context1,
    /// Process creation.
    Spawn,
    /// Shell scripts, 1 concurrent.
    Shell1,
    /// Shell scripts, 8 concurrent.
    Shell8,
    /// System call overhead.
    Syscall,
}

/// How a test's count turns into a rate (UnixBench's `COUNT|n|timebase|unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timebase {
    /// The count is already a rate (KBps, MWIPS): timebase 0.
    Rate,
    /// Loops per this many seconds: 1 for lps, 60 for lpm.
    PerSeconds(u32),
}

/// Pass count class in UnixBench's driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// 10 passes ("long" in `Run`): the fast CPU and syscall tests.
    Long,
    /// 3 passes ("short"): the slow tests.
    Short,
}

/// Everything static about one test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestSpec {
    /// Which test.
    pub id: TestId,
    /// UnixBench's own short name, also kurabe's `--tests` id.
    pub key: &'static str,
    /// UnixBench's display name.
    pub name: &'static str,
    /// Unit label.
    pub unit: &'static str,
    /// Count to rate conversion.
    pub timebase: Timebase,
    /// BYTE baseline in `unit`.
    pub baseline: f64,
    /// Pass count class.
    pub repeat: Repeat,
    /// Duration UnixBench runs one pass for, seconds.
    pub default_s: f64,
    /// Other spellings accepted by `--tests`.
    pub aliases: &'static [&'static str],
}

/// The 12 tests in UnixBench's report order (sorted by display name).
pub const ALL: [TestSpec; 12] = [
    spec(
        TestId::Dhry2reg,
        "dhry2reg",
        "Dhrystone 2 using register variables",
        "lps",
        Timebase::PerSeconds(1),
        116700.0,
        Repeat::Long,
        10.0,
        &["dhry", "dhrystone"],
    ),
    spec(
        TestId::Whetstone,
        "whetstone-double",
        "Double-Precision Whetstone",
        "MWIPS",
        Timebase::Rate,
        55.0,
        Repeat::Long,
        10.0,
        &["whets", "whetstone"],
    ),
    spec(
        TestId::Execl,
        "execl",
        "Execl Throughput",
        "lps",
        Timebase::PerSeconds(1),
        43.0,
        Repeat::Short,
        30.0,
        &[],
    ),
    spec(
        TestId::Fstime,
        "fstime",
        "File Copy 1024 bufsize 2000 maxblocks",
        "KBps",
        Timebase::Rate,
        3960.0,
        Repeat::Short,
        30.0,
        &["fscopy1024"],
    ),
    spec(
        TestId::Fsbuffer,
        "fsbuffer",
        "File Copy 256 bufsize 500 maxblocks",
        "KBps",
        Timebase::Rate,
        1655.0,
        Repeat::Short,
        30.0,
        &["fscopy256"],
    ),
    spec(
        TestId::Fsdisk,
        "fsdisk",
        "File Copy 4096 bufsize 8000 maxblocks",
        "KBps",
        Timebase::Rate,
        5800.0,
        Repeat::Short,
        30.0,
        &["fscopy4096"],
    ),
    spec(
        TestId::Pipe,
        "pipe",
        "Pipe Throughput",
        "lps",
        Timebase::PerSeconds(1),
        12440.0,
        Repeat::Long,
        10.0,
        &[],
    ),
    spec(
        TestId::Context1,
        "context1",
        "Pipe-based Context Switching",
        "lps",
        Timebase::PerSeconds(1),
        4000.0,
        Repeat::Long,
        10.0,
        &["context"],
    ),
    spec(
        TestId::Spawn,
        "spawn",
        "Process Creation",
        "lps",
        Timebase::PerSeconds(1),
        126.0,
        Repeat::Short,
        30.0,
        &["fork"],
    ),
    spec(
        TestId::Shell1,
        "shell1",
        "Shell Scripts (1 concurrent)",
        "lpm",
        Timebase::PerSeconds(60),
        42.4,
        Repeat::Short,
        60.0,
        &[],
    ),
    spec(
        TestId::Shell8,
        "shell8",
        "Shell Scripts (8 concurrent)",
        "lpm",
        Timebase::PerSeconds(60),
        6.0,
        Repeat::Short,
        60.0,
        &[],
    ),
    spec(
        TestId::Syscall,
        "syscall",
        "System Call Overhead",
        "lps",
        Timebase::PerSeconds(1),
        15000.0,
        Repeat::Long,
        10.0,
        &[],
    ),
];

#[allow(clippy::too_many_arguments)]
const fn spec(
    id: TestId,
    key: &'static str,
    name: &'static str,
    unit: &'static str,
    timebase: Timebase,
    baseline: f64,
    repeat: Repeat,
    default_s: f64,
    aliases: &'static [&'static str],
) -> TestSpec {
    TestSpec {
        id,
        key,
        name,
        unit,
        timebase,
        baseline,
        repeat,
        default_s,
        aliases,
    }
}

impl TestId {
    /// The static description of this test.
    pub fn spec(self) -> &'static TestSpec {
        ALL.iter()
            .find(|s| s.id == self)
            .expect("every TestId is in ALL")
    }
}

/// Look a test up by its id or an alias (case-insensitive).
pub fn by_key(key: &str) -> Option<&'static TestSpec> {
    let key = key.trim().to_ascii_lowercase();
    ALL.iter()
        .find(|s| s.key == key || s.aliases.contains(&key.as_str()))
}

/// Look a test up by its UnixBench display name.
pub fn by_name(name: &str) -> Option<&'static TestSpec> {
    ALL.iter().find(|s| s.name == name.trim())
}

/// Every accepted `--tests` id, for error messages.
pub fn keys() -> String {
    ALL.iter().map(|s| s.key).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_order_is_unixbench_order_sorted_by_name() {
        let names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn lookup_by_key_alias_and_name() {
        assert_eq!(by_key("PIPE").unwrap().id, TestId::Pipe);
        assert_eq!(by_key("context").unwrap().id, TestId::Context1);
        assert_eq!(by_name("Process Creation").unwrap().id, TestId::Spawn);
        assert!(by_key("nope").is_none());
    }
}
