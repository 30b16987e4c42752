//! The Agent Client Protocol (ACP) v1, as `keel acp` speaks it to editors (Zed, JetBrains
//! IDEs, Neovim, Emacs): JSON-RPC 2.0, one message per line, camelCase members. Keel's own
//! types for the methods it implements, checked against the protocol's published schema by a
//! drift test (`acp/tests`), so the workspace does not take on another crate's `serde_json`
//! features.

mod client_methods;
mod config;
mod content;
mod history;
mod initialize;
mod permission;
mod session;
mod update;
pub mod v2;

pub use client_methods::*;
pub use config::*;
pub use content::*;
pub use history::*;
pub use initialize::*;
pub use permission::*;
pub use session::*;
pub use update::*;

/// The protocol version Keel speaks.
pub const ACP_PROTOCOL_VERSION: u16 = 1;

crate::request_table! {
    /// Every request an editor may send to the agent.
    pub enum AcpClientRequest in acp_client_request {
        /// Opens the connection and states capabilities.
        Initialize("initialize", InitializeRequest) -> InitializeResponse,
        /// Chooses one of the authentication methods the agent offered.
        Authenticate("authenticate", AuthenticateRequest) -> EmptyObject,
        /// Forgets the stored sign-in.
        Logout("logout", EmptyObject) -> EmptyObject,
        /// Starts a session in a working directory.
        SessionNew("session/new", NewSessionRequest) -> NewSessionResponse,
        /// Runs one prompt turn; answered when the turn ends.
        SessionPrompt("session/prompt", PromptRequest) -> PromptResponse,
        /// Switches the session's mode.
        SessionSetMode("session/set_mode", SetSessionModeRequest) -> EmptyObject,
        /// Opens a recorded session and replays its conversation.
        SessionLoad("session/load", LoadSessionRequest) -> LoadSessionResponse,
        /// Opens a recorded session without replaying it.
        SessionResume("session/resume", LoadSessionRequest) -> LoadSessionResponse,
        /// Lists recorded sessions.
        SessionList("session/list", ListSessionsRequest) -> ListSessionsResponse,
        /// Ends a session in this connection (it stays recorded).
        SessionClose("session/close", SessionIdRequest) -> EmptyObject,
        /// Deletes a recorded session for good.
        SessionDelete("session/delete", SessionIdRequest) -> EmptyObject,
        /// Changes a picker (mode, model, reasoning effort).
        SessionSetConfigOption("session/set_config_option", SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse,
        /// Starts a session with a copy of another's conversation (unstable ACP).
        SessionFork("session/fork", ForkSessionRequest) -> NewSessionResponse,
        /// Adds input to the running turn (the `_session/steering` extension).
        SessionSteering("_session/steering", SteeringRequest) -> SteeringResponse,
    }
}

crate::notification_table! {
    /// Every notification an editor may send to the agent.
    pub enum AcpClientNotification in acp_client_notification {
        /// Stops the session's running turn.
        SessionCancel("session/cancel", CancelNotification),
        /// Withdraws a request.
        CancelRequest("$/cancel_request", CancelRequestNotification),
    }
}

crate::request_table! {
    /// Every request the agent sends to the editor.
    pub enum AcpAgentRequest in acp_agent_request {
        /// Asks the person whether a tool call may run.
        SessionRequestPermission("session/request_permission", RequestPermissionRequest) -> RequestPermissionResponse,
    }
}

crate::notification_table! {
    /// Every notification the agent sends to the editor.
    pub enum AcpAgentNotification in acp_agent_notification {
        /// Something happened in a session: streamed text, a tool call, the plan.
        SessionUpdate("session/update", SessionNotification),
    }
}

/// A result with no members (`{}`).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct EmptyObject {}
