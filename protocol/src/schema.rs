//! JSON Schema export of every wire type, so non-Rust clients can generate bindings.
//!
//! `keel-schema --out docs/schema` writes one file per type plus a bundle; a test keeps the
//! committed copy in sync with the types.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The bundle's file name: every type's schema under `$defs`.
pub const SCHEMA_BUNDLE_FILE: &str = "keel_protocol.schemas.json";

/// Lists every exported wire type once; both the per-type files and the bundle come from it.
macro_rules! wire_types {
    ($($ty:ty),* $(,)?) => {
        /// Every exported wire type: its name and its standalone JSON Schema.
        pub fn wire_schemas() -> Vec<(String, Value)> {
            let settings = SchemaSettings::draft2020_12();
            vec![$(
                (
                    <$ty as schemars::JsonSchema>::schema_name().into_owned(),
                    settings.clone().into_generator().into_root_schema_for::<$ty>().to_value(),
                ),
            )*]
        }

        /// One schema document holding every wire type under `$defs`.
        pub fn schema_bundle() -> Value {
            let mut generator = SchemaSettings::draft2020_12().into_generator();
            $( generator.subschema_for::<$ty>(); )*
            let definitions: serde_json::Map<String, Value> = generator
                .take_definitions(true)
                .into_iter()
                .collect();
            serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "KeelProtocol",
                "$defs": definitions,
            })
        }
    };
}

use crate::app_server;
use crate::exec_server::*;
use crate::mcp::*;
use crate::*;

wire_types!(
    // Identifiers.
    ConversationId,
    SubmissionId,
    TurnId,
    CallId,
    ExecSessionId,
    Base64Bytes,
    // Engine queue.
    Submission,
    Op,
    Event,
    EventMsg,
    InputItem,
    ReviewDecision,
    FileChange,
    AskForApproval,
    SandboxMode,
    SandboxPolicy,
    ReasoningEffort,
    UpdatePlanArgs,
    TokenUsageInfo,
    ParsedCommand,
    // JSON-RPC envelope.
    RequestId,
    JsonRpcMessage,
    JsonRpcRequest,
    JsonRpcNotification,
    JsonRpcResponse,
    JsonRpcError,
    // Exec-server.
    ExecServerRequest,
    ExecServerClientNotification,
    ExecServerNotification,
    InitializeParams,
    InitializeResponse,
    InitializedParams,
    ExecParams,
    ExecResponse,
    WriteParams,
    WriteResponse,
    TerminateParams,
    TerminateResponse,
    ResizeParams,
    ResizeResponse,
    CloseStdinParams,
    CloseStdinResponse,
    WaitParams,
    WaitResponse,
    SnapshotParams,
    SnapshotResponse,
    OutputDeltaNotification,
    ExitedNotification,
    // MCP server: Keel's own types (the MCP messages themselves are rmcp's).
    ElicitRequestParams,
    ElicitResult,
    CodexToolCallParam,
    CodexToolCallReplyParam,
    CodexToolCallResult,
    CodexEventNotificationParams,
    ConversationCreateArgs,
    ConversationCreateResult,
    ConversationSendMessageArgs,
    ConversationSendMessageResult,
    ConversationStreamArgs,
    ConversationStatusArgs,
    ConversationStatusResult,
    InitialStateNotificationParams,
    // App-server.
    app_server::ClientRequest,
    app_server::ClientNotification,
    app_server::ServerNotification,
    app_server::ServerRequest,
);

/// The schema directory's files by name, rendered as they are written (pretty JSON, newline).
pub fn render_schema_files() -> serde_json::Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for (name, schema) in wire_schemas() {
        files.insert(format!("{name}.json"), pretty(&schema)?);
    }
    files.insert(SCHEMA_BUNDLE_FILE.to_string(), pretty(&schema_bundle())?);
    Ok(files)
}

fn pretty(value: &Value) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// Writes the schema files into `dir`, removing stale `.json` files so the directory mirrors
/// the types exactly.
pub fn write_schema_dir(dir: &Path) -> std::io::Result<()> {
    let files = render_schema_files().map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let stale = path.extension().is_some_and(|ext| ext == "json")
            && path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| !files.contains_key(name));
        if stale {
            std::fs::remove_file(&path)?;
        }
    }
    for (name, contents) in files {
        std::fs::write(dir.join(name), contents)?;
    }
    Ok(())
}
