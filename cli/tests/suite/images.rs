//! Images reach the model as `input_image` items: attached to the prompt (`keel exec -i`,
//! app-server `localImage`) or looked at by the model with `view_image`; a missing or
//! non-image file gets a clear error. `web_search` is offered only when configured.

use base64::Engine;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, write_config,
};
use serde_json::{Value, json};

use super::app_server::common::World;
use super::exec::keel_exec;

/// The first bytes of a PNG file, enough to be recognised as one.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-pixels";

fn data_url(bytes: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The `input_image` URLs of a request's input.
pub(crate) fn images_in(input: &[Value]) -> Vec<String> {
    input
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "input_image")
        .filter_map(|part| part["image_url"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_attaches_images_and_names_a_missing_one() -> anyhow::Result<()> {
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("a pixel")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    std::fs::write(ws.path().join("shot.png"), PNG)?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["-i", "shot.png", "what is this?"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = &mock.requests()[0];
    assert_eq!(images_in(request.input()), vec![data_url(PNG)]);
    assert!(request.tool_names().contains(&"view_image".to_string()));
    assert!(!request.tool_names().contains(&"web_search".to_string()));

    let out = keel_exec(
        home.path(),
        ws.path(),
        &["-i", "nope.png", "what is this?"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("-i nope.png: cannot read image")
            && out.stderr.contains("No such file"),
        "{}",
        out.stderr
    );

    // A file that is not an image is refused before anything runs.
    std::fs::write(ws.path().join("notes.txt"), "just text")?;
    let requests_before = mock.requests().len();
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["-i", "notes.txt", "what is this?"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("notes.txt is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        out.stderr
    );
    assert_eq!(mock.requests().len(), requests_before);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_image_shows_the_model_the_image_or_says_why_not() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call(
            "v1",
            "view_image",
            json!({"path": "shot.png"}).to_string(),
        )]),
        Turn::new([function_call(
            "v2",
            "view_image",
            json!({"path": "notes.txt"}).to_string(),
        )]),
        Turn::new([function_call(
            "v3",
            "view_image",
            json!({"path": "gone.png"}).to_string(),
        )]),
        Turn::new([assistant_message("seen")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), [("tools.web_search", true)])?;
    std::fs::write(ws.path().join("shot.png"), PNG)?;
    std::fs::write(ws.path().join("notes.txt"), "plain text")?;
    let out = keel_exec(home.path(), ws.path(), &["look"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    assert!(requests[0].tool_names().contains(&"web_search".to_string()));
    let output = |i: usize, id: &str| {
        requests[i]
            .tool_output(id)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(output(1, "v1"), "attached image shot.png");
    // The image follows the call's output in the next request.
    let input = requests[1].input();
    let output_at = input
        .iter()
        .position(|i| i["type"] == "function_call_output")
        .unwrap_or(usize::MAX);
    let image_at = input
        .iter()
        .rposition(|i| !images_in(std::slice::from_ref(i)).is_empty())
        .unwrap_or(0);
    assert!(image_at > output_at, "{input:?}");
    assert_eq!(images_in(input), vec![data_url(PNG)]);
    assert!(
        output(2, "v2").contains("is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        output(2, "v2")
    );
    assert!(
        output(3, "v3").contains("cannot read image"),
        "{}",
        output(3, "v3")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_attaches_local_images_and_refuses_bad_paths() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    std::fs::write(world.ws_file("shot.png"), PNG)?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let refused = server
        .request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "localImage", "path": "shot.png"}]}),
        )
        .await;
    let error = format!("{:?}", refused.err());
    assert!(
        error.contains("-32602") && error.contains("shot.png"),
        "{error}"
    );
    let started = server
        .request(
            "turn/start",
            json!({"threadId": thread, "input": [
                {"type": "text", "text": "see"},
                {"type": "localImage", "path": world.ws_file("shot.png")},
            ]}),
        )
        .await?;
    let turn = started["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    server.read_turn_completed(&turn).await?;
    assert_eq!(
        images_in(world.mock.requests()[0].input()),
        vec![data_url(PNG)]
    );
    Ok(())
}
