//! The engine core and each protocol's framing: how requests go out and
//! answers come back on many non-blocking connections.
//!
//! Owns the per-thread machinery: `core` (the state every protocol's worker
//! shares: slots, pacing, failure accounting, stop), `connections` (what
//! the turn loop asks of each protocol's worker, the steps every protocol
//! takes alike written once), `free` (the open
//! model's free list of connections, for every protocol), `turns` (the turn loop
//! that drives a worker), `threads` (one thread per worker, panics turned
//! into errors), `slot` (one request in flight), `sys` and `uring` (the
//! unsafe syscalls and the io_uring ring), `tls` and `setup` (rustls and the
//! connection options), `protocol` (which protocol a run speaks), and the
//! protocols themselves: `h1` (HTTP/1.1: its worker and response framer),
//! `h2` (HTTP/2) and `h3` (the interim HTTP/3 load). `panic_hook` is a
//! debug-build aid for tests.
//!
//! Must not decide when a request may go (`super::schedule` does), what it
//! is (`crate::source`), or what is made of
//! the numbers (`super::measure`); nothing here prints.

pub(crate) mod connections;
pub(crate) mod core;
pub(crate) mod free;
pub(crate) mod h1;
pub(crate) mod h2;
pub mod h3;
#[cfg(debug_assertions)]
pub(crate) mod panic_hook;
pub(crate) mod protocol;
pub(crate) mod setup;
pub(crate) mod slot;
pub(crate) mod sys;
pub(crate) mod threads;
pub(crate) mod tls;
pub(crate) mod turns;
pub(crate) mod uring;
