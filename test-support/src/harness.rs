//! Process harnesses: drive a JSON-lines server binary under test with a temporary home.

mod app_server_process;
mod binary;
mod builder;
mod config;
mod mcp_process;
mod output;
mod process;
mod process_table;

pub use app_server_process::AppServerProcess;
pub use binary::cargo_bin;
pub use builder::{DEFAULT_TIMEOUT, ProcessBuilder};
pub use config::{config_toml, write_config};
pub use mcp_process::{MCP_PROTOCOL_VERSION, McpProcess};
pub use process::JsonLinesProcess;
pub use process_table::{MarkedSleeper, processes_whose_cmdline_contains};
