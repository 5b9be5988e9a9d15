//! One module per subcommand: `Args` (clap) + `run`.

pub mod bisect;
pub mod check;
pub mod cmd;
pub mod completions;
pub mod demo;
pub mod history;
pub mod http;
pub mod man;
pub mod mem;
pub mod noise;
pub mod replay;
pub mod report;
pub mod results;
pub mod run;
pub mod serve;
pub mod site;
pub mod system;
pub mod watch;
pub mod worker;
