//! What the Codex 0.169 TUI's pickers use: `config/batchWrite` and `config/value/write` (the
//! saved default model and effort), `permissionProfile/list`, `thread/settings/update` with
//! `thread/settings/updated`, `permissions` on `turn/start`, and `thread/goal/get`.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_writes_reach_the_file_and_new_threads_and_refusals_leave_it() -> anyhow::Result<()>
{
    let world = World::new(Script::new([]), &[]).await?;
    let config_file = world.home.path().join("config.toml");
    let mut server = world.server().await?;

    let written = server
        .request(
            "config/batchWrite",
            json!({
                "edits": [
                    {"keyPath": "model_reasoning_effort", "value": "high", "mergeStrategy": "replace"},
                    {"keyPath": "model_verbosity", "value": "low", "mergeStrategy": "upsert"},
                ],
                "filePath": null, "expectedVersion": null, "reloadUserConfig": true,
            }),
        )
        .await?;
    assert_eq!(written["status"], "ok");
    assert_eq!(written["filePath"], config_file.display().to_string());
    let version = written["version"].as_str().unwrap_or_default().to_string();
    assert!(version.starts_with("sha256:"), "{written}");
    let text = std::fs::read_to_string(&config_file)?;
    assert!(text.contains("model_reasoning_effort = \"high\""), "{text}");
    let thread = server
        .request("thread/start", world.thread_params())
        .await?;
    assert_eq!(thread["reasoningEffort"], "high");

    // One key, guarded by the version just written.
    let second = server
        .request(
            "config/value/write",
            json!({"keyPath": "model_reasoning_effort", "value": "low",
                   "mergeStrategy": "replace", "expectedVersion": version}),
        )
        .await?;
    assert_ne!(second["version"], written["version"]);
    let text = std::fs::read_to_string(&config_file)?;

    // Refused: a stale version, a bad value, a typo'd key, another file, a missing member.
    let stale = request_error(
        &mut server,
        "config/value/write",
        json!({"keyPath": "model", "value": "x", "mergeStrategy": "replace",
               "expectedVersion": version}),
    )
    .await?;
    assert_eq!(stale["code"], -32600);
    assert_eq!(
        stale["data"]["config_write_error_code"],
        "configVersionConflict"
    );
    let bad = request_error(
        &mut server,
        "config/value/write",
        json!({"keyPath": "approval_policy", "value": "sometimes", "mergeStrategy": "replace"}),
    )
    .await?;
    assert_eq!(
        bad["data"]["config_write_error_code"],
        "configValidationError"
    );
    assert!(
        bad["message"]
            .as_str()
            .is_some_and(|m| m.contains("approval_policy")),
        "{bad}"
    );
    let typo = request_error(
        &mut server,
        "config/batchWrite",
        json!({"edits": [{"keyPath": "modle", "value": "x", "mergeStrategy": "replace"}]}),
    )
    .await?;
    assert!(
        typo["message"]
            .as_str()
            .is_some_and(|m| m.contains("`modle`")),
        "{typo}"
    );
    let elsewhere = request_error(
        &mut server,
        "config/value/write",
        json!({"keyPath": "model", "value": "x", "mergeStrategy": "replace",
               "filePath": "/etc/keel.toml"}),
    )
    .await?;
    assert_eq!(elsewhere["code"], -32602);
    let missing = request_error(
        &mut server,
        "config/batchWrite",
        json!({"edits": [{"keyPath": "model", "value": "x"}]}),
    )
    .await?;
    assert_eq!(missing["code"], -32602);
    assert!(
        missing["message"]
            .as_str()
            .is_some_and(|m| m.contains("mergeStrategy")),
        "{missing}"
    );
    assert_eq!(std::fs::read_to_string(&config_file)?, text);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_update_holds_for_the_next_turn_and_is_announced() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["touch", "unasked.txt"])]),
        Turn::new([assistant_message("done")]),
        Turn::new([assistant_message("read-only now")]),
        Turn::new([assistant_message("a refused start left no claim")]),
    ]);
    let world = World::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let mut server = world.server().await?;
    let profiles = server.request("permissionProfile/list", json!({})).await?;
    let ids: Vec<&str> = profiles["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, [":read-only", ":workspace", ":danger-full-access"]);
    let first = server
        .request("permissionProfile/list", json!({"limit": 2}))
        .await?;
    assert_eq!(first["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(first["nextCursor"], ":workspace");
    let rest = server
        .request("permissionProfile/list", json!({"cursor": ":workspace"}))
        .await?;
    assert_eq!(rest["data"][0]["id"], ":danger-full-access");
    assert_eq!(rest["nextCursor"], Value::Null);
    let bad_cursor = request_error(
        &mut server,
        "permissionProfile/list",
        json!({"cursor": "x"}),
    )
    .await?;
    assert_eq!(bad_cursor["code"], -32602);
    let thread = server.start_thread(world.thread_params()).await?;

    let answer = server
        .request(
            "thread/settings/update",
            json!({"threadId": thread, "model": "other-model", "effort": "low",
                   "approvalPolicy": "never", "permissions": ":danger-full-access",
                   "collaborationMode": null, "sandboxPolicy": null}),
        )
        .await?;
    assert_eq!(answer, json!({}));
    let updated = server.read_notification("thread/settings/updated").await?;
    let settings = &updated["params"]["threadSettings"];
    assert_eq!(updated["params"]["threadId"], thread.as_str());
    assert_eq!(settings["model"], "other-model");
    assert_eq!(settings["effort"], "low");
    assert_eq!(settings["approvalPolicy"], "never");
    assert_eq!(settings["sandboxPolicy"]["type"], "dangerFullAccess");
    assert_eq!(
        settings["activePermissionProfile"]["id"],
        ":danger-full-access"
    );
    assert_eq!(
        settings["collaborationMode"]["settings"]["model"],
        "other-model"
    );

    // The command runs without asking (the policy is now `never`), with the new model.
    let turn = server.start_turn(&thread, "go").await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert!(world.ws_file("unasked.txt").exists());
    let request = world
        .mock
        .requests()
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no request"))?;
    assert_eq!(request.body["model"], "other-model");
    assert_eq!(request.body["reasoning"]["effort"], "low");

    // `permissions` on turn/start changes the sandbox and is announced too.
    let id = server
        .send_request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": "again"}],
                   "permissions": ":read-only"}),
        )
        .await?;
    let updated = server.read_notification("thread/settings/updated").await?;
    assert_eq!(
        updated["params"]["threadSettings"]["sandboxPolicy"]["type"],
        "readOnly"
    );
    let response = server.read_response(id).await?;
    let turn = response["result"]["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    server.read_turn_completed(&turn).await?;

    // Refused: an unknown profile, a profile and a policy together, an unknown thread.
    let unknown = request_error(
        &mut server,
        "thread/settings/update",
        json!({"threadId": thread, "permissions": ":bogus"}),
    )
    .await?;
    assert_eq!(unknown["code"], -32602);
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("`:bogus`") && m.contains(":workspace")),
        "{unknown}"
    );
    let both = request_error(
        &mut server,
        "thread/settings/update",
        json!({"threadId": thread, "permissions": ":workspace",
               "sandboxPolicy": {"type": "readOnly"}}),
    )
    .await?;
    assert_eq!(both["code"], -32602);
    let relative = request_error(
        &mut server,
        "thread/settings/update",
        json!({"threadId": thread, "cwd": "not/absolute"}),
    )
    .await?;
    assert_eq!(relative["code"], -32602);
    assert!(
        relative["message"]
            .as_str()
            .is_some_and(|m| m.contains("not/absolute")),
        "{relative}"
    );
    let nowhere = request_error(
        &mut server,
        "thread/settings/update",
        json!({"threadId": "00000000-0000-7000-8000-000000000000", "model": "x"}),
    )
    .await?;
    assert_eq!(nowhere["code"], -32600);

    // A turn refused for its profile leaves the thread free for the next one.
    let refused = request_error(
        &mut server,
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "x"}],
               "permissions": ":bogus"}),
    )
    .await?;
    assert_eq!(refused["code"], -32602);
    let turn = server.start_turn(&thread, "still free").await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");

    let goal = server
        .request("thread/goal/get", json!({"threadId": thread}))
        .await?;
    assert_eq!(goal, json!({"goal": null}));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_terminals_lists_the_processes_left_running() -> anyhow::Result<()> {
    use keel_test_support::exec_command_call;
    let script = Script::new([
        Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "sleep 60", "yield_time_ms": 250, "login": false}),
        )]),
        Turn::new([exec_command_call(
            "c2",
            json!({"cmd": "cat", "tty": true, "yield_time_ms": 250, "login": false}),
        )]),
        Turn::new([assistant_message("both left running")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let empty = server
        .request(
            "thread/backgroundTerminals/list",
            json!({"threadId": thread}),
        )
        .await?;
    assert_eq!(empty, json!({"data": [], "nextCursor": null}));
    let turn = server.start_turn(&thread, "start two").await?;
    server.read_turn_completed(&turn).await?;

    let first = server
        .request(
            "thread/backgroundTerminals/list",
            json!({"threadId": thread, "cursor": null, "limit": 1}),
        )
        .await?;
    assert_eq!(first["data"][0]["itemId"], "c1");
    assert_eq!(first["data"][0]["processId"], "1000");
    assert!(
        first["data"][0]["command"]
            .as_str()
            .is_some_and(|command| command.contains("sleep 60")),
        "{first}"
    );
    assert_eq!(first["data"][0]["cwd"], world.ws().display().to_string());
    assert_eq!(first["nextCursor"], "1000");
    let second = server
        .request(
            "thread/backgroundTerminals/list",
            json!({"threadId": thread, "cursor": "1000", "limit": 1}),
        )
        .await?;
    assert_eq!(second["data"][0]["itemId"], "c2");
    assert_eq!(second["nextCursor"], Value::Null);

    // `/stop`: both are killed, and their items complete in the turn that started them.
    let cleaned = server
        .request(
            "thread/backgroundTerminals/clean",
            json!({"threadId": thread}),
        )
        .await?;
    assert_eq!(cleaned, json!({}));
    for item in ["c1", "c2"] {
        let completed = server
            .read_until(&format!("item/completed {item}"), |m| {
                m["method"] == "item/completed" && m["params"]["item"]["id"] == item
            })
            .await?;
        assert_eq!(completed["params"]["turnId"], turn.as_str());
        assert_eq!(completed["params"]["item"]["source"], "unifiedExecStartup");
        assert_ne!(completed["params"]["item"]["status"], "inProgress");
    }
    let none = server
        .request(
            "thread/backgroundTerminals/list",
            json!({"threadId": thread}),
        )
        .await?;
    assert_eq!(none["data"], json!([]));
    Ok(())
}
