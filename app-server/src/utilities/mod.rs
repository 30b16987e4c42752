//! Utility methods that do not involve threads: `fs/*`, `command/exec*`, `model/list`,
//! `config/read`, `config/*Write`, `mcpServerStatus/list`, and the start-up questions of Codex 0.169 clients
//! (`account/read`, `configRequirements/read`, `hooks/list`, `skills/list`, ...).

mod added_environments;
mod asked_dirs;
mod client_setup;
mod command_exec;
mod config_write;
mod environments;
mod file_search;
mod fs;
mod hooks;
mod info;
mod mcp_status;
mod skills;

pub(crate) use added_environments::AddedEnvironments;
pub(crate) use client_setup::*;
pub(crate) use command_exec::{CommandExecs, RemoteExecServer};
pub(crate) use config_write::{config_batch_write, config_value_write};
pub(crate) use environments::{
    add as environment_add, resolve_thread_config, status as environment_status,
};
pub(crate) use file_search::FileSearches;
pub(crate) use fs::*;
pub(crate) use hooks::hooks_list;
pub(crate) use info::{config_read, model_list};
pub(crate) use mcp_status::mcp_server_status_list;
pub(crate) use skills::{skills_config_write, skills_list};

use std::path::Path;

use crate::error::{AppServerError, Result};

/// Rejects relative paths, naming the parameter and the path.
pub(crate) fn require_absolute(method: &str, name: &str, path: &Path) -> Result<()> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(AppServerError::InvalidParams {
            method: method.to_string(),
            message: format!(
                "`{name}` must be an absolute path, got `{}`",
                path.display()
            ),
        })
    }
}
