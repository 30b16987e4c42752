//! Keel's draft ACP v2 wire types (`keel_protocol::acp::v2`) against the v2 schema the official
//! SDK ships: no member the schema does not define, every member it requires in what Keel
//! sends, nothing required of editors that the schema lets them omit, and only tags and values
//! the schema knows. Facts vendored in `tests/fixtures/acp_v2_shapes.json` (names and required
//! lists only).

use keel_protocol::acp::v2::{
    AgentCapabilities, AuthMethod, AvailableCommand, CommandInput, ContentChunk, DiffChange,
    DiffPatch, InitializeRequest, InitializeResponse, LoginAuthRequest, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PermissionSubject, PlanContent, PromptCapabilities,
    PromptResponse, ReplayFrom, RequestPermissionRequest, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionConfigOption, SessionConfigSelectOption,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StateUpdate, ToolCallContent, ToolCallUpdate,
};
use keel_protocol::acp::{Implementation, PermissionOptionKind, ToolCallStatus, ToolKind};
use serde_json::Value;

use super::schema_drift::{Union, Writer, check, check_unions, names, root_schema, shape, values};

fn reference() -> anyhow::Result<Value> {
    Ok(serde_json::from_str(include_str!(
        "../fixtures/acp_v2_shapes.json"
    ))?)
}

#[test]
fn v2_structs_match_the_draft_schema() -> anyhow::Result<()> {
    let reference = reference()?;
    let defs = &reference["defs"];
    let mut problems = Vec::new();
    use Writer::{Editor, Keel};
    let structs: Vec<(&str, Value, Writer)> = vec![
        (
            "InitializeRequest",
            root_schema::<InitializeRequest>(),
            Editor,
        ),
        (
            "InitializeResponse",
            root_schema::<InitializeResponse>(),
            Keel,
        ),
        ("Implementation", root_schema::<Implementation>(), Keel),
        (
            "AgentCapabilities",
            root_schema::<AgentCapabilities>(),
            Keel,
        ),
        (
            "SessionCapabilities",
            root_schema::<SessionCapabilities>(),
            Keel,
        ),
        (
            "PromptCapabilities",
            root_schema::<PromptCapabilities>(),
            Keel,
        ),
        ("McpCapabilities", root_schema::<McpCapabilities>(), Keel),
        (
            "LoginAuthRequest",
            root_schema::<LoginAuthRequest>(),
            Editor,
        ),
        (
            "NewSessionRequest",
            root_schema::<NewSessionRequest>(),
            Editor,
        ),
        (
            "NewSessionResponse",
            root_schema::<NewSessionResponse>(),
            Keel,
        ),
        (
            "ResumeSessionRequest",
            root_schema::<ResumeSessionRequest>(),
            Editor,
        ),
        (
            "ResumeSessionResponse",
            root_schema::<ResumeSessionResponse>(),
            Keel,
        ),
        ("PromptResponse", root_schema::<PromptResponse>(), Keel),
        (
            "SetSessionConfigOptionRequest",
            root_schema::<SetSessionConfigOptionRequest>(),
            Editor,
        ),
        (
            "SetSessionConfigOptionResponse",
            root_schema::<SetSessionConfigOptionResponse>(),
            Keel,
        ),
        (
            "UpdateSessionNotification",
            root_schema::<SessionNotification>(),
            Keel,
        ),
        ("ContentChunk", root_schema::<ContentChunk>(), Keel),
        ("ToolCallUpdate", root_schema::<ToolCallUpdate>(), Keel),
        ("DiffPatch", root_schema::<DiffPatch>(), Keel),
        (
            "SessionConfigSelectOption",
            root_schema::<SessionConfigSelectOption>(),
            Keel,
        ),
        (
            "RequestPermissionRequest",
            root_schema::<RequestPermissionRequest>(),
            Keel,
        ),
    ];
    for (name, schema, writer) in structs {
        let ours = shape(&schema, &schema["$defs"]);
        check(name, ours, &defs[name], writer, &mut problems);
    }
    // A picker is the option's members plus its select's.
    let mut select = defs["SessionConfigOption"].clone();
    for key in ["properties", "required"] {
        let mut merged = names(&select[key]);
        merged.extend(names(&defs["SessionConfigSelect"][key]));
        merged.insert("type".to_string());
        select[key] = merged.into_iter().collect();
    }
    let schema = root_schema::<SessionConfigOption>();
    check(
        "SessionConfigOption",
        shape(&schema, &schema["$defs"]),
        &select,
        Keel,
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}

#[test]
fn v2_tagged_unions_and_values_match_the_draft_schema() -> anyhow::Result<()> {
    let reference = reference()?;
    let defs = &reference["defs"];
    let mut problems = Vec::new();
    let unions: [Union; 10] = [
        (
            "SessionUpdate",
            root_schema::<SessionUpdate>(),
            "sessionUpdate",
            &[
                ("agent_message_chunk", "ContentChunk"),
                ("tool_call_update", "ToolCallUpdate"),
                ("plan_update", "PlanUpdate"),
                ("available_commands_update", "AvailableCommandsUpdate"),
                ("config_option_update", "ConfigOptionUpdate"),
                ("session_info_update", "SessionInfoUpdate"),
                ("usage_update", "UsageUpdate"),
            ],
            Writer::Keel,
        ),
        (
            "StateUpdate",
            root_schema::<StateUpdate>(),
            "state",
            &[
                ("running", "RunningStateUpdate"),
                ("idle", "IdleStateUpdate"),
            ],
            Writer::Keel,
        ),
        (
            "ToolCallContent",
            root_schema::<ToolCallContent>(),
            "type",
            &[("content", "Content"), ("diff", "Diff")],
            Writer::Keel,
        ),
        (
            "DiffChange",
            root_schema::<DiffChange>(),
            "operation",
            &[
                ("add", "DiffPathChange"),
                ("delete", "DiffPathChange"),
                ("modify", "DiffPathChange"),
            ],
            Writer::Keel,
        ),
        (
            "PlanUpdateContent",
            root_schema::<PlanContent>(),
            "type",
            &[("items", "PlanItems")],
            Writer::Keel,
        ),
        (
            "AvailableCommand",
            root_schema::<AvailableCommand>(),
            "type",
            &[("command", "Command")],
            Writer::Keel,
        ),
        (
            "AvailableCommandInput",
            root_schema::<CommandInput>(),
            "type",
            &[("text", "TextCommandInput")],
            Writer::Keel,
        ),
        (
            "RequestPermissionSubject",
            root_schema::<PermissionSubject>(),
            "type",
            &[("tool_call", "ToolCallPermissionSubject")],
            Writer::Keel,
        ),
        (
            "AuthMethod",
            root_schema::<AuthMethod>(),
            "type",
            &[("agent", "AuthMethodAgent")],
            Writer::Keel,
        ),
        (
            "ReplayFrom",
            root_schema::<ReplayFrom>(),
            "type",
            &[],
            Writer::Editor,
        ),
    ];
    check_unions(unions, &[defs], &mut problems)?;
    for (name, schema) in [
        ("ToolKind", root_schema::<ToolKind>()),
        ("ToolCallStatus", root_schema::<ToolCallStatus>()),
        (
            "PermissionOptionKind",
            root_schema::<PermissionOptionKind>(),
        ),
    ] {
        let theirs = names(&defs[name]["values"]);
        for extra in values(&schema).difference(&theirs) {
            problems.push(format!("{name}: value `{extra}` is not in the v2 schema"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}
