//! What Codex 0.169 clients (its TUI with `--remote`) need beyond the 0.115 protocol: the
//! start-up methods, `sessionId` on threads, timestamps on items and approvals, and
//! `thread/turns/list`.

use anyhow::Context;
use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// A millisecond timestamp from the last hour.
fn assert_recent(value: &Value, what: &str) {
    let ms = value.as_i64().unwrap_or_default();
    assert!(
        (now_ms() - 3_600_000..=now_ms() + 1_000).contains(&ms),
        "{what}: {value}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_start_up_methods_answer() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let ws = world.ws().display().to_string();

    // The mock provider takes no key: no account, and no sign-in required.
    let account = server.request("account/read", json!({})).await?;
    assert_eq!(
        account,
        json!({"account": null, "requiresOpenaiAuth": false, "userId": null})
    );
    // Codex sends `null` params to methods that take none.
    let requirements = server
        .request("configRequirements/read", Value::Null)
        .await?;
    assert_eq!(requirements["requirements"], Value::Null);
    let gov = server
        .request("account/bedrock/checkGovCloudRequirements", json!({}))
        .await?;
    assert_eq!(gov, json!({"isGovCloud": false, "shouldWarn": false}));
    let hooks = server
        .request("hooks/list", json!({"cwds": [ws], "threadId": null}))
        .await?;
    assert_eq!(
        hooks,
        json!({"data": [{"cwd": ws, "hooks": [], "warnings": [], "errors": []}]})
    );
    let skills = server
        .request("skills/list", json!({"cwds": [ws], "forceReload": true}))
        .await?;
    assert_eq!(
        skills,
        json!({"data": [{"cwd": ws, "skills": [], "errors": []}]})
    );
    let plugins = server
        .request(
            "plugin/installed",
            json!({"cwds": [ws], "installSuggestionPluginNames": null}),
        )
        .await?;
    assert_eq!(
        plugins,
        json!({"marketplaces": [], "marketplaceLoadErrors": []})
    );
    let marketplaces = server
        .request("plugin/list", json!({"cwds": [ws], "forceRefetch": false}))
        .await?;
    assert_eq!(
        marketplaces,
        json!({"marketplaces": [], "featuredPluginIds": [], "marketplaceLoadErrors": []})
    );
    let modes = server.request("collaborationMode/list", json!({})).await?;
    assert_eq!(modes["data"][0]["mode"], "plan");
    assert_eq!(modes["data"][1]["mode"], "default");
    let config = server
        .request("config/read", json!({"includeLayers": true, "cwd": "."}))
        .await?;
    assert_eq!(config["config"]["model"], "mock-model");

    let started = server
        .request(
            "thread/start",
            json!({"cwd": world.ws(), "historyMode": "paginated"}),
        )
        .await?;
    let thread = &started["thread"];
    assert_eq!(thread["sessionId"], thread["id"]);
    assert_eq!(thread["projectId"], Value::Null);
    assert_eq!(thread["historyMode"], "legacy");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_and_approvals_carry_timestamps_and_turns_page() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["touch", "stamped.txt"])]),
        Turn::new([assistant_message("first")]),
        Turn::new([assistant_message("second")]),
    ]);
    let world = World::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "one").await?;
    let started = server
        .read_until("item/started c1", |m| {
            m["method"] == "item/started" && m["params"]["item"]["id"] == "c1"
        })
        .await?;
    assert_recent(
        &started["params"]["startedAtMs"],
        "item/started startedAtMs",
    );
    let approval = server.read_server_request().await?;
    assert_eq!(approval["method"], "item/commandExecution/requestApproval");
    assert_recent(&approval["params"]["startedAtMs"], "approval startedAtMs");
    server
        .respond(approval["id"].clone(), json!({"decision": "accept"}))
        .await?;
    let completed = server
        .read_until("item/completed c1", |m| {
            m["method"] == "item/completed" && m["params"]["item"]["id"] == "c1"
        })
        .await?;
    assert_recent(&completed["params"]["completedAtMs"], "completedAtMs");
    assert!(
        completed["params"]["completedAtMs"].as_i64() >= started["params"]["startedAtMs"].as_i64()
    );
    server.read_turn_completed(&turn).await?;
    let second = server.start_turn(&thread, "two").await?;
    server.read_turn_completed(&second).await?;

    let newest = server
        .request("thread/turns/list", json!({"threadId": thread, "limit": 1}))
        .await?;
    assert_eq!(newest["data"][0]["id"], second.as_str());
    assert_eq!(newest["nextCursor"], "1");
    let older = server
        .request(
            "thread/turns/list",
            json!({"threadId": thread, "limit": 1, "cursor": "1", "itemsView": "notLoaded"}),
        )
        .await?;
    assert_eq!(older["data"][0]["id"], turn.as_str());
    assert_eq!(older["data"][0]["items"], json!([]));
    assert_eq!(older["nextCursor"], Value::Null);
    let oldest_first = server
        .request(
            "thread/turns/list",
            json!({"threadId": thread, "sortDirection": "asc"}),
        )
        .await?;
    let ids: Vec<&str> = oldest_first["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, [turn.as_str(), second.as_str()]);
    let id = server
        .send_request(
            "thread/turns/list",
            json!({"threadId": thread, "cursor": "x"}),
        )
        .await?;
    let error = server.read_response(id).await?;
    assert_eq!(error["error"]["code"], -32602);
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cursor")),
        "{error}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_with_a_key_reads_as_api_key_authentication() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([]),
        &[(
            "model_providers.mock.env_key",
            "KEEL_TEST_PROVIDER_KEY".into(),
        )],
    )
    .await?;
    let mut server = world.server().await?;
    let account = server.request("account/read", json!({})).await?;
    assert_eq!(
        account,
        json!({"account": {"type": "apiKey"}, "requiresOpenaiAuth": false, "userId": null})
    );
    Ok(())
}

/// The required fields Codex 0.169 declares for each message (vendored: names and required
/// lists only).
fn required_fields() -> anyhow::Result<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../app-server/tests/fixtures/codex_0169_required_fields.json"
    );
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// Adds to `out` every path under `value` where a field `tree` requires is missing.
fn missing_fields(value: &Value, tree: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(variants) = tree.get("variants") {
        let tag = value["type"].as_str().unwrap_or_default();
        if let Some(variant) = variants.get(tag) {
            missing_fields(value, variant, &format!("{path}<{tag}>"), out);
        }
        return;
    }
    if let Some(items) = tree.get("items") {
        for (index, item) in value.as_array().into_iter().flatten().enumerate() {
            missing_fields(item, items, &format!("{path}[{index}]"), out);
        }
        return;
    }
    let Some(object) = value.as_object() else {
        return;
    };
    for name in tree["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !object.contains_key(name) {
            out.push(format!("{path}.{name}"));
        }
    }
    for (name, sub) in tree["properties"].as_object().into_iter().flatten() {
        if let Some(child) = object.get(name).filter(|child| !child.is_null()) {
            missing_fields(child, sub, &format!("{path}.{name}"), out);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tui_shaped_session_sends_every_field_0169_requires() -> anyhow::Result<()> {
    let required = required_fields()?;
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo tui > tui.txt"])]),
        Turn::new([assistant_message("done")]),
        Turn::new([assistant_message(r#"{"title": "A title"}"#)]),
    ]);
    let world = World::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let mut server = keel_test_support::AppServerProcess::spawn(world.builder())?;
    let ws = world.ws().display().to_string();
    let mut sent: Vec<(String, Value)> = Vec::new();
    let mut problems = Vec::new();
    // The TUI's start-up and first turn, in its order (docs/app-server.md).
    let init = server
        .request(
            "initialize",
            json!({"clientInfo": {"name": "codex-tui", "title": null, "version": "0.169.0"},
                   "capabilities": {"experimentalApi": true, "requiredHumanApproval": true}}),
        )
        .await?;
    sent.push(("initialize".into(), init));
    server.send_notification("initialized", json!({})).await?;
    for (method, params) in [
        ("account/read", json!({})),
        ("model/list", json!({"includeHidden": true})),
        ("hooks/list", json!({"cwds": [ws], "threadId": null})),
        ("config/read", json!({"includeLayers": true, "cwd": "."})),
        ("configRequirements/read", Value::Null),
        ("collaborationMode/list", json!({})),
    ] {
        sent.push((method.into(), server.request(method, params).await?));
    }
    let started = server
        .request(
            "thread/start",
            json!({"sandbox": "workspace-write", "ephemeral": false, "historyMode": "paginated",
                   "threadSource": "user", "config": {}}),
        )
        .await?;
    let thread = started["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sent.push(("thread/start".into(), started));
    for (method, params) in [
        ("thread/list", json!({"limit": 25})),
        ("skills/list", json!({"cwds": [ws], "forceReload": true})),
        ("plugin/installed", json!({"cwds": [ws]})),
        ("thread/loaded/list", json!({})),
        (
            "thread/read",
            json!({"threadId": thread, "includeTurns": true}),
        ),
    ] {
        sent.push((method.into(), server.request(method, params).await?));
    }
    let turn = server
        .request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": "go"}]}),
        )
        .await?;
    let turn_id = turn["turn"]["id"].as_str().unwrap_or_default().to_string();
    sent.push(("turn/start".into(), turn));
    loop {
        let message = server.read_message().await?;
        let method = message["method"].as_str().unwrap_or_default().to_string();
        if message.get("id").is_some() {
            match required["server_requests"].get(&method) {
                Some(tree) => missing_fields(&message["params"], tree, &method, &mut problems),
                None => problems.push(format!("server request `{method}` is not in 0.169")),
            }
            server
                .respond(message["id"].clone(), json!({"decision": "accept"}))
                .await?;
            continue;
        }
        match required["notifications"].get(&method) {
            Some(tree) => missing_fields(&message["params"], tree, &method, &mut problems),
            None => problems.push(format!("notification `{method}` is not in 0.169")),
        }
        if method == "turn/completed" && message["params"]["turn"]["id"] == turn_id.as_str() {
            break;
        }
    }
    // The title turn the TUI runs next to each user turn.
    let title = server
        .request(
            "thread/start",
            json!({"ephemeral": true, "threadSource": "thread_title", "sandbox": "read-only",
                   "config": title_thread_config()}),
        )
        .await?;
    let title_thread = title["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sent.push(("thread/start".into(), title));
    let title_turn = server
        .request(
            "turn/start",
            json!({"threadId": title_thread, "input": [{"type": "text", "text": "title"}],
                   "outputSchema": {"type": "object", "properties": {"title": {"type": "string"}},
                                    "required": ["title"], "additionalProperties": false}}),
        )
        .await?;
    let title_turn_id = title_turn["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sent.push(("turn/start".into(), title_turn));
    server.read_turn_completed(&title_turn_id).await?;
    sent.push((
        "thread/unsubscribe".into(),
        server
            .request("thread/unsubscribe", json!({"threadId": title_thread}))
            .await?,
    ));
    sent.push((
        "thread/turns/list".into(),
        server
            .request("thread/turns/list", json!({"threadId": thread, "limit": 1}))
            .await?,
    ));
    // The model and permission pickers, and what a resume asks.
    for (method, params) in [
        (
            "thread/settings/update",
            json!({"threadId": thread, "model": "mock-model", "effort": "high",
                   "collaborationMode": {"mode": "default", "settings": {"model": "mock-model",
                   "reasoning_effort": "high", "developer_instructions": null}}}),
        ),
        (
            "config/batchWrite",
            json!({"edits": [{"keyPath": "model_reasoning_effort", "value": "high",
                              "mergeStrategy": "replace"}],
                   "filePath": null, "expectedVersion": null, "reloadUserConfig": true}),
        ),
        ("permissionProfile/list", json!({"cwd": ws})),
        (
            "thread/settings/update",
            json!({"threadId": thread, "approvalPolicy": "on-request",
                   "approvalsReviewer": "user", "permissions": ":workspace"}),
        ),
        ("thread/goal/get", json!({"threadId": thread})),
        (
            "thread/backgroundTerminals/list",
            json!({"threadId": thread, "cursor": null, "limit": 25}),
        ),
    ] {
        sent.push((method.into(), server.request(method, params).await?));
    }
    for _ in 0..2 {
        let updated = server.read_notification("thread/settings/updated").await?;
        missing_fields(
            &updated["params"],
            &required["notifications"]["thread/settings/updated"],
            "thread/settings/updated",
            &mut problems,
        );
    }
    for (method, result) in &sent {
        match required["results"].get(method) {
            Some(tree) => missing_fields(result, tree, method, &mut problems),
            None => problems.push(format!("no 0.169 result shape vendored for `{method}`")),
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(std::fs::read_to_string(world.ws_file("tui.txt"))?, "tui\n");
    // The title turn offers the model no tools but apply_patch: the TUI's config turns the
    // rest off.
    let title_request = world
        .mock
        .requests()
        .into_iter()
        .find(|request| request.body["text"]["format"]["type"] == "json_schema")
        .context("no title request")?;
    let tools: Vec<String> = title_request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(tools, ["apply_patch"], "{}", title_request.body["tools"]);
    Ok(())
}

/// The `config` of the TUI's title threads (keys and values from its recorded session).
fn title_thread_config() -> Value {
    json!({
        "features.shell_snapshot": false, "features.tool_suggest": false,
        "tools.experimental_request_user_input.enabled": false, "features.token_budget": false,
        "features.shell_tool": false, "web_search": "disabled", "features.view_image": false,
        "features.standalone_web_search": false, "mcp_servers": {},
        "features.unified_exec": false, "tools.update_plan.enabled": false,
        "features.current_time_reminder": false, "features.code_mode_only": false,
        "features.apps": false, "features.plugins": false, "features.multi_agent_v2": false,
        "features.request_permissions_tool": false, "default_permissions": ":read-only",
        "features.multi_agent": false, "features.image_generation": false,
        "features.hooks": false, "skills.include_instructions": false,
        "features.code_mode": false, "features.goals": false, "cloud.skills.enabled": false,
        "features.deferred_executor": false, "features.context_management": false,
        "features.enable_fanout": false, "features.memories": false,
    })
}

/// `experimentalFeature/list` lists the `[features]` switches Keel reads, with their state
/// under the server's configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn experimental_features_show_keels_switches_and_their_state() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([]),
        &[("features.shell_snapshot", false.into())],
    )
    .await?;
    let mut server = world.server().await?;
    let listed = server
        .request("experimentalFeature/list", json!({"limit": 50}))
        .await?;
    let data = listed["data"].as_array().cloned().unwrap_or_default();
    let snapshot = data
        .iter()
        .find(|feature| feature["name"] == "shell_snapshot")
        .cloned()
        .unwrap_or_default();
    assert_eq!(snapshot["enabled"], false, "{listed}");
    assert_eq!(snapshot["defaultEnabled"], true);
    assert_eq!(snapshot["stage"], "stable");
    assert!(
        data.iter()
            .any(|f| f["name"] == "multi_agent" && f["enabled"] == true)
    );
    assert_eq!(listed["nextCursor"], Value::Null);
    Ok(())
}

/// A Unix-seconds timestamp from the last hour.
fn assert_recent_seconds(value: &Value, what: &str) {
    let seconds = value.as_i64().unwrap_or_default();
    let now = now_ms() / 1000;
    assert!((now - 3600..=now + 1).contains(&seconds), "{what}: {value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_carry_their_model_and_environment_and_turns_their_timing() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message("timed")])]);
    let world = World::new(script, &[("model_reasoning_effort", "high".into())]).await?;
    let mut server = world.server().await?;
    let started = server
        .request("thread/start", world.thread_params())
        .await?;
    let thread = &started["thread"];
    let id = thread["id"].as_str().context("thread id")?.to_string();
    let model = thread["model"]
        .as_str()
        .context("thread model")?
        .to_string();
    assert_eq!(model, started["model"], "{started}");
    assert_eq!(thread["reasoningEffort"], "high", "{thread}");
    let ws = thread["cwd"].clone();
    assert!(ws.is_string(), "{thread}");
    assert_eq!(
        thread["environments"],
        json!([{"environmentId": "local", "cwd": ws, "runtimeWorkspaceRoots": [ws]}])
    );
    assert_eq!(thread["recencyAt"], thread["updatedAt"]);
    assert_eq!(thread["parentThreadId"], Value::Null);

    let turn = server.start_turn(&id, "time this").await?;
    let begun = server
        .read_until("turn/started", |m| m["method"] == "turn/started")
        .await?;
    assert_recent_seconds(&begun["params"]["turn"]["startedAt"], &format!("{begun}"));
    assert_eq!(begun["params"]["turn"]["completedAt"], Value::Null);
    let done = server.read_turn_completed(&turn).await?;
    let timed = &done["turn"];
    assert_eq!(timed["startedAt"], begun["params"]["turn"]["startedAt"]);
    assert_recent_seconds(&timed["completedAt"], "completedAt");
    assert!(timed["completedAt"].as_i64() >= timed["startedAt"].as_i64());
    assert!(timed["durationMs"].is_u64(), "{timed}");
    drop(server);

    // Read back from the file by a new server: the recorded model and times, no environment
    // (the thread is not loaded).
    let mut server = world.server().await?;
    let read = server
        .request("thread/read", json!({"threadId": id, "includeTurns": true}))
        .await?;
    assert_eq!(read["thread"]["model"], model.as_str());
    assert_eq!(read["thread"]["environments"], Value::Null);
    let recorded = &read["thread"]["turns"][0];
    for field in ["startedAt", "completedAt", "durationMs"] {
        assert_eq!(recorded[field], timed[field], "{field}: {recorded}");
    }
    Ok(())
}
