//! What every request tells the model: Keel's own instructions (`core/src/base_instructions.md`)
//! and a developer message with the sandbox and approval policy in force, rebuilt when a
//! client changes the policy mid-thread.

use keel_test_support::{Script, Turn, assistant_message};
use serde_json::{Value, json};

use super::app_server::common::World;

fn permissions(request: &keel_test_support::CapturedRequest) -> String {
    let first = &request.input()[0];
    assert_eq!(first["role"], "developer", "{first}");
    first["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_keels_instructions_and_the_permissions_in_force() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread = server
        .start_thread(json!({"cwd": world.ws(), "sandbox": "workspace-write", "approvalPolicy": "on-request"}))
        .await?;
    let turn = server.start_turn(&thread, "first").await?;
    server.read_turn_completed(&turn).await?;
    // The client tightens the policy for the next turn.
    let started = server
        .request(
            "turn/start",
            json!({
                "threadId": thread,
                "input": [{"type": "text", "text": "second"}],
                "approvalPolicy": "never",
            }),
        )
        .await?;
    let turn = started["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    server.read_turn_completed(&turn).await?;

    let requests = world.mock.requests();
    assert_eq!(requests.len(), 2);
    let instructions = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/src/base_instructions.md"
    ))?;
    for request in &requests {
        assert_eq!(
            request.body["instructions"],
            Value::String(instructions.clone())
        );
    }
    let first = permissions(&requests[0]);
    assert!(first.contains("`workspace-write`"), "{first}");
    assert!(first.contains(&world.ws().display().to_string()), "{first}");
    assert!(first.contains("`on-request`"), "{first}");
    assert!(first.contains("require_escalated"), "{first}");
    let second = permissions(&requests[1]);
    assert!(
        second.contains("`never`") && !second.contains("`on-request`"),
        "{second}"
    );
    Ok(())
}
