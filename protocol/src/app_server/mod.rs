//! The app-server protocol (Codex app-server v2 shapes for every method Keel implements):
//! threads, turns and items over JSON-RPC without the `jsonrpc` member, camelCase members.
//!
//! The four tables below are the single source of method names: the server's dispatch, the
//! in-process client and the schema export all use them.

mod account;
mod account_login;
mod approvals;
mod collaboration_mode;
mod command_exec;
mod common;
mod config_write;
mod environments;
mod experimental_features;
mod external_agent_import;
mod feedback;
mod file_search;
mod fs;
mod hook_runs;
mod initialize;
mod item;
mod mcp;
mod mcp_oauth;
mod model;
mod model_provider;
mod notifications;
mod plugin_share;
mod plugins;
mod read_state;
mod review;
mod thread;
mod thread_attachments;
mod thread_list;
mod thread_metadata;
mod thread_queue;
mod thread_revert;
mod thread_sections;
mod thread_settings;
mod turn;
mod workspace_extras;
mod workspace_settings;

pub use account::*;
pub use account_login::*;
pub use approvals::*;
pub use collaboration_mode::*;
pub use command_exec::*;
pub use common::*;
pub use config_write::*;
pub use environments::*;
pub use experimental_features::*;
pub use external_agent_import::*;
pub use feedback::*;
pub use file_search::*;
pub use fs::*;
pub use hook_runs::*;
pub use initialize::*;
pub use item::*;
pub use mcp::*;
pub use mcp_oauth::*;
pub use model::*;
pub use model_provider::*;
pub use notifications::*;
pub use plugin_share::*;
pub use plugins::*;
pub use read_state::*;
pub use review::*;
pub use thread::*;
pub use thread_attachments::*;
pub use thread_list::*;
pub use thread_metadata::*;
pub use thread_queue::*;
pub use thread_revert::*;
pub use thread_sections::*;
pub use thread_settings::*;
pub use turn::*;
pub use workspace_extras::*;
pub use workspace_settings::*;

crate::request_table! {
    /// Every request a client may send to the app-server.
    pub enum ClientRequest in client_request {
        /// Opens the handshake.
        Initialize("initialize", InitializeParams) -> InitializeResponse,
        /// Starts a thread.
        ThreadStart("thread/start", ThreadStartParams) -> ThreadStartResponse,
        /// Adds an exec-server as a named environment (Codex 0.169, experimental).
        EnvironmentAdd("environment/add", EnvironmentAddParams) -> EnvironmentAddResponse,
        /// Says whether an environment can be used (Codex 0.169, experimental).
        EnvironmentStatus("environment/status", EnvironmentStatusParams) -> EnvironmentStatusResponse,
        /// Loads a recorded thread.
        ThreadResume("thread/resume", ThreadResumeParams) -> ThreadResumeResponse,
        /// Copies a thread under a new id.
        ThreadFork("thread/fork", ThreadForkParams) -> ThreadForkResponse,
        /// Reads a thread, optionally with its turns.
        ThreadRead("thread/read", ThreadReadParams) -> ThreadReadResponse,
        /// Lists recorded threads, newest first.
        ThreadList("thread/list", ThreadListParams) -> ThreadListResponse,
        /// Keeps a message for a thread, delivered as its next turn (Codex 0.171, experimental).
        ThreadQueueAdd("thread/queue/add", ThreadQueueAddParams) -> ThreadQueueSubmissionResponse,
        /// A thread's queued messages, in delivery order (Codex 0.171, experimental).
        ThreadQueueList("thread/queue/list", ThreadQueueListParams) -> ThreadQueueListResponse,
        /// Removes a queued message (Codex 0.171, experimental).
        ThreadQueueDelete("thread/queue/delete", ThreadQueueDeleteParams) -> ThreadQueueDeleteResponse,
        /// Puts a thread's queued messages in a new order (Codex 0.171, experimental).
        ThreadQueueReorder("thread/queue/reorder", ThreadQueueReorderParams) -> EmptyResponse,
        /// Changes a queued message's input (Codex 0.171, experimental).
        ThreadQueueUpdate("thread/queue/update", ThreadQueueUpdateParams) -> ThreadQueueSubmissionResponse,
        /// Runs a queued message now on a loaded idle thread (Codex 0.171, experimental).
        ThreadQueueStart("thread/queue/start", ThreadQueueStartParams) -> ThreadQueueStartResponse,
        /// Lists the threads loaded in this server.
        ThreadLoadedList("thread/loaded/list", ThreadLoadedListParams) -> ThreadLoadedListResponse,
        /// Archives a thread (moves it out of the list).
        ThreadArchive("thread/archive", ThreadIdParams) -> EmptyResponse,
        /// Brings an archived thread back.
        ThreadUnarchive("thread/unarchive", ThreadIdParams) -> ThreadResponse,
        /// Deletes a thread's record (live or archived) for good.
        ThreadDelete("thread/delete", ThreadIdParams) -> EmptyResponse,
        /// Names a thread.
        ThreadSetName("thread/name/set", ThreadSetNameParams) -> EmptyResponse,
        /// Stops this connection's notifications for a thread.
        ThreadUnsubscribe("thread/unsubscribe", ThreadIdParams) -> ThreadUnsubscribeResponse,
        /// Drops the latest turns of a thread.
        ThreadRollback("thread/rollback", ThreadRollbackParams) -> ThreadResponse,
        /// Compacts a thread's history now, as a turn of its own.
        ThreadCompactStart("thread/compact/start", ThreadIdParams) -> EmptyResponse,
        /// Starts a turn.
        TurnStart("turn/start", TurnStartParams) -> TurnStartResponse,
        /// Adds input to the running turn.
        TurnSteer("turn/steer", TurnSteerParams) -> TurnSteerResponse,
        /// Interrupts the running turn.
        TurnInterrupt("turn/interrupt", TurnInterruptParams) -> EmptyResponse,
        /// Runs a standalone command.
        CommandExec("command/exec", CommandExecParams) -> CommandExecResponse,
        /// Writes to a standalone command's stdin.
        CommandExecWrite("command/exec/write", CommandExecWriteParams) -> EmptyResponse,
        /// Resizes a standalone command's terminal.
        CommandExecResize("command/exec/resize", CommandExecResizeParams) -> EmptyResponse,
        /// Stops a standalone command.
        CommandExecTerminate("command/exec/terminate", CommandExecTerminateParams) -> EmptyResponse,
        /// Reads a file.
        FsReadFile("fs/readFile", FsPathParams) -> FsReadFileResponse,
        /// Writes a file.
        FsWriteFile("fs/writeFile", FsWriteFileParams) -> EmptyResponse,
        /// Creates a directory.
        FsCreateDirectory("fs/createDirectory", FsCreateDirectoryParams) -> EmptyResponse,
        /// Reads a path's metadata.
        FsGetMetadata("fs/getMetadata", FsPathParams) -> FsGetMetadataResponse,
        /// Lists a directory.
        FsReadDirectory("fs/readDirectory", FsPathParams) -> FsReadDirectoryResponse,
        /// Removes a file or directory.
        FsRemove("fs/remove", FsRemoveParams) -> EmptyResponse,
        /// Copies a file or directory.
        FsCopy("fs/copy", FsCopyParams) -> EmptyResponse,
        /// Watches a file or directory; changes follow as `fs/changed` (Codex 0.171).
        FsWatch("fs/watch", FsWatchParams) -> FsWatchResponse,
        /// Stops a watch (Codex 0.171).
        FsUnwatch("fs/unwatch", FsUnwatchParams) -> EmptyResponse,
        /// Lists models.
        ModelList("model/list", ModelListParams) -> ModelListResponse,
        /// The configured providers and the default one (Codex 0.171).
        ModelProviderList("modelProvider/list", NoParams) -> ModelProviderListResponse,
        /// Makes a configured provider the one new threads use (Codex 0.171).
        ModelProviderDefaultSet("modelProvider/default/set", ModelProviderDefaultSetParams) -> ConfigWriteResponse,
        /// Creates or edits a gateway provider in the user's `config.toml` (Codex 0.171).
        ModelProviderConfigWrite("modelProvider/config/write", ModelProviderConfigWriteParams) -> ModelProviderConfigWriteResponse,
        /// What the default provider offers beyond text and tools (Codex 0.171).
        ModelProviderCapabilitiesRead("modelProvider/capabilities/read", NoParams) -> ModelProviderCapabilitiesReadResponse,
        /// Reads the effective configuration.
        ConfigRead("config/read", ConfigReadParams) -> ConfigReadResponse,
        /// Lists the configured MCP servers with their state and tools.
        McpServerStatusList("mcpServerStatus/list", ListMcpServerStatusParams) -> ListMcpServerStatusResponse,
        /// Reads one resource of a configured MCP server (Codex 0.171).
        McpResourceRead("mcpServer/resource/read", McpResourceReadParams) -> McpResourceReadResponse,
        /// Calls a configured MCP server's tool for a loaded thread (Codex 0.171).
        McpServerToolCall("mcpServer/tool/call", McpServerToolCallParams) -> McpServerToolCallResponse,
        /// Rereads the configured MCP servers; loaded threads use them from their next model
        /// request on (Codex 0.171).
        McpServerReload("config/mcpServer/reload", NoParams) -> EmptyResponse,
        /// Starts an MCP server's OAuth login (Codex 0.171).
        McpServerOauthLogin("mcpServer/oauth/login", McpServerOauthLoginParams) -> McpServerOauthLoginResponse,
        /// The account the server uses (Codex 0.169; API-key authentication in Keel).
        AccountRead("account/read", GetAccountParams) -> GetAccountResponse,
        /// ChatGPT apps (none under API-key authentication; Codex 0.171).
        AppList("app/list", AppsListParams) -> AppsListResponse,
        /// Whether the Windows sandbox is set up (`notConfigured`: Keel has none; Codex 0.171).
        WindowsSandboxReadiness("windowsSandbox/readiness", NoParams) -> WindowsSandboxReadinessResponse,
        /// Whether the account is a Bedrock GovCloud one (never; Codex 0.169, experimental).
        AccountBedrockCheckGovCloudRequirements("account/bedrock/checkGovCloudRequirements", NoParams) -> CheckGovCloudRequirementsResponse,
        /// Administrator constraints on the configuration (none; Codex 0.169).
        ConfigRequirementsRead("configRequirements/read", NoParams) -> ConfigRequirementsReadResponse,
        /// The hooks a thread started in each directory would run, with their trust (Codex 0.169).
        HooksList("hooks/list", HooksListParams) -> HooksListResponse,
        /// The skills a thread started in each directory would be offered (Codex 0.169).
        SkillsList("skills/list", SkillsListParams) -> SkillsListResponse,
        /// Turns a skill on or off in the user's `config.toml` (Codex 0.169).
        SkillsConfigWrite("skills/config/write", SkillsConfigWriteParams) -> SkillsConfigWriteResponse,
        /// Installed plugins by marketplace (Codex 0.169).
        PluginInstalled("plugin/installed", PluginInstalledParams) -> PluginInstalledResponse,
        /// The added marketplaces (and those of the asked directories) with their plugins
        /// (Codex 0.169).
        PluginList("plugin/list", PluginListParams) -> PluginListResponse,
        /// One plugin of a marketplace, with its skills, hooks and MCP servers (Codex 0.171).
        PluginRead("plugin/read", PluginReadParams) -> PluginReadResponse,
        /// Installs a plugin from a marketplace (Codex 0.171).
        PluginInstall("plugin/install", PluginInstallParams) -> PluginInstallResponse,
        /// Uninstalls a plugin (Codex 0.171).
        PluginUninstall("plugin/uninstall", PluginUninstallParams) -> EmptyResponse,
        /// A remote plugin's skill (remote catalogues need a ChatGPT account; Codex 0.171).
        PluginSkillRead("plugin/skill/read", PluginSkillReadParams) -> PluginSkillReadResponse,
        /// Brings remote plugins in line with the account's (nothing to do without one;
        /// Codex 0.171).
        PluginReconcile("plugin/reconcile", PluginReconcileParams) -> PluginReconcileResponse,
        /// Adds a plugin marketplace (Codex 0.171).
        MarketplaceAdd("marketplace/add", MarketplaceAddParams) -> MarketplaceAddResponse,
        /// Removes a plugin marketplace (Codex 0.171).
        MarketplaceRemove("marketplace/remove", MarketplaceRemoveParams) -> MarketplaceRemoveResponse,
        /// Fetches git marketplaces again (Codex 0.171).
        MarketplaceUpgrade("marketplace/upgrade", MarketplaceUpgradeParams) -> MarketplaceUpgradeResponse,
        /// The feature switches and their state (Codex 0.169).
        ExperimentalFeatureList("experimentalFeature/list", ExperimentalFeatureListParams) -> ExperimentalFeatureListResponse,
        /// A thread's turns, a page at a time (Codex 0.169).
        ThreadTurnsList("thread/turns/list", ThreadTurnsListParams) -> ThreadTurnsListResponse,
        /// Collaboration modes (the default one; Codex 0.169, experimental).
        CollaborationModeList("collaborationMode/list", NoParams) -> CollaborationModeListResponse,
        /// Writes one key of the user's `config.toml` (Codex 0.169).
        ConfigValueWrite("config/value/write", ConfigValueWriteParams) -> ConfigWriteResponse,
        /// Writes several keys of the user's `config.toml` at once (Codex 0.169).
        ConfigBatchWrite("config/batchWrite", ConfigBatchWriteParams) -> ConfigWriteResponse,
        /// The permission profiles a client may offer (Codex 0.169).
        PermissionProfileList("permissionProfile/list", PermissionProfileListParams) -> PermissionProfileListResponse,
        /// Changes a thread's settings from its next turn on (Codex 0.169, experimental).
        ThreadSettingsUpdate("thread/settings/update", ThreadSettingsUpdateParams) -> EmptyResponse,
        /// Reviews a change as a turn of the thread (Codex 0.169).
        ReviewStart("review/start", ReviewStartParams) -> ReviewStartResponse,
        /// A thread's goal (Codex 0.169).
        ThreadGoalGet("thread/goal/get", ThreadGoalGetParams) -> ThreadGoalGetResponse,
        /// Creates or edits a thread's goal; an active goal keeps the thread working (Codex 0.169).
        ThreadGoalSet("thread/goal/set", ThreadGoalSetParams) -> ThreadGoalSetResponse,
        /// A thread's items, a page at a time (Codex 0.169).
        ThreadItemsList("thread/items/list", ThreadItemsListParams) -> ThreadItemsListResponse,
        /// Threads whose messages or name mention a text (Codex 0.169, experimental).
        ThreadSearch("thread/search", ThreadSearchParams) -> ThreadSearchResponse,
        /// Drops a turn and every later one, optionally restoring the files (Codex 0.169).
        ThreadRevert("thread/revert", ThreadRevertParams) -> ThreadRevertResponse,
        /// Adds items to a thread's model history, unseen by clients (Codex 0.169).
        ThreadInjectItems("thread/inject_items", ThreadInjectItemsParams) -> EmptyResponse,
        /// Runs the user's own command in a thread, under its sandbox (Codex 0.169).
        ThreadShellCommand("thread/shellCommand", ThreadShellCommandParams) -> EmptyResponse,
        /// Removes a thread's goal (Codex 0.169).
        ThreadGoalClear("thread/goal/clear", ThreadGoalClearParams) -> ThreadGoalClearResponse,
        /// The processes the model left running in a thread (Codex 0.169, experimental).
        ThreadBackgroundTerminalsList("thread/backgroundTerminals/list", ThreadBackgroundTerminalsListParams) -> ThreadBackgroundTerminalsListResponse,
        /// Files and directories whose names match what a person typed after `@` (Codex 0.169).
        FuzzyFileSearch("fuzzyFileSearch", FuzzyFileSearchParams) -> FuzzyFileSearchResponse,
        /// Walks roots once for a series of searches (Codex 0.169, experimental).
        FuzzyFileSearchSessionStart("fuzzyFileSearch/sessionStart", FuzzyFileSearchSessionStartParams) -> EmptyResponse,
        /// Searches a session's roots; results follow as notifications (Codex 0.169, experimental).
        FuzzyFileSearchSessionUpdate("fuzzyFileSearch/sessionUpdate", FuzzyFileSearchSessionUpdateParams) -> EmptyResponse,
        /// Ends a search session (Codex 0.169, experimental).
        FuzzyFileSearchSessionStop("fuzzyFileSearch/sessionStop", FuzzyFileSearchSessionStopParams) -> EmptyResponse,
        /// Forgets the stored API key (`keel login`'s); keys in the environment stay
        /// (Codex 0.169).
        AccountLogout("account/logout", NoParams) -> EmptyResponse,
        /// Other agents' configuration Keel can import: projects' `CLAUDE.md` (Codex 0.169).
        ExternalAgentConfigDetect("externalAgentConfig/detect", ExternalAgentConfigDetectParams) -> ExternalAgentConfigDetectResponse,
        /// Marks a thread read or unread (Codex 0.169, experimental).
        ThreadReadStateUpdate("thread/readState/update", ThreadReadStateUpdateParams) -> ThreadReadStateUpdateResponse,
        /// Kills the processes the model left running in a thread (Codex 0.169, experimental;
        /// the TUI's `/stop`).
        ThreadBackgroundTerminalsClean("thread/backgroundTerminals/clean", ThreadIdParams) -> EmptyResponse,
        /// Sets git facts of a thread, merged over the kept ones (Codex 0.171).
        ThreadMetadataUpdate("thread/metadata/update", ThreadMetadataUpdateParams) -> ThreadMetadataUpdateResponse,
        /// Gives a thread an attachment, or returns the one it has (Codex 0.171).
        ThreadAttachmentAdd("thread/attachment/add", ThreadAttachmentAddParams) -> ThreadAttachmentAddResponse,
        /// A thread's attachments, oldest first (Codex 0.171).
        ThreadAttachmentList("thread/attachment/list", ThreadAttachmentListParams) -> ThreadAttachmentListResponse,
        /// The threads owning an attachment (Codex 0.171).
        ThreadAttachmentOwnerList("thread/attachmentOwner/list", ThreadAttachmentOwnerListParams) -> ThreadAttachmentOwnerListResponse,
        /// Removes a thread's attachment (Codex 0.171).
        ThreadAttachmentRemove("thread/attachment/remove", ThreadAttachmentRemoveParams) -> EmptyResponse,
        /// Moves a thread into a section or out of every section (Codex 0.171).
        ThreadSectionMove("thread/section/move", ThreadSectionMoveParams) -> EmptyResponse,
        /// The sections, Pinned first (Codex 0.171).
        ThreadSectionList("threadSection/list", ThreadSectionListParams) -> ThreadSectionListResponse,
        /// Creates a section (Codex 0.171).
        ThreadSectionCreate("threadSection/create", ThreadSectionCreateParams) -> ThreadSectionResponse,
        /// Renames a section and sets its appearance (Codex 0.171).
        ThreadSectionUpdate("threadSection/update", ThreadSectionUpdateParams) -> ThreadSectionResponse,
        /// Deletes a section; its threads become unsectioned (Codex 0.171).
        ThreadSectionDelete("threadSection/delete", ThreadSectionDeleteParams) -> EmptyResponse,
        /// Records that a person approved an action an automatic reviewer denied (Codex 0.171;
        /// Keel has no reviewer, the model is told of the approval).
        ThreadApproveGuardianDeniedAction("thread/approveGuardianDeniedAction", ThreadApproveGuardianDeniedActionParams) -> EmptyResponse,
        /// Offers skills from more directories for the server's lifetime (Codex 0.171).
        SkillsExtraRootsSet("skills/extraRoots/set", SkillsExtraRootsSetParams) -> EmptyResponse,
        /// Turns features on or off for the server's lifetime (Codex 0.171).
        ExperimentalFeatureEnablementSet("experimentalFeature/enablement/set", ExperimentalFeatureEnablement) -> ExperimentalFeatureEnablement,
        /// Sets up the Windows sandbox (fails off Windows; Codex 0.171).
        WindowsSandboxSetupStart("windowsSandbox/setupStart", WindowsSandboxSetupStartParams) -> WindowsSandboxSetupStartResponse,
        /// ChatGPT apps by id (none without a ChatGPT account; Codex 0.171).
        AppRead("app/read", AppsReadParams) -> AppsReadResponse,
        /// Installed ChatGPT apps (none; Codex 0.171).
        AppInstalled("app/installed", AppsInstalledParams) -> AppsInstalledResponse,
        /// Shares a plugin through the remote catalogue (needs a ChatGPT account; Codex 0.171).
        PluginShareSave("plugin/share/save", PluginShareSaveParams) -> ChatGptAccountResult,
        /// Changes who a shared plugin reaches (needs a ChatGPT account; Codex 0.171).
        PluginShareUpdateTargets("plugin/share/updateTargets", PluginShareUpdateTargetsParams) -> ChatGptAccountResult,
        /// Lists shared plugins (needs a ChatGPT account; Codex 0.171).
        PluginShareList("plugin/share/list", PluginShareListParams) -> ChatGptAccountResult,
        /// Copies a shared plugin locally (needs a ChatGPT account; Codex 0.171).
        PluginShareCheckout("plugin/share/checkout", PluginShareIdParams) -> ChatGptAccountResult,
        /// Stops sharing a plugin (needs a ChatGPT account; Codex 0.171).
        PluginShareDelete("plugin/share/delete", PluginShareIdParams) -> ChatGptAccountResult,
        /// Whether a provider signs in through a gateway's OAuth (none does; Codex 0.171).
        AccountGatewayOAuthRead("account/gatewayOAuth/read", GatewayOAuthReadParams) -> GatewayOAuthReadResponse,
        /// Starts a gateway OAuth login (no provider uses one; Codex 0.171).
        AccountGatewayOAuthLogin("account/gatewayOAuth/login", GatewayOAuthLoginParams) -> ChatGptAccountResult,
        /// Cancels a gateway OAuth login (nothing to cancel; Codex 0.171).
        AccountGatewayOAuthCancel("account/gatewayOAuth/cancel", NoParams) -> EmptyResponse,
        /// Signs in: stores an API key as `keel login --with-api-key` does (Codex 0.171).
        AccountLoginStart("account/login/start", LoginAccountParams) -> LoginAccountResponse,
        /// Cancels a pending login (Codex 0.171).
        AccountLoginCancel("account/login/cancel", CancelLoginAccountParams) -> CancelLoginAccountResponse,
        /// Account security steps to show (none; Codex 0.171).
        AccountSecuritySetupRead("account/securitySetup/read", NoParams) -> GetAccountSecuritySetupResponse,
        /// The ChatGPT plan's rate limits (needs a ChatGPT account; Codex 0.171).
        AccountRateLimitsRead("account/rateLimits/read", GetAccountRateLimitsParams) -> ChatGptAccountResult,
        /// Uses a rate-limit reset credit (needs a ChatGPT account; Codex 0.171).
        AccountRateLimitResetCreditConsume("account/rateLimitResetCredit/consume", ConsumeAccountRateLimitResetCreditParams) -> ChatGptAccountResult,
        /// The ChatGPT plan's token usage (needs a ChatGPT account; Codex 0.171).
        AccountUsageRead("account/usage/read", GetAccountTokenUsageParams) -> ChatGptAccountResult,
        /// Messages from the ChatGPT workspace (needs a ChatGPT account; Codex 0.171).
        AccountWorkspaceMessagesRead("account/workspaceMessages/read", NoParams) -> ChatGptAccountResult,
        /// Asks the workspace owner for credits (needs a ChatGPT account; Codex 0.171).
        AccountSendAddCreditsNudgeEmail("account/sendAddCreditsNudgeEmail", SendAddCreditsNudgeEmailParams) -> ChatGptAccountResult,
        /// Writes a feedback report to a file (Codex 0.171).
        FeedbackSave("feedback/save", FeedbackSaveParams) -> FeedbackSaveResponse,
        /// Uploads a feedback report (Keel has no service to upload to; Codex 0.171).
        FeedbackUpload("feedback/upload", FeedbackUploadParams) -> ChatGptAccountResult,
        /// Imports another agent's setup (Codex 0.171).
        ExternalAgentConfigImport("externalAgentConfig/import", ExternalAgentConfigImportParams) -> ExternalAgentConfigImportResponse,
        /// Records an import a client made itself (Codex 0.171).
        ExternalAgentConfigImportRecordHistory("externalAgentConfig/import/recordHistory", ExternalAgentConfigImportHistoryRecordParams) -> ExternalAgentConfigImportResponse,
        /// Past imports, newest first (Codex 0.171).
        ExternalAgentConfigImportReadHistories("externalAgentConfig/import/readHistories", NoParams) -> ExternalAgentConfigImportHistoriesReadResponse,
    }
}

crate::notification_table! {
    /// Every notification a client may send to the app-server.
    pub enum ClientNotification in client_notification {
        /// Completes the handshake.
        Initialized("initialized", InitializedNotification),
    }
}

crate::notification_table! {
    /// Every notification the app-server sends.
    pub enum ServerNotification in server_notification {
        /// A turn failed or is being retried.
        Error("error", ErrorNotification),
        /// A thread was started, resumed or forked.
        ThreadStarted("thread/started", ThreadStartedNotification),
        /// A thread's status changed.
        ThreadStatusChanged("thread/status/changed", ThreadStatusChangedNotification),
        /// A thread was archived.
        ThreadArchived("thread/archived", ThreadIdNotification),
        /// A thread was unarchived.
        ThreadUnarchived("thread/unarchived", ThreadIdNotification),
        /// A thread was deleted.
        ThreadDeleted("thread/deleted", ThreadIdNotification),
        /// A thread's goal was set or changed, or its usage grew (Codex 0.169).
        ThreadGoalUpdated("thread/goal/updated", ThreadGoalUpdatedNotification),
        /// The loaded configuration has something to fix (Codex 0.169).
        ConfigWarning("configWarning", ConfigWarningNotification),
        /// A thread's latest turns were dropped by `thread/revert` (Codex 0.169).
        ThreadReverted("thread/reverted", ThreadIdNotification),
        /// A thread's goal was removed (Codex 0.169).
        ThreadGoalCleared("thread/goal/cleared", ThreadIdNotification),
        /// Matches for a file search session's query (Codex 0.169).
        FuzzyFileSearchSessionUpdated("fuzzyFileSearch/sessionUpdated", FuzzyFileSearchSessionUpdatedNotification),
        /// A file search session's query has its final results (Codex 0.169).
        FuzzyFileSearchSessionCompleted("fuzzyFileSearch/sessionCompleted", FuzzyFileSearchSessionCompletedNotification),
        /// Paths under a `fs/watch` changed (Codex 0.171).
        FsChanged("fs/changed", FsChangedNotification),
        /// A thread was read, marked unread, or has new results (Codex 0.169).
        ThreadReadStateChanged("thread/readState/changed", ThreadReadStateChangedNotification),
        /// A thread was unloaded.
        ThreadClosed("thread/closed", ThreadIdNotification),
        /// A thread's history was compacted.
        ThreadCompacted("thread/compacted", ContextCompactedNotification),
        /// A thread was renamed.
        ThreadNameUpdated("thread/name/updated", ThreadNameUpdatedNotification),
        /// A thread's queued messages changed (Codex 0.171, experimental).
        ThreadQueueChanged("thread/queue/changed", ThreadQueueChangedNotification),
        /// Token usage changed.
        ThreadTokenUsageUpdated("thread/tokenUsage/updated", ThreadTokenUsageUpdatedNotification),
        /// A turn started.
        TurnStarted("turn/started", TurnNotification),
        /// A turn ended (completed, interrupted or failed).
        TurnCompleted("turn/completed", TurnNotification),
        /// The turn's diff changed.
        TurnDiffUpdated("turn/diff/updated", TurnDiffUpdatedNotification),
        /// The turn's plan changed.
        TurnPlanUpdated("turn/plan/updated", TurnPlanUpdatedNotification),
        /// An item started.
        ItemStarted("item/started", ItemNotification),
        /// An item completed.
        ItemCompleted("item/completed", ItemCompletedNotification),
        /// Assistant text streamed.
        AgentMessageDelta("item/agentMessage/delta", ItemDeltaNotification),
        /// Command output streamed.
        CommandExecutionOutputDelta("item/commandExecution/outputDelta", ItemDeltaNotification),
        /// The model typed into a running command.
        TerminalInteraction("item/commandExecution/terminalInteraction", TerminalInteractionNotification),
        /// Reasoning summary text streamed.
        ReasoningSummaryTextDelta("item/reasoning/summaryTextDelta", ReasoningSummaryTextDeltaNotification),
        /// A new part of a reasoning summary started.
        ReasoningSummaryPartAdded("item/reasoning/summaryPartAdded", ReasoningSummaryPartAddedNotification),
        /// A server request was settled without the client.
        ServerRequestResolved("serverRequest/resolved", ServerRequestResolvedNotification),
        /// Output of a standalone command streamed.
        CommandExecOutputDelta("command/exec/outputDelta", CommandExecOutputDeltaNotification),
        /// The provider's rate limits changed.
        AccountRateLimitsUpdated("account/rateLimits/updated", AccountRateLimitsUpdatedNotification),
        /// Something the user should know that is not an error of a turn.
        Warning("warning", WarningNotification),
        /// The installed skills changed; clients list them again.
        SkillsChanged("skills/changed", SkillsChangedNotification),
        /// A hook started running.
        HookStarted("hook/started", HookRunNotification),
        /// A hook finished, with what it decided.
        HookCompleted("hook/completed", HookRunNotification),
        /// An MCP server reported progress on a running tool call.
        McpToolCallProgress("item/mcpToolCall/progress", McpToolCallProgressNotification),
        /// An MCP server's start-up state changed.
        McpServerStatusUpdated("mcpServer/startupStatus/updated", McpServerStatusUpdatedNotification),
        /// An MCP server's OAuth login ended (Codex 0.171).
        McpServerOauthLoginCompleted("mcpServer/oauthLogin/completed", McpServerOauthLoginCompletedNotification),
        /// A thread's settings for its next turns changed (Codex 0.169).
        ThreadSettingsUpdated("thread/settings/updated", ThreadSettingsUpdatedNotification),
        /// A thread's remote environment connected (Codex 0.169).
        ThreadEnvironmentConnected("thread/environment/connected", EnvironmentConnectionNotification),
        /// A thread gained or lost an attachment (Codex 0.171).
        ThreadAttachmentUpdated("thread/attachment/updated", ThreadAttachmentUpdatedNotification),
        /// A thread moved into a section or out of every section (Codex 0.171).
        ThreadSectionChanged("thread/section/changed", ThreadSectionChangedNotification),
        /// A login ended (Codex 0.171).
        AccountLoginCompleted("account/login/completed", AccountLoginCompletedNotification),
        /// How the server authenticates changed (Codex 0.171).
        AccountUpdated("account/updated", AccountUpdatedNotification),
        /// The Windows sandbox set-up ended (Codex 0.171).
        WindowsSandboxSetupCompleted("windowsSandbox/setupCompleted", WindowsSandboxSetupCompletedNotification),
        /// One item of an import is done (Codex 0.171).
        ExternalAgentConfigImportProgress("externalAgentConfig/import/progress", ExternalAgentConfigImportNotification),
        /// An import is done (Codex 0.171).
        ExternalAgentConfigImportCompleted("externalAgentConfig/import/completed", ExternalAgentConfigImportNotification),
        /// A thread's remote environment's connection was lost (Codex 0.169).
        ThreadEnvironmentDisconnected("thread/environment/disconnected", EnvironmentConnectionNotification),
    }
}

crate::request_table! {
    /// Every request the app-server sends to its client.
    pub enum ServerRequest in server_request {
        /// Asks to run a command.
        CommandExecutionRequestApproval("item/commandExecution/requestApproval", CommandExecutionRequestApprovalParams) -> CommandExecutionRequestApprovalResponse,
        /// Asks to apply a patch.
        FileChangeRequestApproval("item/fileChange/requestApproval", FileChangeRequestApprovalParams) -> FileChangeRequestApprovalResponse,
        /// Asks the user the model's questions.
        ToolRequestUserInput("item/tool/requestUserInput", ToolRequestUserInputParams) -> ToolRequestUserInputResponse,
        /// Asks the user what an MCP server wants to know.
        McpServerElicitation("mcpServer/elicitation/request", McpServerElicitationRequestParams) -> McpServerElicitationRequestResponse,
        /// Asks the client to run one of the tools it defined.
        DynamicToolCall("item/tool/call", DynamicToolCallParams) -> DynamicToolCallResponse,
    }
}
