//! Hooks through the real binaries against the mock model: a trusted `PreToolUse` hook blocks
//! a command (the model gets the reason, the command does not run) and the same hook
//! untrusted is held back with a warning naming it; `PostToolUse` after a patch;
//! `UserPromptSubmit` context in the request; `Stop` making the turn go on; a hook that hangs
//! and one that fails are ignored with warnings; an untrusted project's hooks never run.

use std::path::Path;

use keel_test_support::{
    AppServerProcess, MockModelServer, ProcessBuilder, Script, Turn, apply_patch_call,
    assistant_message, shell_call, write_config,
};
use serde_json::{Value, json};

use super::exec::keel_exec;

fn write_hooks(dir: &Path, hooks: Value) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("hooks.json"),
        json!({ "hooks": hooks }).to_string(),
    )?;
    Ok(())
}

/// A started, initialised `keel app-server` on `home` working in `ws`.
pub(super) async fn app_server(home: &Path, ws: &Path) -> anyhow::Result<AppServerProcess> {
    let mut server = AppServerProcess::spawn(
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("app-server")
            .home_path(home)
            .home_var("KEEL_HOME")
            .cwd(ws)
            .env_remove("RUST_LOG"),
    )?;
    server.initialize().await?;
    Ok(server)
}

/// Records the user's trust in every hook `hooks/list` reports for `ws`, as a client does.
pub(super) async fn trust_all(home: &Path, ws: &Path) -> anyhow::Result<Vec<Value>> {
    let mut server = app_server(home, ws).await?;
    let listed = server
        .request("hooks/list", json!({"cwds": [ws.display().to_string()]}))
        .await?;
    let hooks = listed["data"][0]["hooks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    for hook in &hooks {
        text.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}\n",
            toml::Value::from(hook["key"].as_str().unwrap_or_default()),
            toml::Value::from(hook["currentHash"].as_str().unwrap_or_default()),
        ));
    }
    std::fs::write(config, text)?;
    Ok(hooks)
}

fn tool_output(mock: &MockModelServer, call_id: &str) -> String {
    mock.requests()
        .iter()
        .find_map(|request| request.tool_output(call_id).cloned())
        .map(|output| {
            output
                .as_str()
                .map_or_else(|| output.to_string(), str::to_string)
        })
        .unwrap_or_default()
}

fn blocking_script() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "touch blocked.txt"])]),
        Turn::new([assistant_message("done")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_use_hook_blocks_once_trusted_and_is_held_back_with_a_warning_before()
-> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let seen = home.path().join("pre.json");
    write_hooks(
        home.path(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("cat > {}; echo 'no touching' >&2; exit 2", seen.display())}]}]}),
    )?;

    // Untrusted: held back, said so, and the command runs.
    let mock = MockModelServer::start(blocking_script()).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(home.path(), ws.path(), &["touch it"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("PreToolUse hook")
            && out.stderr.contains("is not trusted")
            && out.stderr.contains(":pre_tool_use:0:0"),
        "{}",
        out.stderr
    );
    assert!(ws.path().join("blocked.txt").exists());
    assert!(!seen.exists());
    std::fs::remove_file(ws.path().join("blocked.txt"))?;

    // Trusted (as a client records it): the command is blocked and the model told why.
    let mock = MockModelServer::start(blocking_script()).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let listed = trust_all(home.path(), ws.path()).await?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["eventName"], "preToolUse");
    assert_eq!(listed[0]["trustStatus"], "untrusted");
    let out = keel_exec(home.path(), ws.path(), &["touch it"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        !ws.path().join("blocked.txt").exists(),
        "the blocked command ran"
    );
    assert_eq!(
        tool_output(&mock, "c1"),
        "Command blocked by PreToolUse hook: no touching. Command: touch blocked.txt"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen)?)?;
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "touch blocked.txt");
    assert_eq!(input["tool_use_id"], "c1");
    assert_eq!(input["cwd"], ws.path().display().to_string());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_tool_use_after_a_patch_prompt_context_and_a_stop_that_goes_on() -> anyhow::Result<()>
{
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let post = home.path().join("post.json");
    write_hooks(
        home.path(),
        json!({
            "PostToolUse": [{"matcher": "apply_patch", "hooks": [{"type": "command",
                "command": format!("cat > {}", post.display())}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo KEEL-HOOK-CONTEXT-7"}]}],
            "Stop": [{"hooks": [{"type": "command", "command":
                "input=$(cat); case \"$input\" in *'\"stop_hook_active\":false'*) echo 'run the tests first' >&2; exit 2;; esac"}]}]
        }),
    )?;
    let script = Script::new([
        Turn::new([apply_patch_call(
            "p1",
            "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch",
        )]),
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("tests ran")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--dangerously-bypass-hook-trust", "write notes"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "tests ran", "{}", out.stderr);
    assert!(
        out.stderr.contains("--dangerously-bypass-hook-trust"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes.txt"))?,
        "hello\n"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&post)?)?;
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "apply_patch");
    assert!(
        input["tool_response"]
            .as_str()
            .is_some_and(|r| r.contains("notes.txt")),
        "{input}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].body.to_string();
    assert!(first.contains("KEEL-HOOK-CONTEXT-7"), "{first}");
    let third = requests[2].body.to_string();
    assert!(
        third.contains("<hook_prompt hook_run_id=\\\"stop:")
            && third.contains("run the tests first"),
        "{third}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_that_hang_or_fail_are_ignored_with_a_warning() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_hooks(
        home.path(),
        json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": "sleep 30", "timeout": 1},
            {"type": "command", "command": "exit 3"}
        ]}]}),
    )?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo ran > ran.txt"])]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--dangerously-bypass-hook-trust", "go"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        ws.path().join("ran.txt").exists(),
        "the command did not run"
    );
    assert!(
        out.stderr.contains("hook timed out after 1s")
            && out.stderr.contains("hook exited with code 3"),
        "{}",
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_hooks_run_only_once_the_project_is_trusted() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let marker = home.path().join("project-hook-ran");
    write_hooks(
        &ws.path().join(".codex"),
        json!({"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", marker.display())}]}]}),
    )?;
    for trusted in [false, true] {
        let mock =
            MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
        write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
        if trusted {
            let config = home.path().join("config.toml");
            let mut text = std::fs::read_to_string(&config)?;
            text.push_str(&format!(
                "\n[projects.{}]\ntrust_level = \"trusted\"\n",
                toml::Value::from(ws.path().display().to_string())
            ));
            std::fs::write(config, text)?;
        }
        let out = keel_exec(
            home.path(),
            ws.path(),
            &["--dangerously-bypass-hook-trust", "hi"],
            None,
        )
        .await?;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(marker.exists(), trusted, "trusted project: {trusted}");
    }
    Ok(())
}

/// Over the app-server, with trust bypassed the way Codex's app-server takes it
/// (`thread/start` `config.bypass_hook_trust`): `hook/started` then `hook/completed` with the
/// block, in Codex's shapes, and the command not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_announces_hook_runs() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_hooks(
        home.path(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "echo 'not here' >&2; exit 2", "statusMessage": "Checking"}]}]}),
    )?;
    let mock = MockModelServer::start(blocking_script()).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let mut server = app_server(home.path(), ws.path()).await?;
    let thread_id = server
        .start_thread(json!({"cwd": ws.path(), "config": {"bypass_hook_trust": true}}))
        .await?;
    let turn_id = server.start_turn(&thread_id, "touch it").await?;
    let started = server.read_notification("hook/started").await?;
    let completed = server.read_notification("hook/completed").await?;
    server.read_turn_completed(&turn_id).await?;
    for message in [&started, &completed] {
        let params = &message["params"];
        assert_eq!(params["threadId"], thread_id.as_str());
        assert_eq!(params["turnId"], turn_id.as_str());
        assert_eq!(params["run"]["eventName"], "preToolUse");
        assert_eq!(params["run"]["handlerType"], "command");
        assert_eq!(params["run"]["executionMode"], "sync");
        assert_eq!(params["run"]["statusMessage"], "Checking");
        let id = params["run"]["id"].as_str().unwrap_or_default();
        assert!(
            id.starts_with("pre-tool-use:") && id.ends_with(":c1"),
            "{id}"
        );
    }
    assert_eq!(started["params"]["run"]["status"], "running");
    assert_eq!(completed["params"]["run"]["status"], "blocked");
    assert_eq!(
        completed["params"]["run"]["entries"],
        json!([{"kind": "feedback", "text": "not here"}])
    );
    assert!(!ws.path().join("blocked.txt").exists());
    assert!(tool_output(&mock, "c1").contains("not here"));
    Ok(())
}

/// The session's own events: `SessionStart` (its output is context ahead of the prompt),
/// `PreModelRequest` / `PostModelRequest` around each request and `SessionEnd` as `keel exec`
/// ends; then, over the app-server, `PreCompact` / `PostCompact` around a compaction a client
/// asks for and `SessionEnd` when the last client leaves the thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_model_request_events_fire_in_order() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let log = home.path().join("events.log");
    // Appends the event's name (and the session start's source) to the log.
    let record = format!(
        "input=$(cat); name=$(printf '%s' \"$input\" | sed -n 's/.*\"hook_event_name\":\"\\([A-Za-z]*\\)\".*/\\1/p'); echo \"$name\" >> {}",
        log.display()
    );
    let hook = |command: &str| json!([{"hooks": [{"type": "command", "command": command}]}]);
    write_hooks(
        home.path(),
        json!({
            "SessionStart": hook(&format!("{record}; echo KEEL-SESSION-CTX")),
            "PreModelRequest": hook(&record),
            "PostModelRequest": hook(&record),
            "SessionEnd": hook(&record),
            "PreCompact": hook(&record),
            "PostCompact": hook(&record),
        }),
    )?;
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message("hi")])])).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--dangerously-bypass-hook-trust", "hello"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events = std::fs::read_to_string(&log)?;
    assert_eq!(
        events.lines().collect::<Vec<_>>(),
        [
            "SessionStart",
            "PreModelRequest",
            "PostModelRequest",
            "SessionEnd"
        ],
        "{events}"
    );
    let body = mock
        .requests()
        .first()
        .map(|request| request.body.to_string())
        .unwrap_or_default();
    let context = body.find("KEEL-SESSION-CTX");
    let prompt = body.find("\"hello\"");
    assert!(context.is_some() && context < prompt, "{body}");

    // Compaction asked by a client, then SessionEnd: an app-server thread whose only client
    // unsubscribes is shut down.
    std::fs::remove_file(&log)?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("hi")]),
        Turn::new([assistant_message("SUMMARY of the talk")]),
    ]))
    .await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let mut server = app_server(home.path(), ws.path()).await?;
    let thread_id = server
        .start_thread(json!({"cwd": ws.path(), "config": {"bypass_hook_trust": true}}))
        .await?;
    let turn_id = server.start_turn(&thread_id, "hello").await?;
    server.read_turn_completed(&turn_id).await?;
    server
        .request("thread/compact/start", json!({"threadId": thread_id}))
        .await?;
    server.read_notification("thread/compacted").await?;
    server
        .request("thread/unsubscribe", json!({"threadId": thread_id}))
        .await?;
    // The hook runs as the thread shuts down; the file is the only sign, so look until it
    // shows (bounded).
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            if std::fs::read_to_string(&log).is_ok_and(|text| text.contains("SessionEnd")) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ended.is_ok(), "{:?}", std::fs::read_to_string(&log));
    let events = std::fs::read_to_string(&log)?;
    let order: Vec<&str> = events
        .lines()
        .filter(|name| name.ends_with("Compact") || *name == "SessionEnd")
        .collect();
    assert_eq!(
        order,
        ["PreCompact", "PostCompact", "SessionEnd"],
        "{events}"
    );
    Ok(())
}

/// `PermissionRequest` answers in the user's place: over the app-server, with a policy that
/// asks about every command, an allowing hook lets the command run and a refusing one stops
/// it, and the client is asked neither time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_hook_answers_for_the_user() -> anyhow::Result<()> {
    for (answer, runs) in [
        (
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'"#,
            true,
        ),
        ("echo 'not today' >&2; exit 2", false),
    ] {
        let home = tempfile::tempdir()?;
        let ws = tempfile::tempdir()?;
        write_hooks(
            home.path(),
            json!({"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": answer}]}]}),
        )?;
        let mock = MockModelServer::start(Script::new([
            Turn::new([shell_call("c1", ["bash", "-lc", "touch asked.txt"])]),
            Turn::new([assistant_message("done")]),
        ]))
        .await?;
        write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
        let mut server = app_server(home.path(), ws.path()).await?;
        let thread_id = server
            .start_thread(json!({"cwd": ws.path(), "config": {
                "approval_policy": "untrusted",
                "sandbox_mode": "danger-full-access",
                "bypass_hook_trust": true,
            }}))
            .await?;
        let turn_id = server.start_turn(&thread_id, "touch it").await?;
        let completed = server
            .read_until("the turn's end or a question", |m| {
                (m.get("id").is_some() && m.get("method").is_some())
                    || (m["method"] == "turn/completed"
                        && m["params"]["turn"]["id"] == turn_id.as_str())
            })
            .await?;
        assert_eq!(
            completed["method"], "turn/completed",
            "the client was asked: {completed}"
        );
        assert_eq!(ws.path().join("asked.txt").exists(), runs, "{answer}");
    }
    Ok(())
}

/// A sub-agent's life: `SubagentStart` when it starts, `SubagentStop` (not `Stop`) when its
/// turn ends; the parent's own turn ends with `Stop`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_start_and_stop_with_their_own_events() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let log = home.path().join("agents.log");
    let record = format!(
        "input=$(cat); name=$(printf '%s' \"$input\" | sed -n 's/.*\"hook_event_name\":\"\\([A-Za-z]*\\)\".*/\\1/p'); echo \"$name\" >> {}",
        log.display()
    );
    let hook = |command: &str| json!([{"hooks": [{"type": "command", "command": command}]}]);
    write_hooks(
        home.path(),
        json!({
            "SubagentStart": hook(&record),
            "SubagentStop": hook(&record),
            "Stop": hook(&record),
        }),
    )?;
    let mock = MockModelServer::builder()
        .responder(|request| {
            // The child's messages carry its task; the parent's only name it in a call.
            if super::agents::input_text(request).contains("CHILD-TASK") {
                return Some(Turn::new([assistant_message("child done")]));
            }
            let Some(spawned) = request.tool_output("s1") else {
                return Some(Turn::new([keel_test_support::function_call(
                    "s1",
                    "spawn_agent",
                    json!({"message": "CHILD-TASK: say hi"}).to_string(),
                )]));
            };
            if request.tool_output("w1").is_none() {
                let id = spawned
                    .as_str()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .and_then(|v| v["agent_id"].as_str().map(str::to_string))
                    .unwrap_or_default();
                return Some(Turn::new([keel_test_support::function_call(
                    "w1",
                    "wait_agent",
                    json!({"ids": [id], "timeout_ms": 30000}).to_string(),
                )]));
            }
            Some(Turn::new([assistant_message("parent done")]))
        })
        .start()
        .await?;
    write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--dangerously-bypass-hook-trust", "delegate"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "parent done", "{}", out.stderr);
    let events = std::fs::read_to_string(&log)?;
    let events: Vec<&str> = events.lines().collect();
    assert_eq!(
        events,
        ["SubagentStart", "SubagentStop", "Stop"],
        "{events:?}"
    );
    Ok(())
}

/// A hook trusted while its thread is loaded (as the TUI's `/hooks` records it) runs from the
/// thread's next turn, without the thread being loaded again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_trusted_while_its_thread_is_loaded_runs_from_the_next_turn() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]))
    .await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    write_hooks(
        home.path(),
        json!({"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "echo ran >> hook-runs"}
        ]}]}),
    )?;
    let mut server = app_server(home.path(), ws.path()).await?;
    let thread = server.start_thread(json!({"cwd": ws.path()})).await?;
    let turn = server.start_turn(&thread, "first").await?;
    server.read_turn_completed(&turn).await?;
    assert!(
        !ws.path().join("hook-runs").exists(),
        "the hook ran untrusted"
    );
    trust_all(home.path(), ws.path()).await?;
    let turn = server.start_turn(&thread, "second").await?;
    server.read_turn_completed(&turn).await?;
    assert_eq!(
        std::fs::read_to_string(ws.path().join("hook-runs"))?,
        "ran\n"
    );
    Ok(())
}
