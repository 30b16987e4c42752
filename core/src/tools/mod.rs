//! The tools offered to the model and the router that runs a tool call and returns the output
//! item for history.

mod agent_jobs;
mod agent_spec;
mod agents;
mod mcp;
mod patch;
mod plan;
mod shell;
mod spec;
mod turn_diff;
mod unified_exec;
mod user_input;
mod view_image;

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use turn_diff::TurnDiffTracker;
pub(crate) use unified_exec::{close_all_sessions, close_sessions};

use crate::config::WireApi;
use crate::models::ResponseItem;
use crate::session::turn::{TurnIds, TurnStop};
use crate::session::{Session, TurnContext};

/// Tool definitions for a request: `exec_command`/`write_stdin`, or `shell` when unified exec
/// is off (a `shell` call is run either way). `apply_patch` is a freeform tool on the Responses API for
/// GPT-5-family models (which are trained on it) and a JSON function tool otherwise.
pub(crate) fn tool_definitions(context: &TurnContext) -> Vec<Value> {
    let settings = context.client.settings();
    let freeform = settings.wire_api == WireApi::Responses
        && crate::model_family::family(&settings.model).freeform_apply_patch;
    let mut tools = match (context.shell_tool, context.unified_exec) {
        (false, _) => Vec::new(),
        (true, true) => vec![spec::exec_command_tool(), spec::write_stdin_tool()],
        (true, false) => vec![spec::shell_tool()],
    };
    tools.push(if freeform {
        crate::apply_patch::apply_patch_freeform_tool()
    } else {
        crate::apply_patch::apply_patch_function_tool()
    });
    if context.update_plan_tool {
        tools.push(spec::update_plan_tool());
    }
    if context.request_user_input_tool {
        tools.push(spec::request_user_input_tool());
    }
    if context.view_image {
        tools.push(spec::view_image_tool());
    }
    if context.web_search && settings.wire_api == WireApi::Responses {
        tools.push(serde_json::json!({"type": "web_search"}));
    }
    let offered = &context.agent_tools;
    if offered.collab {
        tools.extend(agent_spec::collab_tools());
    }
    if offered.fanout {
        tools.push(agent_spec::spawn_agents_on_csv_tool());
    }
    if offered.report {
        tools.push(agent_spec::report_agent_job_result_tool());
    }
    tools
}

/// Runs the tool calls of one turn.
pub(crate) struct ToolRouter<'a> {
    pub session: &'a Arc<Session>,
    pub context: &'a TurnContext,
    pub ids: &'a TurnIds,
    pub cancel: &'a CancellationToken,
}

impl ToolRouter<'_> {
    /// Runs one call and returns its output item. Bad arguments and tool failures become
    /// output text for the model; only an interrupt or `abort` stops the turn.
    pub(crate) async fn dispatch(
        &self,
        call: &ResponseItem,
        diff: &mut TurnDiffTracker,
    ) -> Result<ResponseItem, TurnStop> {
        match call {
            ResponseItem::FunctionCall {
                name,
                arguments,
                call_id,
                ..
            } => {
                let offered = &self.context.agent_tools;
                let refused_tool = match name.as_str() {
                    "spawn_agent" | "send_input" | "wait_agent" | "wait" | "close_agent"
                    | "resume_agent" => !offered.collab,
                    "spawn_agents_on_csv" => !offered.fanout,
                    "report_agent_job_result" => !offered.report,
                    "shell" | "container.exec" | "exec_command" | "write_stdin" => {
                        !self.context.shell_tool
                    }
                    "update_plan" => !self.context.update_plan_tool,
                    "request_user_input" => !self.context.request_user_input_tool,
                    "view_image" => !self.context.view_image,
                    _ => false,
                };
                if refused_tool {
                    return Ok(ResponseItem::FunctionCallOutput {
                        call_id: call_id.clone(),
                        output: serde_json::json!({
                            "error": format!("`{name}` is not available to this agent")
                        })
                        .to_string(),
                    });
                }
                let raw = match name.as_str() {
                    "shell" | "container.exec" => self.shell(call_id, arguments, diff).await?,
                    "exec_command" => self.exec_command(call_id, arguments, diff).await?,
                    "write_stdin" => self.write_stdin(arguments).await?,
                    "apply_patch" => match serde_json::from_str::<PatchArgs>(arguments) {
                        Ok(args) => {
                            let cwd = self.context.cwd.clone();
                            self.apply_patch(call_id, &args.input, &cwd, diff).await?
                        }
                        Err(err) => format!("failed to parse apply_patch arguments: {err}"),
                    },
                    "update_plan" => self.update_plan(arguments).await,
                    "view_image" => self.view_image(arguments),
                    "request_user_input" => self.request_user_input(call_id, arguments).await?,
                    "spawn_agent" => self.spawn_agent(call_id, arguments).await,
                    "send_input" => self.send_input(call_id, arguments).await,
                    "wait_agent" | "wait" => self.wait_agent(call_id, arguments).await?,
                    "close_agent" => self.close_agent(call_id, arguments).await,
                    "resume_agent" => self.resume_agent(call_id, arguments).await,
                    "spawn_agents_on_csv" => self.spawn_agents_on_csv(arguments).await?,
                    "report_agent_job_result" => self.report_agent_job_result(arguments).await,
                    other => match self.session.mcp_tool(other) {
                        Some(entry) => self.mcp_tool(call_id, &entry, arguments).await?,
                        None => format!("unsupported tool `{other}`"),
                    },
                };
                Ok(ResponseItem::FunctionCallOutput {
                    call_id: call_id.clone(),
                    output: self.within_budget(raw),
                })
            }
            ResponseItem::CustomToolCall {
                name,
                input,
                call_id,
                ..
            } => {
                let output = if name == "apply_patch" {
                    let cwd = self.context.cwd.clone();
                    self.apply_patch(call_id, input, &cwd, diff).await?
                } else {
                    format!("unsupported custom tool `{name}`")
                };
                Ok(ResponseItem::CustomToolCallOutput {
                    call_id: call_id.clone(),
                    output: self.within_budget(output),
                })
            }
            other => Err(TurnStop::Failed(crate::error::CoreError::Stream(format!(
                "not a tool call: {other:?}"
            )))),
        }
    }
}

impl ToolRouter<'_> {
    /// A tool's output cut to `tool_output_token_limit` (head and tail kept), so one command
    /// printing gigabytes never inflates the history.
    fn within_budget(&self, output: String) -> String {
        let limit = self.context.tool_output_token_limit;
        if output.len() <= limit.saturating_mul(4) {
            return output;
        }
        crate::unified_exec::head_and_tail(&output, limit)
    }
}

#[derive(serde::Deserialize)]
struct PatchArgs {
    input: String,
}
