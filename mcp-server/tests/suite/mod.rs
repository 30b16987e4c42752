mod approvals;
mod cancel;
mod codex_tool;
mod common;
mod conversations;
mod protocol;
mod python_sdk;
mod schema_fresh;
