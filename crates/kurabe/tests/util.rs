//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::Command;

/// A `Command` for the built `kurabe` binary.
pub fn kurabe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kurabe"))
}
