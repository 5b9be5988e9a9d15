//! Integration tests: they run the built `kurabe` binary against real
//! processes and sockets. One test binary, one module per subcommand.

mod ab_audit;
mod abflags;
mod anyserver;
mod checks;
mod cli;
mod cmd;
mod find_rate;
mod fleet;
mod harden;
mod history;
mod http;
mod http2;
mod import;
mod install;
mod lone_binary;
mod mem;
mod names;
mod old_store;
mod outcomes;
mod outputs;
mod parity;
mod prometheus;
mod replay;
mod results;
mod revisions;
mod run;
mod serve;
mod soak;
mod store;
mod system;
mod system_precision;
mod util;
mod warmup;
mod watch;
mod worker_panic;
