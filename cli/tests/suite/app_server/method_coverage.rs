//! Every stable request of Codex 0.171's app-server schema gets an answer from Keel — a
//! result, or an error that says what is wrong or what Keel does not offer — never
//! `-32601` (method not found). The method names are vendored from the schema
//! (`tests/fixtures/codex_0171_stable_client_methods.txt`).

use keel_test_support::Script;
use serde_json::json;

use super::common::World;

const STABLE_METHODS: &str = include_str!("../../fixtures/codex_0171_stable_client_methods.txt");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_stable_codex_request_is_an_unknown_method() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let methods: Vec<&str> = STABLE_METHODS
        .lines()
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(methods.len(), 110);
    let mut unknown = Vec::new();
    for method in &methods {
        // Empty params: enough to reach the method (a missing field is -32602, not -32601).
        let id = server.send_request(method, json!({})).await?;
        let answer = server.read_response(id).await?;
        if answer["error"]["code"] == -32601 {
            unknown.push(format!("{method}: {}", answer["error"]["message"]));
        }
    }
    assert!(unknown.is_empty(), "unanswered methods: {unknown:#?}");
    Ok(())
}
