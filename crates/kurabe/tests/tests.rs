//! Integration tests: they run the built `kurabe` binary against real
//! processes and sockets. One test binary, one module per subcommand.

mod cli;
mod fleet;
mod http;
mod mem;
mod outputs;
mod results;
mod run;
mod serve;
mod soak;
mod store;
mod system;
mod util;
mod watch;
