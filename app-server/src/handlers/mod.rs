//! Request handlers, one module per resource: threads and turns, and the methods that involve
//! no thread (`fs/*`, `command/exec*`, `model/list`, `config/*`, `mcpServerStatus/list`, the
//! start-up questions of Codex clients); and the dispatch over the method table.

mod added_environments;
mod asked_dirs;
mod client_setup;
mod command_exec;
mod config_write;
mod environments;
mod file_search;
mod fs;
mod goals;
mod hooks;
mod info;
mod inject_items;
mod loaded;
mod mcp_status;
mod model_list;
mod model_providers;
mod paths;
mod read_state;
mod reply;
mod revert;
mod review;
mod settings;
mod settings_change;
mod shell_command;
mod skills;
mod thread_list;
mod thread_list_filter;
mod thread_queue;
mod threads;
mod turns;

use std::sync::Arc;

use keel_protocol::app_server::ClientRequest;

use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;
pub(crate) use added_environments::AddedEnvironments;
pub(crate) use client_setup::*;
pub(crate) use command_exec::{CommandExecs, RemoteExecServer};
pub(crate) use config_write::{config_batch_write, config_value_write};
pub(crate) use environments::{add as environment_add, status as environment_status};
pub(crate) use file_search::FileSearches;
pub(crate) use fs::*;
pub(crate) use hooks::hooks_list;
pub(crate) use info::config_read;
pub(crate) use mcp_status::mcp_server_status_list;
pub(crate) use model_list::model_list;
pub(crate) use reply::Reply;
pub(crate) use skills::{skills_config_write, skills_list};

/// What a handler may use of its connection.
pub(crate) struct ConnectionContext {
    pub outgoing: Arc<Outgoing>,
    pub execs: CommandExecs,
    pub file_searches: FileSearches,
}

/// Runs one request (other than `initialize`).
pub(crate) async fn dispatch(
    state: &AppState,
    connection: &ConnectionContext,
    request: ClientRequest,
) -> Result<Reply> {
    let outgoing = &connection.outgoing;
    match request {
        ClientRequest::Initialize(_) => Err(AppServerError::AlreadyInitialized),
        ClientRequest::ThreadStart(p) => threads::start(state, p, outgoing).await,
        ClientRequest::EnvironmentAdd(p) => Reply::now(&environment_add(state, p).await?),
        ClientRequest::EnvironmentStatus(p) => Reply::now(&environment_status(state, p).await?),
        ClientRequest::ThreadResume(p) => threads::resume(state, p, outgoing).await,
        ClientRequest::ThreadFork(p) => threads::fork(state, p, outgoing).await,
        ClientRequest::ThreadRead(p) => Reply::now(&threads::read(state, p).await?),
        ClientRequest::ThreadList(p) => Reply::now(&thread_list::list(state, p).await?),
        ClientRequest::ThreadSearch(p) => Reply::now(&thread_list::search(state, p).await?),
        ClientRequest::ThreadQueueAdd(p) => Reply::now(&thread_queue::add(state, p).await?),
        ClientRequest::ThreadQueueList(p) => Reply::now(&thread_queue::list(state, p).await?),
        ClientRequest::ThreadQueueDelete(p) => Reply::now(&thread_queue::delete(state, p).await?),
        ClientRequest::ThreadQueueReorder(p) => Reply::now(&thread_queue::reorder(state, p).await?),
        ClientRequest::ThreadQueueUpdate(p) => Reply::now(&thread_queue::update(state, p).await?),
        ClientRequest::ThreadQueueStart(p) => Reply::now(&thread_queue::start(state, p).await?),
        ClientRequest::ThreadLoadedList(p) => Reply::now(&threads::loaded_list(state, p).await?),
        ClientRequest::ThreadArchive(p) => threads::archive(state, p, outgoing).await,
        ClientRequest::ThreadUnarchive(p) => threads::unarchive(state, p, outgoing).await,
        ClientRequest::ThreadDelete(p) => threads::delete(state, p, outgoing).await,
        ClientRequest::ThreadSetName(p) => threads::set_name(state, p, outgoing).await,
        ClientRequest::ThreadUnsubscribe(p) => threads::unsubscribe(state, p, outgoing).await,
        ClientRequest::ThreadRollback(p) => Reply::now(&threads::rollback(state, p).await?),
        ClientRequest::ThreadCompactStart(p) => turns::compact(state, p).await,
        ClientRequest::TurnStart(p) => turns::start(state, p).await,
        ClientRequest::TurnSteer(p) => Reply::now(&turns::steer(state, p).await?),
        ClientRequest::TurnInterrupt(p) => Reply::now(&turns::interrupt(state, p).await?),
        ClientRequest::CommandExec(p) => {
            // The server's own settings decide the default sandbox (read per request, so an
            // edit of `config.toml` applies to the next command).
            let server = state.resolve_config(&Default::default())?;
            Reply::now(&connection.execs.exec(p, &server, outgoing).await?)
        }
        ClientRequest::CommandExecWrite(p) => Reply::now(&connection.execs.write(p).await?),
        ClientRequest::CommandExecResize(p) => Reply::now(&connection.execs.resize(p).await?),
        ClientRequest::CommandExecTerminate(p) => Reply::now(&connection.execs.terminate(p).await?),
        ClientRequest::FsReadFile(p) => Reply::now(&fs_read_file(p).await?),
        ClientRequest::FsWriteFile(p) => {
            state.check_client_write("fs/writeFile", &p.path)?;
            Reply::now(&fs_write_file(p).await?)
        }
        ClientRequest::FsCreateDirectory(p) => {
            state.check_client_write("fs/createDirectory", &p.path)?;
            Reply::now(&fs_create_directory(p).await?)
        }
        ClientRequest::FsGetMetadata(p) => Reply::now(&fs_get_metadata(p).await?),
        ClientRequest::FsReadDirectory(p) => Reply::now(&fs_read_directory(p).await?),
        ClientRequest::FsRemove(p) => {
            state.check_client_write("fs/remove", &p.path)?;
            Reply::now(&fs_remove(p).await?)
        }
        ClientRequest::FsCopy(p) => {
            state.check_client_write("fs/copy", &p.destination_path)?;
            Reply::now(&fs_copy(p).await?)
        }
        ClientRequest::ModelList(p) => Reply::now(&model_list(state, p)?),
        ClientRequest::ModelProviderList(p) => Reply::now(&model_providers::list(state, p)?),
        ClientRequest::ModelProviderDefaultSet(p) => {
            Reply::now(&model_providers::default_set(state, p)?)
        }
        ClientRequest::ModelProviderConfigWrite(p) => {
            Reply::now(&model_providers::config_write(state, p)?)
        }
        ClientRequest::ModelProviderCapabilitiesRead(p) => {
            Reply::now(&model_providers::capabilities_read(state, p)?)
        }
        ClientRequest::ConfigRead(p) => Reply::now(&config_read(state, p)?),
        ClientRequest::ThreadTurnsList(p) => Reply::now(&threads::turns_list(state, p).await?),
        ClientRequest::ThreadItemsList(p) => Reply::now(&threads::items_list(state, p).await?),
        ClientRequest::AccountRead(_) => Reply::now(&account_read(state)?),
        ClientRequest::AccountBedrockCheckGovCloudRequirements(_) => Reply::now(&check_gov_cloud()),
        ClientRequest::ConfigRequirementsRead(_) => Reply::now(&config_requirements()),
        ClientRequest::HooksList(p) => Reply::now(&hooks_list(state, p)?),
        ClientRequest::SkillsList(p) => Reply::now(&skills_list(state, p)?),
        ClientRequest::SkillsConfigWrite(p) => Reply::now(&skills_config_write(state, p)?),
        ClientRequest::PluginInstalled(_) => Reply::now(&plugin_installed()),
        ClientRequest::PluginList(_) => Reply::now(&plugin_list()),
        ClientRequest::ExperimentalFeatureList(_) => Reply::now(&experimental_features(state)?),
        ClientRequest::CollaborationModeList(_) => Reply::now(&collaboration_modes()),
        ClientRequest::ConfigValueWrite(p) => Reply::now(&config_value_write(state, p)?),
        ClientRequest::ConfigBatchWrite(p) => Reply::now(&config_batch_write(state, p)?),
        ClientRequest::PermissionProfileList(p) => Reply::now(&settings::permission_profiles(p)?),
        ClientRequest::ThreadSettingsUpdate(p) => Reply::now(&settings::update(state, p).await?),
        ClientRequest::ReviewStart(p) => review::start(state, p).await,
        ClientRequest::ThreadGoalSet(p) => goals::set(state, p).await,
        ClientRequest::ThreadShellCommand(p) => shell_command::run(state, p).await,
        ClientRequest::ThreadInjectItems(p) => inject_items::inject(state, p).await,
        ClientRequest::ThreadRevert(p) => revert::revert(state, p, outgoing).await,
        ClientRequest::ThreadGoalClear(p) => goals::clear(state, p).await,
        ClientRequest::ThreadGoalGet(p) => Reply::now(&threads::goal_get(state, p).await?),
        ClientRequest::ThreadReadStateUpdate(p) => Reply::now(&read_state::update(state, p).await?),
        ClientRequest::AccountLogout(_) => Reply::now(&keel_protocol::app_server::EmptyResponse {}),
        ClientRequest::ExternalAgentConfigDetect(_) => {
            Reply::now(&keel_protocol::app_server::ExternalAgentConfigDetectResponse::default())
        }
        ClientRequest::FuzzyFileSearch(p) => Reply::now(&connection.file_searches.search(p).await?),
        ClientRequest::FuzzyFileSearchSessionStart(p) => {
            Reply::now(&connection.file_searches.start_session(p)?)
        }
        ClientRequest::FuzzyFileSearchSessionUpdate(p) => {
            connection.file_searches.update_session(p, outgoing)
        }
        ClientRequest::FuzzyFileSearchSessionStop(p) => {
            Reply::now(&connection.file_searches.stop_session(p))
        }
        ClientRequest::ThreadBackgroundTerminalsClean(p) => {
            Reply::now(&settings::clean_background_terminals(state, p).await?)
        }
        ClientRequest::ThreadBackgroundTerminalsList(p) => {
            Reply::now(&settings::background_terminals(state, p).await?)
        }
        ClientRequest::McpServerStatusList(p) => {
            Reply::now(&mcp_server_status_list(state, p).await?)
        }
        ClientRequest::McpResourceRead(p) => {
            Reply::now(&mcp_status::mcp_resource_read(state, p).await?)
        }
        ClientRequest::McpServerToolCall(p) => {
            Reply::now(&mcp_status::mcp_server_tool_call(state, p).await?)
        }
    }
}
