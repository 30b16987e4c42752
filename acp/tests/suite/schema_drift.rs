//! Keel's ACP wire types against the protocol's published schema (v1, as the official SDK
//! ships it): no member the schema does not define, every member it requires in what Keel
//! sends, nothing required of editors that the schema lets them omit, and only tags and
//! values the schema knows. The schema's facts (names and required lists only) are vendored
//! in `tests/fixtures/acp_v1_shapes.json`.

use std::collections::BTreeSet;

use keel_protocol::acp::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthenticateRequest, AvailableCommand,
    AvailableCommandInput, CancelNotification, CancelRequestNotification, ClientCapabilities,
    ClientSessionCapabilities, ContentBlock, ContentChunk, CreateTerminalRequest,
    CreateTerminalResponse, EmptyObject, EnvVariable, FileSystemCapabilities, ForkSessionRequest,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, Notice, PermissionOption, PermissionOptionKind, Plan,
    PlanEntry, PromptCapabilities, PromptRequest, PromptResponse, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionCapabilities, SessionIdRequest, SessionInfo, SessionMode,
    SessionModeState, SessionNotification, SessionUpdate, SetSessionModeRequest, StopReason,
    TerminalExitStatus, TerminalOutputResponse, TerminalRequest, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind, WriteTextFileRequest,
};
use schemars::JsonSchema;
use serde_json::Value;

fn reference() -> anyhow::Result<Value> {
    Ok(serde_json::from_str(include_str!(
        "../fixtures/acp_v1_shapes.json"
    ))?)
}

pub(super) fn root_schema<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

pub(super) fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap_or_default();
            resolve(&defs[name], defs)
        }
        None => schema,
    }
}

/// Property and required names of an object schema, through `$ref` and `allOf`.
pub(super) fn shape(schema: &Value, defs: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let schema = if schema.get("properties").is_some() {
        schema
    } else {
        resolve(schema, defs)
    };
    let mut props: BTreeSet<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    let mut required: BTreeSet<String> = names(&schema["required"]);
    // A `$ref` beside members (a tagged newtype variant: its tag next to the struct it holds)
    // contributes the struct's members too.
    if schema.get("$ref").is_some() && schema.get("properties").is_some() {
        let (p, r) = shape(resolve(schema, defs), defs);
        props.extend(p);
        required.extend(r);
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        let (p, r) = shape(part, defs);
        props.extend(p);
        required.extend(r);
    }
    (props, required)
}

pub(super) fn names(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Who writes a message: the agent (Keel) or the editor.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Writer {
    Keel,
    Editor,
}

pub(super) fn check(
    what: &str,
    (props, required): (BTreeSet<String>, BTreeSet<String>),
    theirs: &Value,
    writer: Writer,
    problems: &mut Vec<String>,
) {
    let their_props = names(&theirs["properties"]);
    let their_required = names(&theirs["required"]);
    for extra in props.difference(&their_props) {
        problems.push(format!("{what}: `{extra}` is not in the ACP schema"));
    }
    match writer {
        Writer::Keel => {
            for missing in their_required.difference(&required) {
                problems.push(format!(
                    "{what}: the schema requires `{missing}`, Keel may omit it"
                ));
            }
        }
        Writer::Editor => {
            for extra in required.difference(&their_required) {
                problems.push(format!(
                    "{what}: Keel requires `{extra}`, editors may omit it"
                ));
            }
        }
    }
}

/// The `(tag, variant schema)` pairs of an internally tagged enum.
pub(super) fn variants(schema: &Value, tag: &str) -> Vec<(String, Value)> {
    schema["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|variant| {
            let name = variant["properties"][tag]["const"].as_str()?.to_string();
            let mut body = variant.clone();
            if let Some(props) = body["properties"].as_object_mut() {
                props.remove(tag);
            }
            if let Some(required) = body["required"].as_array_mut() {
                required.retain(|name| name != tag);
            }
            Some((name, body))
        })
        .collect()
}

/// The string values of a unit enum.
pub(super) fn values(schema: &Value) -> BTreeSet<String> {
    let mut found = names(&schema["enum"]);
    for variant in schema["oneOf"].as_array().into_iter().flatten() {
        if let Some(value) = variant["const"].as_str() {
            found.insert(value.to_string());
        }
        found.extend(names(&variant["enum"]));
    }
    found
}

#[test]
fn structs_match_the_acp_schema() -> anyhow::Result<()> {
    let reference = reference()?;
    let defs = &reference["defs"];
    let mut problems = Vec::new();
    let mut struct_check = |name: &str, schema: Value, writer: Writer| {
        let ours = shape(&schema, &schema["$defs"]);
        check(name, ours, &defs[name], writer, &mut problems);
    };
    use Writer::{Editor, Keel};
    struct_check(
        "InitializeRequest",
        root_schema::<InitializeRequest>(),
        Editor,
    );
    struct_check(
        "FileSystemCapabilities",
        root_schema::<FileSystemCapabilities>(),
        Editor,
    );
    struct_check("Implementation", root_schema::<Implementation>(), Keel);
    struct_check(
        "InitializeResponse",
        root_schema::<InitializeResponse>(),
        Keel,
    );
    struct_check(
        "AgentCapabilities",
        root_schema::<AgentCapabilities>(),
        Keel,
    );
    struct_check(
        "PromptCapabilities",
        root_schema::<PromptCapabilities>(),
        Keel,
    );
    struct_check("McpCapabilities", root_schema::<McpCapabilities>(), Keel);
    struct_check("AuthMethodAgent", root_schema::<AuthMethod>(), Keel);
    struct_check(
        "AuthenticateRequest",
        root_schema::<AuthenticateRequest>(),
        Editor,
    );
    struct_check(
        "NewSessionRequest",
        root_schema::<NewSessionRequest>(),
        Editor,
    );
    struct_check(
        "NewSessionResponse",
        root_schema::<NewSessionResponse>(),
        Keel,
    );
    struct_check("SessionModeState", root_schema::<SessionModeState>(), Keel);
    struct_check("SessionMode", root_schema::<SessionMode>(), Keel);
    struct_check(
        "SetSessionModeRequest",
        root_schema::<SetSessionModeRequest>(),
        Editor,
    );
    struct_check("PromptRequest", root_schema::<PromptRequest>(), Editor);
    struct_check("PromptResponse", root_schema::<PromptResponse>(), Keel);
    struct_check(
        "CancelNotification",
        root_schema::<CancelNotification>(),
        Editor,
    );
    struct_check(
        "CancelRequestNotification",
        root_schema::<CancelRequestNotification>(),
        Editor,
    );
    struct_check(
        "SessionNotification",
        root_schema::<SessionNotification>(),
        Keel,
    );
    struct_check("ContentChunk", root_schema::<ContentChunk>(), Keel);
    struct_check("ToolCall", root_schema::<ToolCall>(), Keel);
    struct_check("ToolCallUpdate", root_schema::<ToolCallUpdate>(), Keel);
    struct_check("ToolCallLocation", root_schema::<ToolCallLocation>(), Keel);
    struct_check("Plan", root_schema::<Plan>(), Keel);
    struct_check("PlanEntry", root_schema::<PlanEntry>(), Keel);
    struct_check(
        "RequestPermissionRequest",
        root_schema::<RequestPermissionRequest>(),
        Keel,
    );
    struct_check(
        "RequestPermissionResponse",
        root_schema::<RequestPermissionResponse>(),
        Editor,
    );
    struct_check("PermissionOption", root_schema::<PermissionOption>(), Keel);
    struct_check(
        "LoadSessionRequest",
        root_schema::<LoadSessionRequest>(),
        Editor,
    );
    struct_check(
        "ResumeSessionRequest",
        root_schema::<LoadSessionRequest>(),
        Editor,
    );
    struct_check(
        "LoadSessionResponse",
        root_schema::<LoadSessionResponse>(),
        Keel,
    );
    struct_check(
        "ResumeSessionResponse",
        root_schema::<LoadSessionResponse>(),
        Keel,
    );
    struct_check(
        "ListSessionsRequest",
        root_schema::<ListSessionsRequest>(),
        Editor,
    );
    struct_check(
        "ListSessionsResponse",
        root_schema::<ListSessionsResponse>(),
        Keel,
    );
    struct_check("SessionInfo", root_schema::<SessionInfo>(), Keel);
    struct_check(
        "CloseSessionRequest",
        root_schema::<SessionIdRequest>(),
        Editor,
    );
    struct_check(
        "DeleteSessionRequest",
        root_schema::<SessionIdRequest>(),
        Editor,
    );
    // The editor's methods Keel calls: Keel writes the requests, the editor the results.
    struct_check(
        "ReadTextFileRequest",
        root_schema::<ReadTextFileRequest>(),
        Keel,
    );
    struct_check(
        "ReadTextFileResponse",
        root_schema::<ReadTextFileResponse>(),
        Editor,
    );
    struct_check(
        "WriteTextFileRequest",
        root_schema::<WriteTextFileRequest>(),
        Keel,
    );
    struct_check(
        "CreateTerminalRequest",
        root_schema::<CreateTerminalRequest>(),
        Keel,
    );
    struct_check("EnvVariable", root_schema::<EnvVariable>(), Keel);
    struct_check(
        "CreateTerminalResponse",
        root_schema::<CreateTerminalResponse>(),
        Editor,
    );
    for request in [
        "TerminalOutputRequest",
        "WaitForTerminalExitRequest",
        "KillTerminalRequest",
        "ReleaseTerminalRequest",
    ] {
        struct_check(request, root_schema::<TerminalRequest>(), Keel);
    }
    struct_check(
        "TerminalOutputResponse",
        root_schema::<TerminalOutputResponse>(),
        Editor,
    );
    struct_check(
        "TerminalExitStatus",
        root_schema::<TerminalExitStatus>(),
        Editor,
    );
    struct_check(
        "WaitForTerminalExitResponse",
        root_schema::<TerminalExitStatus>(),
        Editor,
    );
    struct_check(
        "ClientSessionCapabilities",
        root_schema::<ClientSessionCapabilities>(),
        Editor,
    );
    struct_check("AvailableCommand", root_schema::<AvailableCommand>(), Keel);
    struct_check(
        "UnstructuredCommandInput",
        root_schema::<AvailableCommandInput>(),
        Keel,
    );
    struct_check("Notice", root_schema::<Notice>(), Keel);
    struct_check(
        "AgentAuthCapabilities",
        root_schema::<AgentAuthCapabilities>(),
        Keel,
    );
    struct_check("LogoutRequest", root_schema::<EmptyObject>(), Editor);
    // `session/fork` is from the unstable set: its shapes, and the capabilities that offer
    // it, are checked against the unstable schema.
    let unstable = &reference["unstable"];
    let mut unstable_check = |name: &str, schema: Value, writer: Writer| {
        let ours = shape(&schema, &schema["$defs"]);
        check(name, ours, &unstable[name], writer, &mut problems);
    };
    unstable_check(
        "SessionCapabilities",
        root_schema::<SessionCapabilities>(),
        Keel,
    );
    // `subagents` is an unstable client capability.
    unstable_check(
        "ClientCapabilities",
        root_schema::<ClientCapabilities>(),
        Editor,
    );
    unstable_check(
        "ForkSessionRequest",
        root_schema::<ForkSessionRequest>(),
        Editor,
    );
    unstable_check(
        "ForkSessionResponse",
        root_schema::<NewSessionResponse>(),
        Keel,
    );
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}

/// A tagged union to check: its schema name, Keel's schema, the tag member, the schema's
/// definition for each variant's members, and who writes it.
pub(super) type Union = (
    &'static str,
    Value,
    &'static str,
    &'static [(&'static str, &'static str)],
    Writer,
);

/// Checks each union against the schema's definitions in `sets` (the first set that defines
/// a name wins; every set's tags count): every tag Keel has is the schema's, and each
/// variant's members match the schema's definition for it.
pub(super) fn check_unions(
    unions: impl IntoIterator<Item = Union>,
    sets: &[&Value],
    problems: &mut Vec<String>,
) -> anyhow::Result<()> {
    for (name, schema, tag, bodies, writer) in unions {
        let mut theirs = BTreeSet::new();
        for set in sets {
            theirs.extend(names(&set[name]["tags"]));
        }
        let ours = variants(&schema, tag);
        anyhow::ensure!(
            !ours.is_empty(),
            "{name}: no variants found in Keel's schema"
        );
        for (variant, body) in &ours {
            if !theirs.contains(variant) {
                problems.push(format!("{name}: tag `{variant}` is not in the ACP schema"));
            }
            if let Some((_, def)) = bodies.iter().find(|(tag, _)| tag == variant) {
                let definition = sets
                    .iter()
                    .map(|set| &set[*def])
                    .find(|found| !found.is_null())
                    .unwrap_or(&Value::Null);
                check(
                    &format!("{name}::{variant}"),
                    shape(body, &schema["$defs"]),
                    definition,
                    writer,
                    problems,
                );
            }
        }
    }
    Ok(())
}

#[test]
fn tagged_unions_and_values_match_the_acp_schema() -> anyhow::Result<()> {
    let reference = reference()?;
    let defs = &reference["defs"];
    let mut problems = Vec::new();
    // Tagged unions: every tag is the schema's, and each variant's members match the
    // schema's definition for it.
    let unions: [Union; 4] = [
        (
            "SessionUpdate",
            root_schema::<SessionUpdate>(),
            "sessionUpdate",
            &[
                ("agent_message_chunk", "ContentChunk"),
                ("tool_call", "ToolCall"),
                ("tool_call_update", "ToolCallUpdate"),
                ("plan", "Plan"),
                ("current_mode_update", "CurrentModeUpdate"),
                ("config_option_update", "ConfigOptionUpdate"),
                ("session_info_update", "SessionInfoUpdate"),
                ("usage_update", "UsageUpdate"),
                ("available_commands_update", "AvailableCommandsUpdate"),
                ("notice", "Notice"),
                ("subagent_update", "SubagentUpdate"),
            ],
            Writer::Keel,
        ),
        (
            "ContentBlock",
            root_schema::<ContentBlock>(),
            "type",
            &[
                ("text", "TextContent"),
                ("image", "ImageContent"),
                ("audio", "AudioContent"),
                ("resource_link", "ResourceLink"),
                ("resource", "EmbeddedResource"),
            ],
            Writer::Editor,
        ),
        (
            "ToolCallContent",
            root_schema::<ToolCallContent>(),
            "type",
            &[
                ("content", "Content"),
                ("diff", "Diff"),
                ("terminal", "Terminal"),
            ],
            Writer::Keel,
        ),
        (
            "RequestPermissionOutcome",
            root_schema::<RequestPermissionOutcome>(),
            "outcome",
            &[("selected", "SelectedPermissionOutcome")],
            Writer::Editor,
        ),
    ];
    // Tags of ACP's unstable set Keel sends (`subagent_update`) count too.
    check_unions(unions, &[defs, &reference["unstable"]], &mut problems)?;
    // Unit enums: only the schema's values.
    for (name, schema) in [
        ("StopReason", root_schema::<StopReason>()),
        ("ToolKind", root_schema::<ToolKind>()),
        ("ToolCallStatus", root_schema::<ToolCallStatus>()),
        (
            "PermissionOptionKind",
            root_schema::<PermissionOptionKind>(),
        ),
    ] {
        let theirs = names(&defs[name]["values"]);
        let ours = values(&schema);
        anyhow::ensure!(!ours.is_empty(), "{name}: no values found in Keel's schema");
        for extra in ours.difference(&theirs) {
            problems.push(format!("{name}: value `{extra}` is not in the ACP schema"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}
