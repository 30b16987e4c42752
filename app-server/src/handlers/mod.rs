//! Request handlers, one module per resource, and the dispatch over the method table.

mod goals;
mod inject_items;
mod read_state;
mod revert;
mod review;
mod settings;
mod shell_command;
mod thread_list;
mod threads;
mod turns;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use keel_protocol::app_server::ClientRequest;
use serde::Serialize;

use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;
use crate::utilities::{self, CommandExecs};

/// Work to do after the response is written (so notifications follow their response).
pub(crate) type After = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A handler's result and what to do once it is sent.
pub(crate) struct Reply {
    /// Serialised once, straight from the typed result: a long thread's turns never become a
    /// `serde_json::Value` tree.
    pub result: Box<serde_json::value::RawValue>,
    pub after: Option<After>,
}

impl Reply {
    /// A plain result.
    pub(crate) fn now<T: Serialize>(value: &T) -> Result<Self> {
        Ok(Self {
            result: to_value(value)?,
            after: None,
        })
    }

    /// A result followed by a notification to the same connection.
    pub(crate) fn then_notify<T: Serialize>(
        value: &T,
        outgoing: &Arc<Outgoing>,
        notification: keel_protocol::app_server::ServerNotification,
    ) -> Result<Self> {
        let outgoing = outgoing.clone();
        Self::then(value, async move { outgoing.notify(notification).await })
    }

    /// A result followed by `after`.
    pub(crate) fn then<T: Serialize>(
        value: &T,
        after: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self> {
        Ok(Self {
            result: to_value(value)?,
            after: Some(Box::pin(after)),
        })
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Box<serde_json::value::RawValue>> {
    serde_json::value::to_raw_value(value)
        .map_err(|err| AppServerError::Internal(format!("cannot serialise the result: {err}")))
}

/// What a handler may use of its connection.
pub(crate) struct ConnectionContext {
    pub outgoing: Arc<Outgoing>,
    pub execs: CommandExecs,
    pub file_searches: utilities::FileSearches,
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
        ClientRequest::EnvironmentAdd(p) => {
            Reply::now(&utilities::environment_add(state, p).await?)
        }
        ClientRequest::EnvironmentStatus(p) => {
            Reply::now(&utilities::environment_status(state, p).await?)
        }
        ClientRequest::ThreadResume(p) => threads::resume(state, p, outgoing).await,
        ClientRequest::ThreadFork(p) => threads::fork(state, p, outgoing).await,
        ClientRequest::ThreadRead(p) => Reply::now(&threads::read(state, p).await?),
        ClientRequest::ThreadList(p) => Reply::now(&thread_list::list(state, p).await?),
        ClientRequest::ThreadSearch(p) => Reply::now(&thread_list::search(state, p).await?),
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
        ClientRequest::FsReadFile(p) => Reply::now(&utilities::fs_read_file(p).await?),
        ClientRequest::FsWriteFile(p) => {
            crate::ceiling::check_client_write(state, "fs/writeFile", &p.path)?;
            Reply::now(&utilities::fs_write_file(p).await?)
        }
        ClientRequest::FsCreateDirectory(p) => {
            crate::ceiling::check_client_write(state, "fs/createDirectory", &p.path)?;
            Reply::now(&utilities::fs_create_directory(p).await?)
        }
        ClientRequest::FsGetMetadata(p) => Reply::now(&utilities::fs_get_metadata(p).await?),
        ClientRequest::FsReadDirectory(p) => Reply::now(&utilities::fs_read_directory(p).await?),
        ClientRequest::FsRemove(p) => {
            crate::ceiling::check_client_write(state, "fs/remove", &p.path)?;
            Reply::now(&utilities::fs_remove(p).await?)
        }
        ClientRequest::FsCopy(p) => {
            crate::ceiling::check_client_write(state, "fs/copy", &p.destination_path)?;
            Reply::now(&utilities::fs_copy(p).await?)
        }
        ClientRequest::ModelList(p) => Reply::now(&utilities::model_list(state, p)?),
        ClientRequest::ConfigRead(p) => Reply::now(&utilities::config_read(state, p)?),
        ClientRequest::ThreadTurnsList(p) => Reply::now(&threads::turns_list(state, p).await?),
        ClientRequest::ThreadItemsList(p) => Reply::now(&threads::items_list(state, p).await?),
        ClientRequest::AccountRead(_) => Reply::now(&utilities::account_read(state)?),
        ClientRequest::AccountBedrockCheckGovCloudRequirements(_) => {
            Reply::now(&utilities::check_gov_cloud())
        }
        ClientRequest::ConfigRequirementsRead(_) => Reply::now(&utilities::config_requirements()),
        ClientRequest::HooksList(p) => Reply::now(&utilities::hooks_list(state, p)?),
        ClientRequest::SkillsList(p) => Reply::now(&utilities::skills_list(state, p)?),
        ClientRequest::SkillsConfigWrite(p) => {
            Reply::now(&utilities::skills_config_write(state, p)?)
        }
        ClientRequest::PluginInstalled(_) => Reply::now(&utilities::plugin_installed()),
        ClientRequest::PluginList(_) => Reply::now(&utilities::plugin_list()),
        ClientRequest::ExperimentalFeatureList(_) => {
            Reply::now(&utilities::experimental_features(state)?)
        }
        ClientRequest::CollaborationModeList(_) => Reply::now(&utilities::collaboration_modes()),
        ClientRequest::ConfigValueWrite(p) => Reply::now(&utilities::config_value_write(state, p)?),
        ClientRequest::ConfigBatchWrite(p) => Reply::now(&utilities::config_batch_write(state, p)?),
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
            Reply::now(&utilities::mcp_server_status_list(state, p).await?)
        }
    }
}
