mod acp;
mod acp_auth;
mod acp_bad_input;
mod acp_editor;
mod acp_editor_backends;
mod acp_session_extras;
mod acp_subagents;
mod acp_v2;
mod agents;
mod app_server;
mod chat_streams;
mod clock_sleep;
mod code_mode;
mod codex_sdk;
mod codex_tui;
mod codex_tui_agents;
mod codex_tui_commands;
mod codex_tui_models;
mod codex_tui_plugins;
mod compaction;
mod context_window_discovery;
mod doc_commands;
mod doctor;
mod exec;
mod exec_flags;
mod exec_jsonl;
mod exec_remote;
mod exec_slow_reader;
mod faults;
mod first_run;
mod full_disk;
mod fuzz;
mod hook_context_spill;
mod hooks;
mod images;
mod listener_auth;
mod listener_faults;
mod listener_netns;
mod local_server_streams;
mod login;
mod mcp_client;
mod mcp_server;
mod mcp_server_conformance;
mod oss;
mod otel;
mod otel_links;
mod otel_tls;
mod output_schema;
mod plugins;
mod prompt;
mod quickstart;
mod rate_limits;
mod reasoning;
mod remote_compaction;
mod request_options;
mod responses_parts;
mod revert_cli;
mod review_cli;
mod sandbox;
mod sandbox_boundary;
pub(crate) mod session_commands;
mod skills;
mod teardown;
mod thread_store_postgres;
mod tool_specs;
mod unified_exec;
mod user_input;

/// The rollout files under `dir` (a Keel home's `sessions`), at any depth; none when it does
/// not exist.
pub(crate) fn rollout_files(dir: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(err) => return Err(err.into()),
    };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            found.extend(rollout_files(&path)?);
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            found.push(path);
        }
    }
    Ok(found)
}
