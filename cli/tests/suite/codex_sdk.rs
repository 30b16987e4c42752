//! OpenAI's TypeScript SDK (`@openai/codex-sdk` 0.163.0, which runs `codex exec
//! --experimental-json`) drives `keel` in place of `codex`: a streamed turn with a command,
//! a resumed turn with an image and an output schema, and a failed turn.
//!
//! Needs `node` and the SDK from npm (`KEEL_CODEX_SDK`, the path of its `dist/index.js`;
//! `.ci/run` installs it). Without them the test is reported as ignored, and under `CI` it
//! runs (and fails).

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    Fault, MockModelServer, Script, Turn, assistant_message, reasoning, shell_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(120);
const API_KEY: &str = "sk-from-the-sdk";
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../test-support/fixtures/codex-sdk/two_turns.mjs"
);
/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0xDA, 0x63, 0xFC, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_sdk),
    ignore = "needs KEEL_CODEX_SDK: @openai/codex-sdk from npm (.ci/run installs it) and node"
)]
async fn the_openai_typescript_sdk_runs_keel_in_place_of_codex() -> anyhow::Result<()> {
    let sdk = std::env::var("KEEL_CODEX_SDK")
        .context("KEEL_CODEX_SDK must name the SDK's dist/index.js")?;
    let mock = MockModelServer::builder()
        .api_key(API_KEY)
        .script(Script::new([
            Turn::new([
                reasoning("Run a command first."),
                shell_call("c1", ["bash", "-lc", "echo hi; exit 3"]),
            ]),
            Turn::new([assistant_message("The command printed hi and exited 3.")]),
            Turn::new([assistant_message(r#"{"answer":"second"}"#)]),
            Turn::failing(Fault::ResponseFailed {
                code: "invalid_prompt".into(),
                message: "mock refusal".into(),
            }),
        ]))
        .start()
        .await?;
    // No provider in config: the built-in OpenAI provider, pointed at the mock by the SDK's
    // `baseUrl` (`--config openai_base_url=...`), with the SDK's key in CODEX_API_KEY.
    let home = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), "model = \"mock-model\"\n")?;
    let ws = tempfile::tempdir()?;
    let image = ws.path().join("pixel.png");
    std::fs::write(&image, PNG)?;
    let output = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new("node")
            .arg(SCRIPT)
            .arg(&sdk)
            .arg(env!("CARGO_BIN_EXE_keel"))
            .arg(mock.uri())
            .arg(ws.path())
            .arg(&image)
            .env("KEEL_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("the SDK script did not finish")??;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "node failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("not JSON: {}", String::from_utf8_lossy(&output.stdout)))?;

    // Turn 1, streamed: the events Codex would send.
    let thread_id = report["threadId"].as_str().unwrap_or_default();
    let first: Vec<Value> = report["first"].as_array().cloned().unwrap_or_default();
    let types: Vec<&str> = first.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "item.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ],
        "{first:#?}"
    );
    assert_eq!(first[0]["thread_id"], thread_id);
    assert_eq!(
        first[4]["item"],
        json!({"id": "item_1", "type": "command_execution", "command": "bash -lc 'echo hi; exit 3'", "aggregated_output": "hi\n", "exit_code": 3, "status": "failed"})
    );
    assert_eq!(
        first[5]["item"]["text"],
        "The command printed hi and exited 3."
    );

    // Turn 2, resumed by id with two text parts, an image and a schema.
    assert_eq!(report["second"]["finalResponse"], r#"{"answer":"second"}"#);
    assert!(report["second"]["usage"]["input_tokens"].as_u64() > Some(0));
    let requests = mock.requests();
    let second = &requests[2];
    let input = second.body["input"].to_string();
    assert!(input.contains("now answer\\n\\nas json"), "{input}");
    assert!(input.contains("data:image/png;base64,"), "{input}");
    assert!(
        input.contains("The command printed hi and exited 3."),
        "the resumed turn carries the history: {input}"
    );
    assert_eq!(
        second.body["text"]["format"]["schema"]["required"],
        json!(["answer"])
    );
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {API_KEY}").as_str())
        );
    }

    // Turn 3 fails: `run()` throws with the turn's error.
    let third = report["third"].as_str().unwrap_or_default();
    assert!(
        third.starts_with("threw: ") && third.contains("mock refusal"),
        "{third}"
    );
    Ok(())
}
