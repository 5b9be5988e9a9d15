//! Ctrl-C and SIGTERM as a flag.
//!
//! Commands that run for a while poll [`interrupted`] (or hand the flag to a
//! library) so they can stop children, keep what finished and print a partial
//! report instead of dying mid-write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Install SIGINT/SIGTERM handlers (once) and return the shared flag they set.
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    if let Some(flag) = FLAG.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone())
            .map_err(|e| anyhow::anyhow!("cannot install signal handler: {e}"))?;
    }
    Ok(FLAG.get_or_init(|| flag).clone())
}

/// True once Ctrl-C or SIGTERM arrived (false if [`install`] was never called).
#[allow(dead_code)]
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}
