//! Remote environments a client adds and picks (Codex's experimental `environment/*`
//! methods and the `environments` of `thread/start`): exec-servers a thread's commands run
//! and patches are written on.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `environment/add`: an exec-server by name, for threads started after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentAddParams {
    /// The name threads choose it by (not empty, not `local`).
    pub environment_id: String,
    /// The exec-server's `ws://` or `wss://` URL.
    pub exec_server_url: String,
    /// The bearer token the server wants; sent only over `wss://` or to a loopback host.
    #[serde(default)]
    pub auth_bearer_token: Option<String>,
    /// How long connecting may take, in milliseconds (default 10 s).
    #[serde(default)]
    pub connect_timeout_ms: Option<u64>,
    /// Codex's upgrade request id; accepted and not used.
    #[serde(default)]
    pub websocket_request_id: Option<String>,
    /// Codex's skills the environment must supply; accepted and not used.
    #[serde(default)]
    pub skills: Option<serde_json::Value>,
}

/// Result of `environment/add` (no fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvironmentAddResponse {}

/// Params of `environment/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentStatusParams {
    /// The environment asked about.
    pub environment_id: String,
}

/// Whether an environment can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EnvironmentStatusKind {
    /// Connected (or this machine).
    Ready,
    /// Known but not connected yet.
    Pending,
    /// The last connection failed or was lost.
    Disconnected,
    /// No environment has the id.
    Unknown,
}

/// Result of `environment/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentStatusResponse {
    /// Where it stands.
    pub status: EnvironmentStatusKind,
    /// Why, for `disconnected` and `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An environment a thread (or turn) is to use, with its working directory there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnvironmentParams {
    /// `local`, a name from the config's `[environments]`, or one `environment/add` added.
    pub environment_id: String,
    /// The absolute working directory there.
    pub cwd: PathBuf,
    /// The roots the thread works in there (default: `[cwd]`).
    #[serde(default)]
    pub runtime_workspace_roots: Option<Vec<PathBuf>>,
}

/// `thread/environment/connected` and `thread/environment/disconnected`: the connection to
/// the exec-server a thread's commands run on was made, or lost (the next command connects
/// again). Not sent for threads whose commands run on the server's own host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentConnectionNotification {
    /// The thread.
    pub thread_id: String,
    /// Its environment (`remote` for an unnamed `exec_server_url`).
    pub environment_id: String,
}
