//! Process harnesses: drive a JSON-lines server binary under test with a temporary home.

mod binary;
mod builder;
mod config;
mod output;
mod process;

pub use binary::cargo_bin;
pub use builder::{DEFAULT_TIMEOUT, ProcessBuilder};
pub use config::{config_toml, write_config};
pub use process::JsonLinesProcess;
