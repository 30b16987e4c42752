//! Code mode through `keel exec` against the mock, as Codex 0.171 drives today's models: the
//! request's shape (checked field by field against the structure of Codex's own request,
//! `fixtures/codex-0.171-request-gpt-6.2-sol.json`), and a scripted model whose `exec`
//! JavaScript runs a command and writes a file through `tools`, yields and is waited for.

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, custom_tool_call, function_call, write_config,
};
use serde_json::{Value, json};

use super::exec::keel_exec;

const CODEX_REQUEST: &str = include_str!("../fixtures/codex-0.171-request-gpt-6.2-sol.json");

async fn run(
    script: Script,
    overrides: &[(&str, toml::Value)],
    args: &[&str],
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, super::exec::Output)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let mut settings = vec![("model", toml::Value::from("gpt-6.2-sol"))];
    settings.extend(overrides.iter().cloned());
    write_config(home.path(), &mock.uri(), settings)?;
    let out = keel_exec(home.path(), ws.path(), args, None).await?;
    Ok((mock, ws, out))
}

/// The texts of the output the model was sent for `call_id` in `request`: the string, or
/// each text part.
fn output_texts(request: &keel_test_support::CapturedRequest, call_id: &str) -> Vec<String> {
    let item = request
        .input()
        .iter()
        .find(|item| item["call_id"] == call_id && item.get("output").is_some())
        .cloned()
        .unwrap_or_default();
    match &item["output"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str().map(str::to_string))
            .collect(),
        other => vec![other.to_string()],
    }
}

/// Tool facts as the fixture states them: namespace.name → (type, params shape).
fn tool_shapes(additional_tools: &Value) -> Vec<(String, Value)> {
    let mut shapes = Vec::new();
    for namespace in additional_tools["tools"].as_array().into_iter().flatten() {
        let ns = namespace["name"].as_str().unwrap_or_default();
        for tool in namespace["tools"].as_array().into_iter().flatten() {
            let mut shape = json!({"type": tool["type"]});
            if let Some(format) = tool.get("format") {
                shape["format"] = json!({"type": format["type"], "syntax": format["syntax"]});
            }
            if let Some(parameters) = tool.get("parameters") {
                let mut names: Vec<&str> = parameters["properties"]
                    .as_object()
                    .map(|properties| properties.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                names.sort_unstable();
                let mut required: Vec<&str> = parameters["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                required.sort_unstable();
                shape["strict"] = tool["strict"].clone();
                shape["parameters"] = json!({"properties": names, "required": required,
                    "additionalProperties": parameters["additionalProperties"]});
            }
            shapes.push((
                format!("{ns}.{}", tool["name"].as_str().unwrap_or_default()),
                shape,
            ));
        }
    }
    shapes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_matches_codex_field_by_field() -> anyhow::Result<()> {
    let codex: Value = serde_json::from_str(CODEX_REQUEST)?;
    let (mock, _ws, out) = run(
        Script::new([Turn::new([assistant_message("hi")])]),
        &[],
        &["say hi"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = &mock.requests()[0];
    let body = &request.body;

    let mut ours: Vec<&str> = body
        .as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default();
    ours.sort_unstable();
    let theirs: Vec<&str> = codex["top_level_keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(ours, theirs, "top-level fields");
    for (field, value) in codex["values"].as_object().into_iter().flatten() {
        assert_eq!(&body[field], value, "`{field}`");
    }
    for (header, value) in codex["headers"].as_object().into_iter().flatten() {
        assert_eq!(request.header(header), value.as_str(), "header `{header}`");
    }
    // Who the request is for: the same fields as Codex's, in the body and the headers.
    let keys = |value: &Value| -> Vec<String> {
        let mut keys: Vec<String> = value
            .as_object()
            .map(|object| object.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    };
    let names = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str().map(str::to_string))
            .collect()
    };
    let metadata = &body["client_metadata"];
    assert_eq!(keys(metadata), names(&codex["client_metadata_keys"]));
    let turn: Value = serde_json::from_str(
        metadata["x-codex-turn-metadata"]
            .as_str()
            .unwrap_or_default(),
    )?;
    assert_eq!(keys(&turn), names(&codex["turn_metadata_keys"]));
    assert_eq!(turn["agent_name"], "/root");
    assert_eq!(turn["turn_trigger"], "exec");
    assert_eq!(turn["model"], "gpt-6.2-sol");
    assert_eq!(turn["window_id"], metadata["x-codex-window-id"]);
    assert_eq!(metadata["thread_id"], body["prompt_cache_key"]);
    for header in names(&codex["metadata_headers"]) {
        assert!(request.header(&header).is_some(), "header `{header}`");
    }
    assert_eq!(
        request.header("x-codex-turn-metadata"),
        metadata["x-codex-turn-metadata"].as_str()
    );

    let input = request.input();
    let kinds: Vec<Value> = input
        .iter()
        .map(|item| json!([item["type"], item["role"]]))
        .collect();
    assert_eq!(
        Value::Array(kinds),
        codex["input_kinds"],
        "the input's items"
    );
    assert_eq!(input[0]["type"], "additional_tools");
    assert_eq!(input[0]["role"], "developer");
    assert_eq!(input[1]["type"], "message");
    assert_eq!(input[1]["role"], "developer");
    assert!(
        input[1]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .len()
            > 1000,
        "the instructions lead the input"
    );
    assert_eq!(input.last().map(|item| &item["role"]), Some(&json!("user")));

    let ours = tool_shapes(&input[0]);
    let mut codex_tools: Vec<(String, Value)> = Vec::new();
    for namespace in codex["additional_tools"]["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for tool in namespace["tools"].as_array().into_iter().flatten() {
            let mut shape = json!({"type": tool["type"]});
            for key in ["format", "strict", "parameters"] {
                if let Some(value) = tool.get(key) {
                    shape[key] = value.clone();
                }
            }
            codex_tools.push((
                format!(
                    "{}.{}",
                    namespace["name"].as_str().unwrap_or_default(),
                    tool["name"].as_str().unwrap_or_default()
                ),
                shape,
            ));
        }
    }
    for (name, shape) in &codex_tools {
        match ours.iter().find(|(ours, _)| ours == name) {
            Some((_, ours)) => assert_eq!(ours, shape, "tool `{name}`"),
            None => panic!("Codex offers `{name}`, Keel does not: {ours:#?}"),
        }
    }
    for (name, _) in &ours {
        assert!(
            codex_tools.iter().any(|(theirs, _)| theirs == name),
            "Keel offers `{name}`, Codex does not"
        );
    }
    // Every other tool is declared for scripts in exec's description.
    let exec = &input[0]["tools"][0]["tools"][0];
    let description = exec["description"].as_str().unwrap_or_default();
    for nested in [
        "exec_command(args:",
        "write_stdin(args:",
        "apply_patch(input: string)",
    ] {
        assert!(description.contains(nested), "`{nested}` in {description}");
    }
    Ok(())
}

/// A classic model in the catalogue keeps the classic request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_model_keeps_the_classic_request() -> anyhow::Result<()> {
    let (mock, _ws, out) = run(
        Script::new([Turn::new([assistant_message("hi")])]),
        &[("model", "gpt-5.5".into())],
        &["say hi"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = &mock.requests()[0];
    assert!(request.body["instructions"].is_string());
    assert!(request.body["tools"].is_array());
    assert_eq!(request.body["parallel_tool_calls"], true);
    assert_eq!(request.body["reasoning"], json!({"effort": "medium"}));
    assert!(
        request
            .header("x-openai-internal-codex-responses-lite")
            .is_none()
    );
    Ok(())
}

/// `features.code_mode = false` offers a code-mode model its tools one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_can_be_turned_off() -> anyhow::Result<()> {
    let (mock, _ws, out) = run(
        Script::new([Turn::new([assistant_message("hi")])]),
        &[("features.code_mode", false.into())],
        &["say hi"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let body = &mock.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"exec_command"), "{names:?}");
    assert!(!names.contains(&"exec"), "{names:?}");
    Ok(())
}

/// The model's script runs a command and writes a file through `tools`, under the sandbox;
/// `keel exec --json` shows the command and the patch as the items they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_runs_a_command_and_patches_a_file() -> anyhow::Result<()> {
    let script = r#"const r = await tools.exec_command({cmd: "echo hi-from-script"});
text(r.output.trim());
text(`exit ${r.exit_code}`);
const patched = await tools.apply_patch("*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n");
text(`${typeof patched} ${JSON.stringify(patched)}`);
"#;
    let (mock, ws, out) = run(
        Script::new([
            Turn::new([custom_tool_call("c1", "exec", script)]),
            Turn::new([assistant_message("done")]),
        ]),
        &[("sandbox_mode", "workspace-write".into())],
        &["--json", "do it"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("hello.txt"))?,
        "hello world\n"
    );
    let input = mock.requests()[1].input().to_vec();
    let output = input
        .iter()
        .find(|item| item["type"] == "custom_tool_call_output")
        .ok_or_else(|| anyhow::anyhow!("no exec output in {input:#?}"))?;
    assert_eq!(output["call_id"], "c1");
    let parts: Vec<&str> = output["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect();
    assert!(
        parts[0].starts_with("Script completed\nWall time "),
        "{parts:?}"
    );
    assert_eq!(&parts[1..], ["hi-from-script", "exit 0", "object {}"]);

    let events: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let completed = |kind: &str| {
        events
            .iter()
            .any(|event| event["type"] == "item.completed" && event["item"]["type"] == kind)
    };
    assert!(completed("command_execution"), "{}", out.stdout);
    assert!(completed("file_change"), "{}", out.stdout);
    Ok(())
}

/// A script still running at its yield time yields a cell; `wait` returns the rest. Errors
/// come back as `Script failed` with the engine's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_script_yields_and_is_waited_for() -> anyhow::Result<()> {
    let slow = "// @exec: {\"yield_time_ms\": 300}\ntext(\"start\");\nconst r = await tools.exec_command({cmd: \"sleep 1; echo late\", yield_time_ms: 10000});\ntext(r.output.trim());\n";
    let (mock, _ws, out) = run(
        Script::new([
            Turn::new([custom_tool_call("c1", "exec", slow)]),
            Turn::new([function_call(
                "w1",
                "wait",
                json!({"cell_id": "1", "yield_time_ms": 20000}).to_string(),
            )]),
            Turn::new([custom_tool_call("c2", "exec", "const = ;")]),
            Turn::new([function_call(
                "w2",
                "wait",
                json!({"cell_id": "9"}).to_string(),
            )]),
            Turn::new([assistant_message("done")]),
        ]),
        &[],
        &["go"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    let output_of = |request: usize, call_id: &str| output_texts(&requests[request], call_id);
    let yielded = output_of(1, "c1");
    assert!(
        yielded[0].starts_with("Script running with cell ID 1\n"),
        "{yielded:?}"
    );
    assert_eq!(yielded[1], "start");
    let waited = output_of(2, "w1");
    assert!(waited[0].starts_with("Script completed\n"), "{waited:?}");
    assert_eq!(waited[1], "late");
    let broken = output_of(3, "c2");
    assert!(broken[0].starts_with("Script failed\n"), "{broken:?}");
    assert!(
        broken[1].starts_with("Script error:\nSyntaxError"),
        "{broken:?}"
    );
    let unknown = output_of(4, "w2");
    assert_eq!(unknown[1], "Script error:\nexec cell 9 not found");
    Ok(())
}

/// A script that never ends on its own (a busy loop) yields its cell, and `wait` with
/// `terminate` stops it: the engine is interrupted mid-loop and the cell reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_script_is_terminated() -> anyhow::Result<()> {
    let runaway = "// @exec: {\"yield_time_ms\": 200}\ntext(\"spinning\");\nwhile (true) {}\n";
    let (mock, _ws, out) = run(
        Script::new([
            Turn::new([custom_tool_call("c1", "exec", runaway)]),
            Turn::new([function_call(
                "w1",
                "wait",
                json!({"cell_id": "1", "terminate": true}).to_string(),
            )]),
            Turn::new([assistant_message("stopped")]),
        ]),
        &[],
        &["spin"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    let text_of =
        |request: usize, call_id: &str| output_texts(&requests[request], call_id).join("\n");
    let yielded = text_of(1, "c1");
    assert!(
        yielded.contains("Script running with cell ID 1"),
        "{yielded}"
    );
    assert!(yielded.contains("spinning"), "{yielded}");
    let stopped = text_of(2, "w1");
    assert!(stopped.contains("Script terminated"), "{stopped}");
    Ok(())
}

/// A script is confined: no module loader, network, console, process or file system globals,
/// no imports, and a heap that cannot grow past its cap (the script fails, Keel goes on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_is_confined() -> anyhow::Result<()> {
    let probe = "text([typeof require, typeof fetch, typeof console, typeof process, typeof std, typeof os, typeof XMLHttpRequest].join(\",\"));\n";
    let import = "import { readFile } from \"fs\";\ntext(\"imported\");\n";
    let hog = "const hoard = [];\nwhile (true) hoard.push(\"x\".repeat(1 << 20));\n";
    let (mock, _ws, out) = run(
        Script::new([
            Turn::new([custom_tool_call("c1", "exec", probe)]),
            Turn::new([custom_tool_call("c2", "exec", import)]),
            Turn::new([custom_tool_call("c3", "exec", hog)]),
            Turn::new([assistant_message("done")]),
        ]),
        &[],
        &["probe"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    let text_of =
        |request: usize, call_id: &str| output_texts(&requests[request], call_id).join("\n");
    let globals = text_of(1, "c1");
    assert!(
        globals.contains("undefined,undefined,undefined,undefined,undefined,undefined,undefined"),
        "{globals}"
    );
    let imported = text_of(2, "c2");
    assert!(imported.contains("Script failed"), "{imported}");
    assert!(
        !imported.lines().any(|line| line == "imported"),
        "{imported}"
    );
    let hogged = text_of(3, "c3");
    assert!(hogged.contains("Script failed"), "{hogged}");
    assert!(hogged.contains("out of memory"), "{hogged}");
    Ok(())
}

/// A code-mode thread survives a server restart: `thread/read` shows its turn with the cell
/// and the command, and after `thread/resume` the model is sent the earlier `exec` call and
/// its output parts exactly as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_mode_thread_resumes_with_its_cells() -> anyhow::Result<()> {
    use super::app_server::common::World;
    let source = "const r = await tools.exec_command({cmd: \"echo resumed-cell\"});\ntext(r.output.trim());\n";
    let world = World::new(
        Script::new([
            Turn::new([custom_tool_call("c1", "exec", source)]),
            Turn::new([assistant_message("first done")]),
            Turn::new([assistant_message("second done")]),
        ]),
        &[("model", "gpt-6.2-sol".into())],
    )
    .await?;
    let thread = {
        let mut first = world.server().await?;
        let thread = first.start_thread(world.thread_params()).await?;
        let turn = first.start_turn(&thread, "run it").await?;
        first.read_turn_completed(&turn).await?;
        thread
    };
    let mut second = world.server().await?;
    let read = second
        .request(
            "thread/read",
            json!({"threadId": thread, "includeTurns": true}),
        )
        .await?;
    let items = read["thread"]["turns"][0]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    assert!(kinds.contains(&"commandExecution"), "{kinds:?}");
    assert!(kinds.contains(&"agentMessage"), "{kinds:?}");

    second
        .request("thread/resume", json!({"threadId": thread}))
        .await?;
    let turn = second.start_turn(&thread, "again").await?;
    second.read_turn_completed(&turn).await?;
    let requests = world.mock.requests();
    let before = requests[1].input().to_vec();
    let after = requests[2].input().to_vec();
    let cell_items = |input: &[Value]| -> Vec<Value> {
        input
            .iter()
            .filter(|item| item["call_id"] == "c1")
            .cloned()
            .collect()
    };
    let replayed = cell_items(&after);
    assert_eq!(replayed.len(), 2, "{after:#?}");
    assert_eq!(replayed, cell_items(&before));
    assert_eq!(replayed[1]["output"][1]["text"], "resumed-cell");
    Ok(())
}

/// A script cannot get past the sandbox its nested calls run under: under `workspace-write`
/// (without the /tmp allowances) with `never` approvals, a patch through a symlink out of the workspace, a patch to `..`,
/// and a command writing outside all fail, and the script sees why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_calls_cannot_leave_the_workspace() -> anyhow::Result<()> {
    let outside = tempfile::tempdir()?;
    let target = outside.path().join("escaped.txt");
    let via_link = "await tools.apply_patch(\"*** Begin Patch\\n*** Add File: out/escaped.txt\\n+x\\n*** End Patch\\n\").then(text, (e) => text(`refused: ${e.message}`));";
    let via_dotdot = format!(
        "await tools.apply_patch(\"*** Begin Patch\\n*** Add File: ../{}/escaped.txt\\n+x\\n*** End Patch\\n\").then(text, (e) => text(`refused: ${{e.message}}`));",
        outside
            .path()
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default()
    );
    let via_command = format!(
        "const r = await tools.exec_command({{cmd: \"echo x > {}\"}}); text(JSON.stringify(r));",
        target.display()
    );
    let mock = MockModelServer::start(Script::new([
        Turn::new([custom_tool_call("c1", "exec", via_link)]),
        Turn::new([custom_tool_call("c2", "exec", via_dotdot)]),
        Turn::new([custom_tool_call("c3", "exec", via_command)]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    // The workspace sits beside `outside`, so `..` reaches it.
    let ws = tempfile::tempdir_in(outside.path().parent().unwrap_or(outside.path()))?;
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out"))?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("model", toml::Value::from("gpt-6.2-sol")),
            ("sandbox_mode", toml::Value::from("workspace-write")),
            // `outside` is under /tmp, which workspace-write lets commands write by default.
            (
                "sandbox_workspace_write.exclude_slash_tmp",
                toml::Value::from(true),
            ),
            (
                "sandbox_workspace_write.exclude_tmpdir_env_var",
                toml::Value::from(true),
            ),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["escape"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!target.exists(), "a script wrote {}", target.display());
    assert_eq!(std::fs::read_dir(outside.path())?.count(), 0);
    let requests = mock.requests();
    let link = output_texts(&requests[1], "c1");
    assert!(
        link[1].contains("patch rejected") && link[1].contains("symlink"),
        "{link:?}"
    );
    let dotdot = output_texts(&requests[2], "c2");
    assert!(
        dotdot[1].contains("outside the writable roots"),
        "{dotdot:?}"
    );
    let command = output_texts(&requests[3], "c3");
    let result: Value = serde_json::from_str(&command[1])?;
    assert_eq!(result["exit_code"], 1, "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("Permission denied"),
        "{result}"
    );
    Ok(())
}

/// `notify()` as Codex 0.171 sends it: not in the call's output but an output item of its
/// own, for the same call, right after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notified_value_is_an_output_item_of_its_own() -> anyhow::Result<()> {
    let (mock, _ws, out) = run(
        Script::new([
            Turn::new([custom_tool_call(
                "c1",
                "exec",
                "notify(\"early note\");\ntext(\"final\");",
            )]),
            Turn::new([assistant_message("done")]),
        ]),
        &[],
        &["notify me"],
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let input = mock.requests()[1].input().to_vec();
    let outputs: Vec<&Value> = input
        .iter()
        .filter(|item| item["type"] == "custom_tool_call_output" && item["call_id"] == "c1")
        .collect();
    assert_eq!(outputs.len(), 2, "{outputs:#?}");
    let main = outputs[0]["output"].to_string();
    assert!(
        main.contains("Script completed") && main.contains("final") && !main.contains("early note"),
        "{main}"
    );
    assert_eq!(outputs[1]["output"], "early note");
    Ok(())
}
