//! Message parts a Responses stream may carry besides text: a refusal is shown as the
//! answer, a part Keel does not use (`output_audio`) is dropped without failing the turn.

use keel_test_support::{MockModelServer, Script, Turn, write_config};
use serde_json::json;

use super::exec::keel_exec;

/// A raw Responses stream whose one output item is an assistant message with `content`.
fn message_stream(content: serde_json::Value) -> Vec<String> {
    vec![
        json!({"type": "response.created", "response": {"id": "resp_parts"}}).to_string(),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "message", "id": "msg_1", "role": "assistant", "content": content}})
        .to_string(),
        json!({"type": "response.completed", "response": {"id": "resp_parts", "usage": {
            "input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
        .to_string(),
    ]
}

async fn answer_of(content: serde_json::Value) -> anyhow::Result<(i32, String, String)> {
    let mock = MockModelServer::start(Script::new([Turn::raw(message_stream(content))])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(home.path(), ws.path(), &["hi"], None).await?;
    Ok((out.code.unwrap_or(-1), out.stdout, out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_the_answer() -> anyhow::Result<()> {
    let (code, stdout, stderr) =
        answer_of(json!([{"type": "refusal", "refusal": "I can't help with that."}])).await?;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "I can't help with that.\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audio_part_is_dropped_and_the_text_kept() -> anyhow::Result<()> {
    let (code, stdout, stderr) = answer_of(json!([
        {"type": "output_audio", "data": "UklGRg==", "transcript": "spoken"},
        {"type": "output_text", "text": "written answer", "annotations": []}
    ]))
    .await?;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "written answer\n");
    Ok(())
}
