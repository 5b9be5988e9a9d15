//! One module per subcommand: `Args` (clap) + `run`.

pub mod bench;
pub mod demo;
pub mod dryrun;
pub mod fleet;
pub mod http;
pub mod mem;
pub mod report;
pub mod results;
pub mod run;
pub mod save;
pub mod serve;
pub mod system;
pub mod watch;
pub mod worker;
