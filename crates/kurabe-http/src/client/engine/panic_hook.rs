//! Debug builds only: make a worker panic mid-run, as an engine bug would,
//! so the tests can prove a panic ends the run (exit 70, its message, no
//! hang). Release builds have no such hook: the environment cannot make
//! them panic.
//!
//! Two triggers: a unit test arms a port ([`arm`]); an
//! integration test of the binary sets `KURABE_TEST_PANIC_WORKER=after:N`,
//! and the first worker of the process (either protocol) to have completed N
//! responses panics at its next progress publication (every ~50 ms).
//!
//! Its own module, below the workers and the thread that joins them, so
//! neither imports the other for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The variable the binary's tests set.
pub const VAR: &str = "KURABE_TEST_PANIC_WORKER";

static PORTS: Mutex<Vec<u16>> = Mutex::new(Vec::new());
static FIRED: AtomicBool = AtomicBool::new(false);

/// Make workers whose target is `port` panic mid-run.
#[cfg(test)]
pub fn arm(port: u16) {
    PORTS.lock().unwrap().push(port);
}

/// `after:N` from the environment, read once.
fn after() -> Option<u64> {
    static AFTER: OnceLock<Option<u64>> = OnceLock::new();
    *AFTER.get_or_init(|| {
        std::env::var(VAR)
            .ok()?
            .strip_prefix("after:")?
            .parse()
            .ok()
    })
}

/// Panic if the run against `port` was armed, or once `completed`
/// responses reach the environment's `after:N` (once per process: the
/// run's other workers go on, so the test sees them stopped by the
/// first one's panic).
pub fn check(port: u16, completed: u64) {
    let mut ports = PORTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = ports.iter().position(|&p| p == port) {
        ports.swap_remove(i);
        drop(ports);
        panic!("test hook: worker panic on port {port}");
    }
    drop(ports);
    if let Some(n) = after().filter(|&n| completed >= n) {
        if !FIRED.swap(true, Ordering::SeqCst) {
            panic!("test hook: {VAR}=after:{n} (worker panic after {completed} responses)");
        }
    }
}
