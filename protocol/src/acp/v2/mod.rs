//! The draft Agent Client Protocol v2, as `keel acp --protocol-v2` speaks it to an editor that
//! asks for version 2 at `initialize`: the members that differ from v1 (`info` and
//! `capabilities` at `initialize`, `auth/login`, prompts answered with a message id and ended
//! by `state_update`, message ids on chunks, tool calls as upserts, diffs as changes and a
//! patch, plans with ids, permission requests with a title and a subject). What v2 keeps from
//! v1 (content blocks, prompts, session lists, cancels) uses the v1 types. The draft may
//! change; these are checked against the schema the official SDK ships (`acp/tests`).

mod initialize;
mod session;
mod update;

pub use initialize::*;
pub use session::*;
pub use update::*;

use super::{
    CancelNotification, CancelRequestNotification, EmptyObject, ListSessionsRequest,
    ListSessionsResponse, PromptRequest, SessionIdRequest,
};

/// The protocol version of the draft.
pub const ACP_V2_PROTOCOL_VERSION: u16 = 2;

crate::request_table! {
    /// What an editor asks of the agent in v2.
    pub enum AcpV2ClientRequest in acp_v2_client_request {
        /// Version and capabilities.
        Initialize("initialize", InitializeRequest) -> InitializeResponse,
        /// Log in with an advertised method.
        Login("auth/login", LoginAuthRequest) -> EmptyObject,
        /// Forget the stored credentials.
        Logout("auth/logout", EmptyObject) -> EmptyObject,
        /// Start a session.
        SessionNew("session/new", NewSessionRequest) -> NewSessionResponse,
        /// Add a prompt to the conversation.
        SessionPrompt("session/prompt", PromptRequest) -> PromptResponse,
        /// Open a recorded session, with or without a replay.
        SessionResume("session/resume", ResumeSessionRequest) -> ResumeSessionResponse,
        /// Recorded sessions.
        SessionList("session/list", ListSessionsRequest) -> ListSessionsResponse,
        /// Stop running a session here.
        SessionClose("session/close", SessionIdRequest) -> EmptyObject,
        /// Remove a recorded session.
        SessionDelete("session/delete", SessionIdRequest) -> EmptyObject,
        /// Change a picker.
        SessionSetConfigOption("session/set_config_option", SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse,
    }
}

crate::notification_table! {
    /// What an editor tells the agent in v2.
    pub enum AcpV2ClientNotification in acp_v2_client_notification {
        /// Stop the session's turn.
        SessionCancel("session/cancel", CancelNotification),
        /// Withdraw a request.
        CancelRequest("$/cancel_request", CancelRequestNotification),
    }
}

crate::request_table! {
    /// What the agent asks of the editor in v2.
    pub enum AcpV2AgentRequest in acp_v2_agent_request {
        /// Ask whether a tool call may run.
        SessionRequestPermission("session/request_permission", RequestPermissionRequest) -> crate::acp::RequestPermissionResponse,
    }
}

crate::notification_table! {
    /// What the agent tells the editor in v2.
    pub enum AcpV2AgentNotification in acp_v2_agent_notification {
        /// Something changed in a session.
        SessionUpdate("session/update", SessionNotification),
    }
}
