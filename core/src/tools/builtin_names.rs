//! The names Keel's own tools take, so a call to one this agent was not offered is told so
//! and an embedder's tool may not take one.

/// The names of Keel's own tools (and the aliases models use for them): a call to one that
/// this agent was not offered is told so, and an embedder's tool may not take one.
const BUILTIN_NAMES: &[&str] = &[
    "shell",
    "container.exec",
    "exec_command",
    "write_stdin",
    "apply_patch",
    "update_plan",
    "view_image",
    "request_user_input",
    "spawn_agent",
    "send_input",
    "wait_agent",
    "wait",
    "close_agent",
    "resume_agent",
    "spawn_agents_on_csv",
    "report_agent_job_result",
    "web_search",
];

/// Whether `name` is one of Keel's own tools.
pub(crate) fn is_builtin_name(name: &str) -> bool {
    BUILTIN_NAMES.contains(&name)
}
