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
mod agents;
mod builtin;
mod builtin_names;
mod command_runtime;
mod context;
mod dynamic;
mod goals;
mod host;
#[cfg(feature = "mcp")]
mod mcp;
mod observed;
mod patch;
mod plan;
mod registry;
mod shell;
mod spec;
mod tool;
mod tool_command;
mod tool_error;
mod turn_diff;
mod unified_exec;
mod user_input;
mod user_shell;
mod view_image;

use std::sync::Arc;

pub(crate) use builtin::builtin_tool;
pub(crate) use builtin_names::is_builtin_name;
pub use context::ToolContext;
pub(crate) use dynamic::dynamic_tools;
pub(crate) use host::ToolHost;
pub(crate) use observed::ObservedTool;
pub use registry::ToolRegistrationError;
pub(crate) use registry::{ToolRegistry, ToolRegistryBuilder, valid_tool_name};
pub(crate) use tool::function_spec;
pub use tool::{DynTool, Tool, ToolApproval, ToolInput};
pub use tool_command::CommandOutput;
pub use tool_error::ToolError;
pub(crate) use turn_diff::TurnDiffTracker;
pub(crate) use unified_exec::{close_all_sessions, close_sessions};
pub(crate) use user_shell::user_shell as run_user_shell;

use crate::config::WireApi;
use crate::mcp::McpToolCatalog;
use crate::turn_context::TurnContext;

/// The tools of one request: the built-ins this turn offers (`exec_command`/`write_stdin`,
/// or `shell` when unified exec is off; a `shell` call is run either way), then the MCP tools,
/// then the embedder's.
pub(crate) fn registry_for(
    context: &TurnContext,
    mcp: Option<&McpToolCatalog>,
    embedder: &[Arc<dyn DynTool>],
) -> ToolRegistry {
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
    let settings = context.client.settings();
    if context.shell_tool {
        if context.unified_exec {
            add(&mut builder, Arc::new(unified_exec::ExecCommandTool), true);
            add(&mut builder, Arc::new(unified_exec::WriteStdinTool), true);
            add(&mut builder, Arc::new(shell::ShellTool), false);
        } else {
            add(&mut builder, Arc::new(shell::ShellTool), true);
        }
        builder.alias("container.exec", "shell");
    }
    let freeform = settings.wire_api == WireApi::Responses
        && crate::model_family::family(&settings.model).freeform_apply_patch;
    // Plan mode changes nothing: no patch tool at all (a call to it is answered as unknown).
    if context.plan_mode.is_none() {
        add(
            &mut builder,
            Arc::new(patch::ApplyPatchTool { freeform }),
            true,
        );
    }
    if context.update_plan_tool {
        add(&mut builder, Arc::new(plan::UpdatePlanTool), true);
    }
    if context.request_user_input_tool {
        add(
            &mut builder,
            Arc::new(user_input::RequestUserInputTool),
            true,
        );
    }
    if context.view_image {
        add(&mut builder, Arc::new(view_image::ViewImageTool), true);
    }
    if context.web_search && settings.wire_api == WireApi::Responses {
        builder.hosted(serde_json::json!({"type": "web_search"}));
    }
    let offered = &context.agent_tools;
    if offered.collab {
        for tool in agents::collab_tools() {
            add(&mut builder, tool, true);
        }
        builder.alias("wait", "wait_agent");
    }
    #[cfg(feature = "agent-jobs")]
    if offered.fanout {
        add(
            &mut builder,
            Arc::new(agent_jobs::SpawnAgentsOnCsvTool),
            true,
        );
    }
    // Job workers answer one row each; a goal is not theirs to keep.
    if context.goal_tools && !offered.report {
        add(&mut builder, Arc::new(goals::GetGoalTool), true);
        add(&mut builder, Arc::new(goals::CreateGoalTool), true);
        add(&mut builder, Arc::new(goals::UpdateGoalTool), true);
    }
    #[cfg(feature = "agent-jobs")]
    if offered.report {
        add(
            &mut builder,
            Arc::new(agent_jobs::ReportAgentJobResultTool),
            true,
        );
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
    builder.build()
}
