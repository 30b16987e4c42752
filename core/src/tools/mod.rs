//! The tools offered to the model: the public extension point ([`Tool`], [`DynTool`],
//! [`ToolContext`]), the per-request registry with its one dispatch path, and the built-in
//! tools, each an implementation of [`DynTool`].
//!
//! The registry for a request is built from the turn's settings (which built-ins are offered
//! to this model and agent), the conversation's MCP tools and the embedder's tools, in that
//! order; a later tool with a name already taken is skipped with a warning.

#[cfg(feature = "agent-jobs")]
mod agent_job_runner;
#[cfg(feature = "agent-jobs")]
mod agent_jobs;
mod agent_spec;
mod agent_tasks;
mod agents;
mod builtin;
mod builtin_table;
mod command_runtime;
mod context;
mod dynamic;
mod exec_command;
mod goals;
mod host;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_resources;
mod observed;
mod patch;
mod patch_client;
mod plan;
mod registry;
mod shell;
mod sleep;
mod tool;
mod tool_command;
mod tool_error;
mod turn_diff;
mod unified_exec;
mod user_async;
mod user_input;
mod user_shell;
mod view_image;
mod write_stdin;

use std::sync::Arc;

use builtin_table::{Made, Offer};
pub(crate) use builtin_table::{is_builtin_name, tool_switches};
pub use context::ToolContext;
pub(crate) use dynamic::dynamic_tools;
pub(crate) use host::ToolHost;
pub(crate) use observed::ObservedTool;
pub use registry::ToolRegistrationError;
pub(crate) use registry::{ScriptTool, ToolRegistry, ToolRegistryBuilder, valid_tool_name};
pub(crate) use sleep::SleepTool;
pub(crate) use tool::function_spec;
pub use tool::{DynTool, Tool, ToolApproval, ToolInput};
pub use tool_command::CommandOutput;
pub use tool_error::ToolError;
pub(crate) use turn_diff::TurnDiffTracker;
pub(crate) use unified_exec::{close_all_sessions, close_sessions};
pub(crate) use user_async::{RequestUserInputAsync, SendMessageToUserAsync};
pub(crate) use user_shell::user_shell as run_user_shell;

use crate::mcp::McpToolCatalog;
use crate::turn_context::TurnContext;

/// The tools of one request: the built-ins this turn offers ([`builtin_table::BUILTINS`], in
/// its order; a call to a built-in offered as "handled only", such as `shell` beside
/// `exec_command`, is still run), then the MCP tools, then the embedder's. Unbuilt, so code
/// mode can offer them its own way; [`ToolRegistryBuilder::build`] offers them one by one.
pub(crate) fn registry_for(
    context: &TurnContext,
    mcp: Option<&McpToolCatalog>,
    embedder: &[Arc<dyn DynTool>],
) -> ToolRegistryBuilder {
    let mut builder = ToolRegistryBuilder::default();
    let add = |builder: &mut ToolRegistryBuilder, tool: Arc<dyn DynTool>, offered: bool| {
        let added = if offered {
            builder.register(tool)
        } else {
            builder.handle_only(tool)
        };
        if let Err(err) = added {
            tracing::warn!("tool skipped: {err}");
        }
    };
    for builtin in builtin_table::BUILTINS {
        if let Some(switch) = builtin.switch
            && !context.switch(switch.key, switch.default)
        {
            continue;
        }
        let offered = match (builtin.offer)(context) {
            Offer::Offered => true,
            Offer::HandledOnly => false,
            Offer::Absent => continue,
        };
        match (builtin.make)(context) {
            Made::Tools(tools) => {
                for tool in tools {
                    add(&mut builder, tool, offered);
                }
            }
            Made::Hosted(spec) => builder.hosted(spec),
        }
    }
    for (alias, target) in builtin_table::ALIASES {
        builder.alias(alias, target);
    }
    #[cfg(feature = "mcp")]
    for tool in mcp.map(mcp::mcp_tools).unwrap_or_default() {
        add(&mut builder, tool, true);
    }
    #[cfg(not(feature = "mcp"))]
    let _ = mcp;
    for tool in embedder {
        add(&mut builder, tool.clone(), true);
    }
    builder
}
