//! `keel app-server` over stdio and websocket, against the mock model.

mod approvals;
mod client_ceiling;
mod codex_0169;
mod command_exec_sandbox;
pub(crate) mod common;
mod compaction;
mod dynamic_tools;
mod environments;
mod file_search;
mod goals;
mod items_list;
mod plan_mode;
mod protocol;
mod read_state;
mod revert;
pub(crate) mod review;
mod search;
mod settings;
mod shell_command;
mod side_conversations;
mod thread_index;
mod thread_lineage;
mod threads;
mod turns;
mod unified_exec;
mod utilities;
mod websocket;
