//! Keel's own types on the MCP wire: the Codex extensions clients of Keel's MCP server rely
//! on (the `codex` and `codex-reply` tool arguments and result, `codex/event` notifications,
//! approval elicitations with `codex_*` fields, the conversation streaming tools). The
//! messages the MCP specification defines are rmcp's model types, used by keel-mcp-server
//! and keel-core directly. camelCase on the wire except where Codex fixed other names
//! (kebab-case tool arguments, `codex_*` elicitation fields).

mod codex_tools;
mod conversation_tools;
mod elicitation;

pub use codex_tools::*;
pub use conversation_tools::*;
pub use elicitation::*;
