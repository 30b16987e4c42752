//! Every method Keel implements has Codex 0.115's name and shapes: no property Codex does not
//! know, every property Codex requires in what Keel sends, and nothing required of clients
//! that Codex clients do not send. The reference facts (names and required lists only) are
//! vendored in `tests/fixtures/codex_0115_app_server_shapes.json` (`thread/list` with Codex
//! 0.171's fields, experimental ones included).

use std::collections::BTreeSet;

use keel_protocol::MethodTable;
use keel_protocol::app_server::{ClientRequest, ServerNotification, ServerRequest};
use schemars::JsonSchema;
use serde_json::Value;

fn reference() -> anyhow::Result<Value> {
    Ok(serde_json::from_str(include_str!(
        "../fixtures/codex_0115_app_server_shapes.json"
    ))?)
}

/// Property names and required names of an object schema (following `$ref`s and `allOf`
/// produced by flattening).
fn object_shape(schema: &Value, defs: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut props = BTreeSet::new();
    let mut required = BTreeSet::new();
    // A `$ref` with sibling keys (a boxed enum variant: its tag next to the struct it holds)
    // contributes both.
    if schema.get("$ref").is_some() && schema.get("properties").is_some() {
        let (p, r) = object_shape(resolve(schema, defs), defs);
        props.extend(p);
        required.extend(r);
    }
    let schema = if schema.get("properties").is_some() {
        schema
    } else {
        resolve(schema, defs)
    };
    if let Some(map) = schema.get("properties").and_then(Value::as_object) {
        props.extend(map.keys().cloned());
    }
    if let Some(list) = schema.get("required").and_then(Value::as_array) {
        required.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(parts) = schema.get(key).and_then(Value::as_array) {
            for part in parts {
                let (p, r) = object_shape(part, defs);
                props.extend(p);
                if key == "allOf" {
                    required.extend(r);
                }
            }
        }
    }
    (props, required)
}

fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap_or_default();
            resolve(&defs[name], defs)
        }
        None => schema,
    }
}

fn root_schema<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn names(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Checks one message direction. `we_send` decides which required list must match.
/// Optional fields Keel adds to Codex's shapes (docs/app-server.md, "Keel's additions").
const KEEL_ADDITIONS: &[&str] = &[
    "ThreadItem::exitedReviewMode.reviewOutput",
    "thread/revert params.restoreFiles",
    "thread/revert result.restoredFiles",
    "Turn.plan",
    "Turn.tokenUsage",
];

fn check(
    what: &str,
    ours: (BTreeSet<String>, BTreeSet<String>),
    theirs: &Value,
    we_send: bool,
    problems: &mut Vec<String>,
) {
    let (props, required) = ours;
    let their_props = names(&theirs["properties"]);
    let their_required = names(&theirs["required"]);
    for extra in props.difference(&their_props) {
        // Keel's documented additions: optional, so Codex clients never miss them.
        if KEEL_ADDITIONS.contains(&format!("{what}.{extra}").as_str()) && !required.contains(extra)
        {
            continue;
        }
        problems.push(format!(
            "{what}: property `{extra}` is not in Codex's schema"
        ));
    }
    if we_send {
        for missing in their_required.difference(&props) {
            problems.push(format!(
                "{what}: Codex requires `{missing}`, Keel never sends it"
            ));
        }
        for missing in their_required.difference(&required) {
            if props.contains(missing) {
                problems.push(format!(
                    "{what}: `{missing}` is required by Codex but optional in Keel"
                ));
            }
        }
    } else {
        for extra in required.difference(&their_required) {
            problems.push(format!(
                "{what}: Keel requires `{extra}`, Codex clients may omit it"
            ));
        }
    }
}

/// Variant tag → (properties, required) of a `oneOf` schema of tagged objects.
fn variants(schema: &Value, defs: &Value) -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let schema = resolve(schema, defs);
    let mut out = Vec::new();
    for variant in schema["oneOf"].as_array().into_iter().flatten() {
        let variant = if variant.get("properties").is_some() {
            variant
        } else {
            resolve(variant, defs)
        };
        let tag = variant["properties"]["type"]["const"]
            .as_str()
            .or_else(|| variant["properties"]["type"]["enum"][0].as_str())
            .unwrap_or_default()
            .to_string();
        let (props, required) = object_shape(variant, defs);
        out.push((tag, props, required));
    }
    out
}

#[test]
fn client_requests_match_codex() -> anyhow::Result<()> {
    let reference = reference()?;
    let root = root_schema::<ClientRequest>();
    let defs = &root["$defs"];
    let mut problems = Vec::new();
    for variant in root["oneOf"].as_array().into_iter().flatten() {
        let method = variant["properties"]["method"]["const"]
            .as_str()
            .unwrap_or_default();
        let Some(theirs) = reference["client_requests"].get(method) else {
            problems.push(format!("`{method}` is not a Codex app-server method"));
            continue;
        };
        let ours = object_shape(&variant["properties"]["params"], defs);
        check(
            &format!("{method} params"),
            ours,
            &theirs["params"],
            false,
            &mut problems,
        );
    }
    let implemented: BTreeSet<&str> = ClientRequest::METHODS.iter().copied().collect();
    assert_eq!(implemented.len(), 129);
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}

#[test]
fn results_match_codex() -> anyhow::Result<()> {
    use keel_protocol::app_server as v2;
    let reference = reference()?;
    let mut problems = Vec::new();
    let mut result = |method: &str, schema: Value| {
        let ours = object_shape(&schema, &schema["$defs"]);
        check(
            &format!("{method} result"),
            ours,
            &reference["client_requests"][method]["result"],
            true,
            &mut problems,
        );
    };
    result("initialize", root_schema::<v2::InitializeResponse>());
    result("thread/start", root_schema::<v2::ThreadStartResponse>());
    result("thread/resume", root_schema::<v2::ThreadResumeResponse>());
    result("thread/fork", root_schema::<v2::ThreadForkResponse>());
    result("thread/read", root_schema::<v2::ThreadResponse>());
    result("thread/list", root_schema::<v2::ThreadListResponse>());
    // Codex 0.171's experimental queue.
    result(
        "thread/queue/add",
        root_schema::<v2::ThreadQueueSubmissionResponse>(),
    );
    result(
        "thread/queue/update",
        root_schema::<v2::ThreadQueueSubmissionResponse>(),
    );
    result(
        "thread/queue/list",
        root_schema::<v2::ThreadQueueListResponse>(),
    );
    result(
        "thread/queue/delete",
        root_schema::<v2::ThreadQueueDeleteResponse>(),
    );
    result("thread/queue/reorder", root_schema::<v2::EmptyResponse>());
    result(
        "thread/queue/start",
        root_schema::<v2::ThreadQueueStartResponse>(),
    );
    result(
        "thread/loaded/list",
        root_schema::<v2::ThreadLoadedListResponse>(),
    );
    result("thread/unarchive", root_schema::<v2::ThreadResponse>());
    result(
        "thread/metadata/update",
        root_schema::<v2::ThreadMetadataUpdateResponse>(),
    );
    result(
        "thread/attachment/add",
        root_schema::<v2::ThreadAttachmentAddResponse>(),
    );
    result(
        "thread/attachment/list",
        root_schema::<v2::ThreadAttachmentListResponse>(),
    );
    result(
        "thread/attachmentOwner/list",
        root_schema::<v2::ThreadAttachmentOwnerListResponse>(),
    );
    result(
        "thread/attachment/remove",
        root_schema::<v2::EmptyResponse>(),
    );
    result("thread/section/move", root_schema::<v2::EmptyResponse>());
    result(
        "threadSection/list",
        root_schema::<v2::ThreadSectionListResponse>(),
    );
    result(
        "threadSection/create",
        root_schema::<v2::ThreadSectionResponse>(),
    );
    result(
        "threadSection/update",
        root_schema::<v2::ThreadSectionResponse>(),
    );
    result("threadSection/delete", root_schema::<v2::EmptyResponse>());
    result(
        "thread/approveGuardianDeniedAction",
        root_schema::<v2::EmptyResponse>(),
    );
    result("skills/extraRoots/set", root_schema::<v2::EmptyResponse>());
    result(
        "experimentalFeature/enablement/set",
        root_schema::<v2::ExperimentalFeatureEnablement>(),
    );
    result(
        "windowsSandbox/setupStart",
        root_schema::<v2::WindowsSandboxSetupStartResponse>(),
    );
    result("app/read", root_schema::<v2::AppsReadResponse>());
    result("app/installed", root_schema::<v2::AppsInstalledResponse>());
    result(
        "account/gatewayOAuth/read",
        root_schema::<v2::GatewayOAuthReadResponse>(),
    );
    result(
        "account/gatewayOAuth/cancel",
        root_schema::<v2::EmptyResponse>(),
    );
    result(
        "account/login/cancel",
        root_schema::<v2::CancelLoginAccountResponse>(),
    );
    result(
        "account/securitySetup/read",
        root_schema::<v2::GetAccountSecuritySetupResponse>(),
    );
    result("feedback/save", root_schema::<v2::FeedbackSaveResponse>());
    result(
        "externalAgentConfig/import",
        root_schema::<v2::ExternalAgentConfigImportResponse>(),
    );
    result(
        "externalAgentConfig/import/recordHistory",
        root_schema::<v2::ExternalAgentConfigImportResponse>(),
    );
    result(
        "externalAgentConfig/import/readHistories",
        root_schema::<v2::ExternalAgentConfigImportHistoriesReadResponse>(),
    );
    result("plugin/list", root_schema::<v2::PluginListResponse>());
    // Codex 0.171's plugin and marketplace methods.
    result(
        "plugin/installed",
        root_schema::<v2::PluginInstalledResponse>(),
    );
    result("plugin/read", root_schema::<v2::PluginReadResponse>());
    result("plugin/install", root_schema::<v2::PluginInstallResponse>());
    result("plugin/uninstall", root_schema::<v2::EmptyResponse>());
    result(
        "plugin/skill/read",
        root_schema::<v2::PluginSkillReadResponse>(),
    );
    result(
        "plugin/reconcile",
        root_schema::<v2::PluginReconcileResponse>(),
    );
    result(
        "marketplace/add",
        root_schema::<v2::MarketplaceAddResponse>(),
    );
    result(
        "marketplace/remove",
        root_schema::<v2::MarketplaceRemoveResponse>(),
    );
    result(
        "marketplace/upgrade",
        root_schema::<v2::MarketplaceUpgradeResponse>(),
    );
    result(
        "experimentalFeature/list",
        root_schema::<v2::ExperimentalFeatureListResponse>(),
    );
    result(
        "thread/unsubscribe",
        root_schema::<v2::ThreadUnsubscribeResponse>(),
    );
    result("thread/rollback", root_schema::<v2::ThreadResponse>());
    result("turn/start", root_schema::<v2::TurnStartResponse>());
    result("turn/steer", root_schema::<v2::TurnSteerResponse>());
    result("command/exec", root_schema::<v2::CommandExecResponse>());
    result("fs/readFile", root_schema::<v2::FsReadFileResponse>());
    result("fs/getMetadata", root_schema::<v2::FsGetMetadataResponse>());
    result("fs/watch", root_schema::<v2::FsWatchResponse>());
    result("app/list", root_schema::<v2::AppsListResponse>());
    result(
        "windowsSandbox/readiness",
        root_schema::<v2::WindowsSandboxReadinessResponse>(),
    );
    result("fs/unwatch", root_schema::<v2::EmptyResponse>());
    result(
        "fs/readDirectory",
        root_schema::<v2::FsReadDirectoryResponse>(),
    );
    result("model/list", root_schema::<v2::ModelListResponse>());
    // Codex 0.171's provider methods.
    result(
        "modelProvider/list",
        root_schema::<v2::ModelProviderListResponse>(),
    );
    result(
        "modelProvider/default/set",
        root_schema::<v2::ConfigWriteResponse>(),
    );
    result(
        "modelProvider/config/write",
        root_schema::<v2::ModelProviderConfigWriteResponse>(),
    );
    result(
        "modelProvider/capabilities/read",
        root_schema::<v2::ModelProviderCapabilitiesReadResponse>(),
    );
    result("config/read", root_schema::<v2::ConfigReadResponse>());
    result(
        "mcpServerStatus/list",
        root_schema::<v2::ListMcpServerStatusResponse>(),
    );
    // Codex 0.169 methods (shapes from its schema, or its recorded TUI session for the
    // experimental ones).
    result("account/read", root_schema::<v2::GetAccountResponse>());
    result(
        "configRequirements/read",
        root_schema::<v2::ConfigRequirementsReadResponse>(),
    );
    result("hooks/list", root_schema::<v2::HooksListResponse>());
    result("skills/list", root_schema::<v2::SkillsListResponse>());
    result(
        "plugin/installed",
        root_schema::<v2::PluginInstalledResponse>(),
    );
    result(
        "thread/turns/list",
        root_schema::<v2::ThreadTurnsListResponse>(),
    );
    result(
        "collaborationMode/list",
        root_schema::<v2::CollaborationModeListResponse>(),
    );
    result(
        "account/bedrock/checkGovCloudRequirements",
        root_schema::<v2::CheckGovCloudRequirementsResponse>(),
    );
    result(
        "config/value/write",
        root_schema::<v2::ConfigWriteResponse>(),
    );
    result(
        "config/batchWrite",
        root_schema::<v2::ConfigWriteResponse>(),
    );
    result(
        "permissionProfile/list",
        root_schema::<v2::PermissionProfileListResponse>(),
    );
    result(
        "thread/goal/get",
        root_schema::<v2::ThreadGoalGetResponse>(),
    );
    result("thread/settings/update", root_schema::<v2::EmptyResponse>());
    result(
        "thread/backgroundTerminals/clean",
        root_schema::<v2::EmptyResponse>(),
    );
    result(
        "thread/backgroundTerminals/list",
        root_schema::<v2::ThreadBackgroundTerminalsListResponse>(),
    );
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}

#[test]
fn notifications_and_server_requests_match_codex() -> anyhow::Result<()> {
    let reference = reference()?;
    let mut problems = Vec::new();
    let root = root_schema::<ServerNotification>();
    for variant in root["oneOf"].as_array().into_iter().flatten() {
        let method = variant["properties"]["method"]["const"]
            .as_str()
            .unwrap_or_default();
        let Some(theirs) = reference["server_notifications"].get(method) else {
            problems.push(format!("`{method}` is not a Codex notification"));
            continue;
        };
        let ours = object_shape(&variant["properties"]["params"], &root["$defs"]);
        check(method, ours, &theirs["params"], true, &mut problems);
    }
    let root = root_schema::<ServerRequest>();
    for variant in root["oneOf"].as_array().into_iter().flatten() {
        let method = variant["properties"]["method"]["const"]
            .as_str()
            .unwrap_or_default();
        let Some(theirs) = reference["server_requests"].get(method) else {
            problems.push(format!("`{method}` is not a Codex server request"));
            continue;
        };
        let ours = object_shape(&variant["properties"]["params"], &root["$defs"]);
        check(
            &format!("{method} params"),
            ours,
            &theirs["params"],
            true,
            &mut problems,
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}

#[test]
fn nested_types_match_codex() -> anyhow::Result<()> {
    use keel_protocol::app_server as v2;
    let reference = reference()?;
    let mut problems = Vec::new();
    let mut object = |name: &str, schema: Value| {
        let ours = object_shape(&schema, &schema["$defs"]);
        check(name, ours, &reference["types"][name], true, &mut problems);
    };
    object("Thread", root_schema::<v2::Thread>());
    object("Turn", root_schema::<v2::Turn>());
    object("TurnError", root_schema::<v2::TurnError>());
    object("ThreadTokenUsage", root_schema::<v2::ThreadTokenUsage>());
    object(
        "TokenUsageBreakdown",
        root_schema::<v2::TokenUsageBreakdown>(),
    );
    object("FileUpdateChange", root_schema::<v2::FileUpdateChange>());
    object("Model", root_schema::<v2::Model>());
    object(
        "ModelProviderSummary",
        root_schema::<v2::ModelProviderSummary>(),
    );
    object("TurnPlanStep", root_schema::<v2::TurnPlanStep>());
    object("McpServerStatus", root_schema::<v2::McpServerStatus>());
    object("ThreadSettings", root_schema::<v2::ThreadTurnSettings>());
    object(
        "FsReadDirectoryEntry",
        root_schema::<v2::FsReadDirectoryEntry>(),
    );
    for (name, schema) in [
        ("ThreadItem", root_schema::<v2::ThreadItem>()),
        ("UserInput", root_schema::<v2::UserInput>()),
        ("ThreadStatus", root_schema::<v2::ThreadStatus>()),
        ("CommandAction", root_schema::<v2::CommandAction>()),
        ("PatchChangeKind", root_schema::<v2::PatchChangeKind>()),
        ("SandboxPolicy", root_schema::<v2::SandboxPolicyV2>()),
    ] {
        for (tag, props, required) in variants(&schema, &schema["$defs"]) {
            match reference["types"][name]["variants"].get(&tag) {
                Some(theirs) => check(
                    &format!("{name}::{tag}"),
                    (props, required),
                    theirs,
                    true,
                    &mut problems,
                ),
                None => problems.push(format!("{name} variant `{tag}` is not in Codex's schema")),
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    Ok(())
}
