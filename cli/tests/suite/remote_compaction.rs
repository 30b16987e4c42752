//! Remote compaction, as Codex 0.169 does it with OpenAI's (and Azure's) Responses API: the
//! compaction request is a normal `/responses` request whose input ends with
//! `{"type":"compaction_trigger"}`; the provider answers one `compaction` item, which then
//! stands for the history (sent back as it came, also after a resume). No local fallback: a
//! failed remote compaction fails the turn.

use keel_test_support::{
    Fault, MockModelServer, Script, Turn, assistant_message, compaction, shell_call, write_config,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::compaction::{FULL, LIGHT};
use super::exec::keel_exec;

/// A home whose provider is named `OpenAI` (what makes Codex compact remotely), at the mock.
async fn setup(
    script: Script,
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, tempfile::TempDir)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("model_auto_compact_token_limit", toml::Value::from(12)),
            ("model_providers.mock.name", toml::Value::from("OpenAI")),
            (
                "model_providers.mock.stream_max_retries",
                toml::Value::from(0),
            ),
            (
                "model_providers.mock.request_max_retries",
                toml::Value::from(0),
            ),
        ],
    )?;
    Ok((mock, home, ws))
}

fn input(mock: &MockModelServer, index: usize) -> Vec<Value> {
    mock.requests()
        .get(index)
        .map(|request| request.input().to_vec())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_compacts_and_its_item_replaces_the_history() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "SECRET-TOOL-OUTPUT"])]).with_usage(FULL),
        Turn::new([compaction("ENC-SUMMARY")]).with_usage(LIGHT),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
        Turn::new([assistant_message("again")]).with_usage(LIGHT),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let first = keel_exec(home.path(), ws.path(), &["please do TASK-WORDS"], None).await?;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, "done\n");

    // The compaction request: the whole history, then the trigger; no summary prompt.
    let request = input(&mock, 1);
    assert_eq!(request.last(), Some(&json!({"type": "compaction_trigger"})));
    let text = serde_json::to_string(&request)?;
    assert!(text.contains("SECRET-TOOL-OUTPUT"), "{text}");
    assert!(!text.contains("hand-off note"), "{text}");

    // The continued request: the user's words and the provider's item, as it came.
    let continued = input(&mock, 2);
    let item = continued
        .iter()
        .find(|item| item["type"] == "compaction")
        .cloned();
    assert_eq!(
        item.map(|item| item["encrypted_content"].clone()),
        Some(json!("ENC-SUMMARY"))
    );
    let text = serde_json::to_string(&continued)?;
    assert!(text.contains("TASK-WORDS"), "{text}");
    assert!(!text.contains("SECRET-TOOL-OUTPUT") && !text.contains("compaction_trigger"));

    // Resumed, the history starts from the compaction item.
    let second = keel_exec(
        home.path(),
        ws.path(),
        &["resume", "--last", "NEXT-WORDS"],
        None,
    )
    .await?;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let resumed = serde_json::to_string(&input(&mock, 3))?;
    assert!(
        resumed.contains("ENC-SUMMARY") && resumed.contains("NEXT-WORDS"),
        "{resumed}"
    );
    assert!(!resumed.contains("SECRET-TOOL-OUTPUT"), "{resumed}");
    mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_remote_compaction_fails_the_turn_without_a_local_summary() -> anyhow::Result<()> {
    for (answer, why) in [
        (
            Turn::new([assistant_message("not a compaction")]).with_usage(LIGHT),
            "expected exactly one compaction output item, got 0 from 1 output items",
        ),
        (Turn::failing(Fault::http(404)), "404"),
    ] {
        let script = Script::new([
            Turn::new([shell_call("c1", ["echo", "SECRET-TOOL-OUTPUT"])]).with_usage(FULL),
            answer,
        ]);
        let (mock, home, ws) = setup(script).await?;
        let out = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
        assert_eq!(out.code, Some(1), "{}", out.stderr);
        assert!(
            out.stderr.contains("remote compaction") && out.stderr.contains(why),
            "{}",
            out.stderr
        );
        // Two requests: the turn's, and the compaction; no summary request after it.
        assert_eq!(mock.requests().len(), 2, "{why}");
    }
    Ok(())
}

/// A provider not named `OpenAI` (nor Azure) keeps Keel's local summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_providers_keep_the_local_summary() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "SECRET-TOOL-OUTPUT"])]).with_usage(FULL),
        Turn::new([assistant_message("SUMMARY-OF-WORK")]).with_usage(LIGHT),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
    ]);
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("model_auto_compact_token_limit", 12)],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = serde_json::to_string(&input(&mock, 1))?;
    assert!(
        request.contains("hand-off note") && !request.contains("compaction_trigger"),
        "{request}"
    );
    Ok(())
}
