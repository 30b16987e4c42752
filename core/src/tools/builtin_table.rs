//! Keel's own tools in one table: each one's names, when a turn offers it and how it is made.
//! The per-request registry, the names an embedder's tool may not take and the aliases models
//! use all come from here, so a new built-in is a file of its own plus one row.

use std::sync::Arc;

use serde_json::Value;

use super::DynTool;
use super::builtin::TypedBuiltin;
use crate::client::ProviderCapabilities;
use crate::turn_context::TurnContext;

/// Whether a turn offers a built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Offered to the model, and its calls handled.
    Offered,
    /// Not offered, but a call to it is still handled (`shell` beside `exec_command`: models
    /// trained on it keep calling it).
    HandledOnly,
    /// Neither: a call to it is answered as a tool this agent was not offered.
    Absent,
}

/// What a row puts in the registry.
pub(super) enum Made {
    /// Tools Keel runs.
    Tools(Vec<Arc<dyn DynTool>>),
    /// A tool the provider runs itself: only its definition is sent.
    Hosted(Value),
}

/// A built-in's own switch: a key under `[features]` or `[tools]` (a boolean, or
/// `[tools.KEY] enabled = …`) that turns it off or on, listed by `keel features` and
/// `experimentalFeature/list`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolSwitch {
    /// The key.
    pub key: &'static str,
    /// What it does, in a few words.
    pub about: &'static str,
    /// Its state when no file sets it.
    pub default: bool,
}

/// One row: a built-in (or a group offered together) in the order the model sees them.
pub(super) struct Builtin {
    /// The names its tools take.
    pub names: &'static [&'static str],
    /// Its switch, if it has one: off, the built-in is absent whatever `offer` says.
    pub switch: Option<ToolSwitch>,
    /// When a turn offers it.
    pub offer: fn(&TurnContext) -> Offer,
    /// Its tools for this turn.
    pub make: fn(&TurnContext) -> Made,
}

fn offered_if(on: bool) -> Offer {
    if on { Offer::Offered } else { Offer::Absent }
}

fn tools(tools: Vec<Arc<dyn DynTool>>) -> Made {
    Made::Tools(tools)
}

fn one(tool: impl DynTool + 'static) -> Made {
    Made::Tools(vec![Arc::new(tool)])
}

/// Whether the turn's model takes the second generation of sub-agent tools.
fn multi_agent_v2(context: &TurnContext) -> bool {
    let settings = context.client.settings();
    crate::model_family::family(&settings.catalog, &settings.model).multi_agent_v2
}

fn capabilities(context: &TurnContext) -> ProviderCapabilities {
    context.client.capabilities()
}

/// Every built-in, in the order the model is offered them.
pub(super) const BUILTINS: &[Builtin] = &[
    Builtin {
        names: &["exec_command", "write_stdin"],
        switch: None,
        offer: |context| offered_if(context.shell_tool && context.unified_exec),
        make: |_| {
            tools(vec![
                Arc::new(TypedBuiltin(super::exec_command::ExecCommandTool)),
                Arc::new(TypedBuiltin(super::write_stdin::WriteStdinTool)),
            ])
        },
    },
    Builtin {
        names: &["shell"],
        switch: None,
        offer: |context| match (context.shell_tool, context.unified_exec) {
            (false, _) => Offer::Absent,
            (true, true) => Offer::HandledOnly,
            (true, false) => Offer::Offered,
        },
        make: |_| one(TypedBuiltin(super::shell::ShellTool)),
    },
    Builtin {
        names: &["apply_patch"],
        // Plan mode changes nothing: no patch tool at all (a call to it is answered as unknown).
        switch: None,
        offer: |context| offered_if(context.plan_mode.is_none()),
        make: |context| {
            let freeform = capabilities(context).freeform_tools
                && crate::model_family::family(
                    &context.client.settings().catalog,
                    &context.client.settings().model,
                )
                .freeform_apply_patch;
            one(super::patch::ApplyPatchTool { freeform })
        },
    },
    Builtin {
        names: &["update_plan"],
        switch: None,
        offer: |context| offered_if(context.update_plan_tool),
        make: |_| one(TypedBuiltin(super::plan::UpdatePlanTool)),
    },
    Builtin {
        names: &["request_user_input"],
        switch: None,
        offer: |context| offered_if(context.request_user_input_tool),
        make: |_| one(TypedBuiltin(super::user_input::RequestUserInputTool)),
    },
    Builtin {
        names: &["view_image"],
        switch: Some(ToolSwitch {
            key: "view_image",
            about: "offer view_image",
            default: true,
        }),
        offer: |_| Offer::Offered,
        make: |_| one(TypedBuiltin(super::view_image::ViewImageTool)),
    },
    Builtin {
        names: &[
            "list_mcp_resources",
            "list_mcp_resource_templates",
            "read_mcp_resource",
        ],
        switch: None,
        offer: |context| offered_if(cfg!(feature = "mcp") && context.mcp_configured),
        make: |_| mcp_resource_tools(),
    },
    Builtin {
        names: &["web_search"],
        switch: None,
        offer: |context| offered_if(context.web_search && capabilities(context).hosted_tools),
        make: |_| Made::Hosted(serde_json::json!({"type": "web_search"})),
    },
    Builtin {
        names: &[
            "spawn_agent",
            "send_input",
            "wait_agent",
            "close_agent",
            "resume_agent",
        ],
        switch: None,
        offer: |context| offered_if(context.agent_tools.collab && !multi_agent_v2(context)),
        make: |_| tools(super::agents::collab_tools()),
    },
    Builtin {
        names: &[
            "followup_task",
            "interrupt_agent",
            "list_agents",
            "send_message",
            "spawn_agent",
            "wait_agent",
        ],
        switch: None,
        offer: |context| offered_if(context.agent_tools.collab && multi_agent_v2(context)),
        make: |_| tools(super::agent_tasks::task_tools()),
    },
    Builtin {
        names: &["spawn_agents_on_csv"],
        switch: None,
        offer: |context| offered_if(cfg!(feature = "agent-jobs") && context.agent_tools.fanout),
        make: |_| agent_job_tool(AgentJobTool::SpawnAgentsOnCsv),
    },
    Builtin {
        names: &["get_goal", "create_goal", "update_goal"],
        // Job workers answer one row each; a goal is not theirs to keep.
        switch: None,
        offer: |context| offered_if(context.goal_tools && !context.agent_tools.report),
        make: |_| {
            tools(vec![
                Arc::new(TypedBuiltin(super::goals::GetGoalTool)),
                Arc::new(TypedBuiltin(super::goals::CreateGoalTool)),
                Arc::new(TypedBuiltin(super::goals::UpdateGoalTool)),
            ])
        },
    },
    Builtin {
        names: &["report_agent_job_result"],
        switch: None,
        offer: |context| offered_if(cfg!(feature = "agent-jobs") && context.agent_tools.report),
        make: |_| agent_job_tool(AgentJobTool::ReportAgentJobResult),
    },
];

/// Other names models use for built-ins: (the alias, the tool it reaches).
pub(super) const ALIASES: &[(&str, &str)] = &[("container.exec", "shell"), ("wait", "wait_agent")];

/// The MCP resource tools, which exist only in builds with the `mcp` feature.
#[cfg(feature = "mcp")]
fn mcp_resource_tools() -> Made {
    tools(vec![
        Arc::new(TypedBuiltin(super::mcp_resources::ListMcpResourcesTool)),
        Arc::new(TypedBuiltin(
            super::mcp_resources::ListMcpResourceTemplatesTool,
        )),
        Arc::new(TypedBuiltin(super::mcp_resources::ReadMcpResourceTool)),
    ])
}

#[cfg(not(feature = "mcp"))]
fn mcp_resource_tools() -> Made {
    Made::Tools(Vec::new())
}

/// The agent-job tools, which exist only in builds with the `agent-jobs` feature.
enum AgentJobTool {
    SpawnAgentsOnCsv,
    ReportAgentJobResult,
}

#[cfg(feature = "agent-jobs")]
fn agent_job_tool(tool: AgentJobTool) -> Made {
    match tool {
        AgentJobTool::SpawnAgentsOnCsv => {
            one(TypedBuiltin(super::agent_jobs::SpawnAgentsOnCsvTool))
        }
        AgentJobTool::ReportAgentJobResult => {
            one(TypedBuiltin(super::agent_jobs::ReportAgentJobResultTool))
        }
    }
}

#[cfg(not(feature = "agent-jobs"))]
fn agent_job_tool(_tool: AgentJobTool) -> Made {
    Made::Tools(Vec::new())
}

/// The switches of the built-ins that declare one, in table order.
pub(crate) fn tool_switches() -> impl Iterator<Item = ToolSwitch> {
    BUILTINS.iter().filter_map(|builtin| builtin.switch)
}

/// Whether `name` is one of Keel's own tools (or an alias models use for one): a call to one
/// this agent was not offered is told so, and an embedder's tool may not take one.
pub(crate) fn is_builtin_name(name: &str) -> bool {
    BUILTINS.iter().any(|builtin| builtin.names.contains(&name))
        || ALIASES.iter().any(|(alias, _)| *alias == name)
}
