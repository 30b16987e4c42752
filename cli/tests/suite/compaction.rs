//! Context compaction through `keel exec` against the mock (which reports the usage each turn
//! sets): automatic compaction once a response reaches `model_auto_compact_token_limit`,
//! recovery from a request rejected for length, and resuming from a compacted rollout.

use keel_test_support::{
    Fault, MockModelServer, Script, Turn, Usage, assistant_message, shell_call, write_config,
};

use super::exec::keel_exec;

/// 15 tokens, over the limit of 12 the tests configure.
pub(super) const FULL: Usage = Usage {
    input_tokens: 10,
    cached_tokens: 0,
    output_tokens: 5,
    reasoning_tokens: 0,
};
/// 5 tokens, under the limit.
pub(super) const LIGHT: Usage = Usage {
    input_tokens: 4,
    cached_tokens: 0,
    output_tokens: 1,
    reasoning_tokens: 0,
};

const OVERFLOW_BODY: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;

async fn setup(
    script: Script,
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, tempfile::TempDir)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("model_auto_compact_token_limit", 12)],
    )?;
    Ok((mock, home, ws))
}

fn request_text(mock: &MockModelServer, index: usize) -> anyhow::Result<String> {
    let requests = mock.requests();
    let request = requests
        .get(index)
        .ok_or_else(|| anyhow::anyhow!("no request {index}"))?;
    Ok(serde_json::to_string(request.input())?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_context_is_compacted_mid_turn_and_resume_starts_from_the_summary()
-> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "SECRET-TOOL-OUTPUT"])]).with_usage(FULL),
        Turn::new([assistant_message("SUMMARY-OF-WORK: ran echo")]).with_usage(LIGHT),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
        // The resumed run.
        Turn::new([assistant_message("again")]).with_usage(LIGHT),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let first = keel_exec(home.path(), ws.path(), &["please do TASK-WORDS"], None).await?;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, "done\n");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    // The compaction request: the history so far, Keel's instructions last, and no tools.
    let compaction = request_text(&mock, 1)?;
    assert!(
        compaction.contains("SECRET-TOOL-OUTPUT") && compaction.contains("hand-off note"),
        "{compaction}"
    );
    assert!(requests[1].tool_names().is_empty());
    // The continued request: the user's words and the summary, not the old tool output.
    let continued = request_text(&mock, 2)?;
    assert!(
        continued.contains("TASK-WORDS") && continued.contains("SUMMARY-OF-WORK: ran echo"),
        "{continued}"
    );
    assert!(!continued.contains("SECRET-TOOL-OUTPUT"), "{continued}");
    assert!(!continued.contains("function_call"), "{continued}");

    let second = keel_exec(
        home.path(),
        ws.path(),
        &["resume", "--last", "NEXT-WORDS"],
        None,
    )
    .await?;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert_eq!(second.stdout, "again\n");
    let resumed = request_text(&mock, 3)?;
    assert!(
        resumed.contains("TASK-WORDS")
            && resumed.contains("SUMMARY-OF-WORK")
            && resumed.contains("NEXT-WORDS"),
        "{resumed}"
    );
    assert!(!resumed.contains("SECRET-TOOL-OUTPUT"), "{resumed}");
    mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_line_after_a_compaction_still_resumes() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "SECRET-TOOL-OUTPUT"])]).with_usage(FULL),
        Turn::new([assistant_message("SUMMARY-OF-WORK")]).with_usage(LIGHT),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
        Turn::new([assistant_message("again")]).with_usage(LIGHT),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let first = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    // A crash mid-write leaves half a line at the end of the rollout.
    let rollout = super::rollout_files(&home.path().join("sessions"))?;
    let [rollout] = rollout.as_slice() else {
        anyhow::bail!("expected one rollout, found {rollout:?}");
    };
    let mut text = std::fs::read_to_string(rollout)?;
    assert!(text.contains("\"type\":\"compacted\""), "{text}");
    text.push_str("{\"timestamp\":\"2026-11-23T00:00:00Z\",\"type\":\"response_item\",\"payl");
    std::fs::write(rollout, text)?;

    let second = keel_exec(home.path(), ws.path(), &["resume", "--last", "NEXT"], None).await?;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let resumed = request_text(&mock, 3)?;
    assert!(
        resumed.contains("SUMMARY-OF-WORK") && resumed.contains("NEXT"),
        "{resumed}"
    );
    assert!(!resumed.contains("SECRET-TOOL-OUTPUT"), "{resumed}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_rejected_for_length_is_compacted_and_retried() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::failing(Fault::http_with_body(400, OVERFLOW_BODY)),
        Turn::new([assistant_message("SUMMARY")]).with_usage(LIGHT),
        Turn::new([assistant_message("recovered")]).with_usage(LIGHT),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "recovered\n");
    let retried = request_text(&mock, 2)?;
    assert!(
        retried.contains("TASK-WORDS") && retried.contains("SUMMARY"),
        "{retried}"
    );
    mock.verify()?;
    Ok(())
}

/// The history that did not fit does not fit the summary request either: its oldest part is
/// left out of that request (never a tool output without its call) until it fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_request_too_long_itself_leaves_out_the_oldest_items() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "FIRST-OUTPUT"])]).with_usage(LIGHT),
        Turn::new([shell_call("c2", ["echo", "SECOND-OUTPUT"])]).with_usage(LIGHT),
        Turn::failing(Fault::http_with_body(400, OVERFLOW_BODY)),
        Turn::failing(Fault::http_with_body(400, OVERFLOW_BODY)),
        Turn::new([assistant_message("SUMMARY")]).with_usage(LIGHT),
        Turn::new([assistant_message("recovered")]).with_usage(LIGHT),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "recovered\n");
    let whole = request_text(&mock, 3)?;
    let trimmed = request_text(&mock, 4)?;
    assert!(whole.contains("FIRST-OUTPUT") && whole.contains("SECOND-OUTPUT"));
    assert!(trimmed.contains("Stop working on the task"), "{trimmed}");
    assert!(!trimmed.contains("FIRST-OUTPUT"), "{trimmed}");
    assert!(trimmed.contains("SECOND-OUTPUT"), "{trimmed}");
    let calls = mock.requests()[4].body.to_string();
    assert!(
        !calls.contains("\"c1\""),
        "an output or call of c1 is left: {calls}"
    );
    let retried = request_text(&mock, 5)?;
    assert!(retried.contains("TASK-WORDS") && retried.contains("SUMMARY"));
    mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_still_too_long_after_compaction_fails_clearly() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::failing(Fault::response_failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
        )),
        Turn::new([assistant_message("SUMMARY")]).with_usage(LIGHT),
        Turn::failing(Fault::http_with_body(400, OVERFLOW_BODY)),
    ]);
    let (mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["TASK-WORDS"], None).await?;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("does not fit the model's context window, even after compacting it"),
        "{}",
        out.stderr
    );
    // One compaction and one retry, no loop.
    assert_eq!(mock.requests().len(), 3);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_output_is_cut_to_the_configured_budget() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["seq", "1", "200000"])]),
        Turn::new([keel_test_support::exec_command_call(
            "c2",
            serde_json::json!({"cmd": "seq 1 200000", "max_output_tokens": 100000}),
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), [("tool_output_token_limit", 50)])?;
    let out = keel_exec(home.path(), ws.path(), &["count"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for call in ["c1", "c2"] {
        let output = mock
            .requests()
            .iter()
            .find_map(|request| request.tool_output(call).cloned())
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default();
        // 50 tokens ≈ 200 bytes of output, plus the marker and the tool's own lines.
        assert!(
            output.len() < 600,
            "{call}: {} bytes: {output}",
            output.len()
        );
        assert!(
            output.contains("tokens truncated") || output.contains("omitted"),
            "{call}: {output}"
        );
        assert!(
            output.contains("200000"),
            "{call}: the tail is kept: {output}"
        );
    }
    Ok(())
}
