//! The scripted mock model server.

mod agent_job;
mod capture;
mod chat;
mod duration_ms;
mod fault;
mod handler;
mod invariants;
mod responses;
mod script;
mod server;
mod sse;
mod state;

pub use agent_job::{agent_job_responder, job_worker_ids};
pub use capture::{CapturedRequest, Endpoint};
pub use fault::Fault;
pub use invariants::Violation;
pub use script::{
    OutputItem, Script, Turn, Usage, apply_patch_call, assistant_message, compaction,
    custom_tool_call, exec_command_call, function_call, reasoning, shell_call, write_stdin_call,
};
pub use server::{DEFAULT_MODEL, MockModelBuilder, MockModelServer};
pub use state::Responder;
