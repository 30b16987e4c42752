//! keel-core: the agent engine that every Keel server wraps and other programs embed.
//!
//! Data flows in one direction per conversation:
//! 1. [`ConversationManager::new_conversation`] resolves a [`Config`] and spawns the
//!    conversation's submission loop; the caller gets a [`Conversation`] handle.
//! 2. [`Conversation::submit`] queues an [`Op`](keel_protocol::Op). User input starts a turn
//!    (or joins the running one); approvals and interrupts act on the running turn at once.
//! 3. A turn builds the prompt (instructions, `AGENTS.md`, environment context, history,
//!    tools), streams the model through [`ModelClient`], runs the tools it calls under the
//!    approval policy, and samples again until the model answers without tool calls.
//! 4. Every step is an [`Event`](keel_protocol::Event) read with
//!    [`Conversation::next_event`]; every history item is appended to the conversation's
//!    rollout file so it can be resumed or forked.
//!
//! ```no_run
//! use keel_core::{Config, ConfigOverrides, ConversationManager};
//! use keel_protocol::{EventMsg, InputItem, Op};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let home = keel_core::find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
//! let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
//! let manager = ConversationManager::new();
//! let new = manager.new_conversation(config).await?;
//! new.conversation
//!     .submit(Op::UserInput { items: vec![InputItem::text("list the files")] })
//!     .await?;
//! loop {
//!     match new.conversation.next_event().await?.msg {
//!         EventMsg::TaskComplete(done) => break println!("{:?}", done.last_agent_message),
//!         EventMsg::Error(err) => break eprintln!("{}", err.message),
//!         _ => {}
//!     }
//! }
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "agent-jobs")]
pub mod agent_jobs;
#[cfg(not(feature = "agent-jobs"))]
#[path = "agent_jobs_disabled.rs"]
mod agent_jobs;
mod agents;
/// Codex's patch format: the `keel-apply-patch` crate, re-exported for embedders.
pub use keel_apply_patch as apply_patch;
mod approvals;
pub mod checkpoints;
mod client;
mod client_backends;
mod code_mode;
pub mod config;
mod config_error;
mod context_window;
mod conversation;
mod conversation_manager;
mod environment_link;
mod error;
mod error_advice;
mod feature_list;
#[cfg(feature = "file-search")]
pub mod file_search;
pub mod goals;
pub mod hooks;
mod images;
mod installation_id;
mod manager_builder;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(not(feature = "mcp"))]
#[path = "mcp_disabled.rs"]
mod mcp;
pub mod plugin_files;
pub mod plugins;
#[cfg(feature = "mcp")]
pub use mcp::{
    McpError, McpLogin, McpLoginError, McpServerState, choose_client_registration,
    mcp_login_client_credentials, mcp_logout,
};
mod mcp_slot;
pub mod model_catalog;
mod model_family;
mod models;
mod permissions_message;
#[cfg(feature = "postgres")]
mod postgres;
mod processes;
mod prompt_context;
mod reasoning_settings;
mod repo_root;
pub mod review;
mod rollout;
/// The command sandbox: the `keel-sandbox` crate, re-exported for embedders.
pub use keel_sandbox as sandbox;
mod session;
mod shell_snapshot;
pub mod skills;
mod telemetry;
#[cfg(feature = "thread-index")]
mod thread_organizer;
#[cfg(feature = "thread-index")]
mod thread_queue;
mod tls;
mod tools;
mod turn_context;
mod turn_setup;
mod unified_exec;

pub use client::{
    ApiKeyFn, ChatApiProvider, ClientSettings, ModelClient, ModelProvider, Prompt,
    ProviderCapabilities, RequestMetadata, ResponseEvent, ResponseStream, ResponsesApiProvider,
};
pub use client_backends::{
    ClientBackendError, ClientBackends, ClientCommand, ClientFiles, ClientTerminal,
    ClientTerminals, TerminalExit, TerminalOutput,
};
pub use config::{
    Config, ConfigEnv, ConfigError, ConfigOverrides, ConfigWarning, ModelProviderInfo,
    ShellEnvironmentPolicy, WireApi, find_keel_home, parse_cli_override,
};
pub use context_window::model_ids_match;
pub use conversation::{Conversation, NewConversation};
pub use conversation_manager::{ConversationManager, EnvLookup, SpawnedConversation};
pub use environment_link::EnvironmentLink;
pub use error::{CoreError, Result};
pub use feature_list::features;
pub use images::{ImageError, check_image_file};
pub use manager_builder::ConversationManagerBuilder;
pub use models::{CallOutput, ContentItem, ReasoningSummary, ResponseItem, injectable_item};
pub use processes::{ProcessError, exec_server_bearer_token, exec_server_bearer_token_from};
pub use prompt_context::BASE_INSTRUCTIONS_VERSION;
pub use rollout::{
    ARCHIVED_SESSIONS_DIR, ConversationSummary, ConversationsPage, FileRolloutStore,
    FileThreadCatalog, InMemoryRolloutStore, InvalidCursor, ListCursor, ListSort, LoadedRollout,
    NoteSwap, RolloutItem, RolloutRecorder, RolloutSink, RolloutStore, SESSIONS_DIR, SearchHit,
    SearchPage, SessionMeta, ThreadCatalog, ThreadCatalogError, ThreadChange, ThreadChangeKind,
    ThreadFilter, ThreadNotes, ThreadSearch, TranscriptEntry, archive_rollout, delete_rollout,
    find_rollout_path, first_message_match, list_conversations, list_conversations_in,
    load_rollout, read_transcript, summarise, unarchive_rollout,
};
#[cfg(feature = "postgres")]
pub use rollout::{DEFAULT_THREAD_LEASE, PostgresThreadStore, ThreadLease};
#[cfg(feature = "thread-index")]
pub use rollout::{ThreadIndex, ThreadIndexError};
#[cfg(feature = "thread-index")]
pub use thread_organizer::{
    AttachmentPage, PINNED_SECTION_ID, SectionMembership, THREAD_ORGANIZER_FILE, ThreadOrganizer,
    ThreadOrganizerError,
};
#[cfg(feature = "thread-index")]
pub use thread_queue::{QueuedMessage, THREAD_QUEUE_FILE, ThreadQueue, ThreadQueueError};
pub use tls::install_tls_provider;
pub use tools::{
    CommandOutput, DynTool, Tool, ToolApproval, ToolContext, ToolError, ToolInput,
    ToolRegistrationError,
};
pub use unified_exec::BackgroundTerminal;
