//! Thread goals on the app-server against the mock model: an active goal keeps the thread
//! working turn after turn until the model marks it complete, a budget or a failed turn stops
//! it, the goal survives a restart, and bad changes are refused.

use keel_test_support::{
    AppServerProcess, Fault, Script, Turn, Usage, assistant_message, function_call, shell_call,
};
use serde_json::{Value, json};

use super::common::{World, methods};

/// 15 fresh tokens a response (10 in, none cached, 5 out).
const RESPONSE: Usage = Usage {
    input_tokens: 10,
    cached_tokens: 0,
    output_tokens: 5,
    reasoning_tokens: 0,
};

/// Reads until `count` `turn/completed` notifications have arrived; returns every message.
async fn until_turns_completed(
    server: &mut AppServerProcess,
    count: usize,
) -> anyhow::Result<Vec<Value>> {
    let mut seen = Vec::new();
    let mut completed = 0;
    while completed < count {
        let message = server.read_message().await?;
        if message["method"] == "turn/completed" {
            completed += 1;
        }
        seen.push(message);
    }
    Ok(seen)
}

fn goal_updates(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "thread/goal/updated")
        .map(|m| &m["params"])
        .collect()
}

fn input_text(request: &keel_test_support::CapturedRequest) -> String {
    serde_json::to_string(request.input()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_active_goal_keeps_working_until_the_model_completes_it() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("s1", ["echo", "step-one"])]).with_usage(RESPONSE),
        Turn::new([assistant_message("first stretch done")]).with_usage(RESPONSE),
        Turn::new([function_call(
            "g1",
            "update_goal",
            r#"{"status":"complete"}"#,
        )])
        .with_usage(RESPONSE),
        Turn::new([assistant_message("the goal is met")]).with_usage(RESPONSE),
        Turn::new([assistant_message("a plain answer")]).with_usage(RESPONSE),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let set = server
        .request(
            "thread/goal/set",
            json!({"threadId": thread_id, "objective": "  make the build green ", "origin": "user"}),
        )
        .await?;
    let goal = &set["goal"];
    anyhow::ensure!(
        goal["objective"] == "make the build green"
            && goal["status"] == "active"
            && goal["tokensUsed"] == 0
            && goal["threadId"] == thread_id.as_str()
            && goal["tokenBudget"].is_null(),
        "{set}"
    );
    // Two turns run on their own: the second ends with the goal complete, and no third starts.
    let messages = until_turns_completed(&mut server, 2).await?;
    let names = methods(&messages);
    anyhow::ensure!(
        names.iter().filter(|m| *m == "turn/started").count() == 2,
        "{names:?}"
    );
    let updates = goal_updates(&messages);
    anyhow::ensure!(
        updates.first().is_some_and(|u| u["turnId"].is_null()),
        "{updates:?}"
    );
    let last = updates
        .last()
        .ok_or_else(|| anyhow::anyhow!("no updates"))?;
    anyhow::ensure!(
        last["goal"]["status"] == "complete" && !last["turnId"].is_null(),
        "{updates:?}"
    );
    let got = server
        .request("thread/goal/get", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(
        got["goal"]["status"] == "complete" && got["goal"]["tokensUsed"] == 45,
        "three responses while active: {got}"
    );

    let requests = world.mock.requests();
    anyhow::ensure!(requests.len() == 4, "{} requests", requests.len());
    let first = input_text(&requests[0]);
    anyhow::ensure!(
        first.contains("<goal_context>")
            && first.contains("make the build green")
            && first.contains("The user set the goal"),
        "{first}"
    );
    let tools = requests[0].tool_names();
    for tool in ["get_goal", "create_goal", "update_goal"] {
        anyhow::ensure!(tools.iter().any(|t| t == tool), "{tools:?}");
    }
    let answer = requests[3]
        .tool_output("g1")
        .map(ToString::to_string)
        .unwrap_or_default();
    anyhow::ensure!(answer.contains("complete"), "{answer}");

    // The next turn is the user's: the complete goal starts nothing more.
    let turn = server.start_turn(&thread_id, "USER-ASKS").await?;
    server.read_turn_completed(&turn).await?;
    let requests = world.mock.requests();
    anyhow::ensure!(requests.len() == 5, "{} requests", requests.len());
    anyhow::ensure!(input_text(&requests[4]).contains("USER-ASKS"));

    // A restart keeps the goal: read before the thread is loaded, announced on resume.
    drop(server);
    let mut server = world.server().await?;
    let got = server
        .request("thread/goal/get", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(got["goal"]["status"] == "complete", "{got}");
    server
        .request("thread/resume", json!({"threadId": thread_id}))
        .await?;
    let announced = server.read_notification("thread/goal/updated").await?;
    anyhow::ensure!(
        announced["params"]["goal"]["objective"] == "make the build green",
        "{announced}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_wraps_up_the_turn_and_stops() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("s1", ["echo", "one"])]).with_usage(RESPONSE),
        Turn::new([shell_call("s2", ["echo", "two"])]).with_usage(RESPONSE),
        Turn::new([assistant_message("summary of where it stands")]).with_usage(RESPONSE),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    server
        .request(
            "thread/goal/set",
            json!({"threadId": thread_id, "objective": "port the parser", "tokenBudget": 20}),
        )
        .await?;
    let messages = until_turns_completed(&mut server, 1).await?;
    let statuses: Vec<&Value> = goal_updates(&messages)
        .iter()
        .map(|u| &u["goal"]["status"])
        .collect();
    anyhow::ensure!(
        statuses.last().is_some_and(|s| *s == "budgetLimited"),
        "{statuses:?}"
    );
    let requests = world.mock.requests();
    anyhow::ensure!(requests.len() == 3, "{} requests", requests.len());
    let wrap_up = input_text(&requests[2]);
    anyhow::ensure!(
        wrap_up.contains("token budget of the goal is spent"),
        "{wrap_up}"
    );
    let got = server
        .request("thread/goal/get", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(
        got["goal"]["status"] == "budgetLimited"
            && got["goal"]["tokensUsed"] == 30
            && got["goal"]["tokenBudget"] == 20,
        "{got}"
    );
    // Removing the budget and resuming the goal starts work again.
    let set = server
        .request(
            "thread/goal/set",
            json!({"threadId": thread_id, "tokenBudget": null, "status": "active"}),
        )
        .await?;
    anyhow::ensure!(
        set["goal"]["tokenBudget"].is_null() && set["goal"]["tokensUsed"] == 30,
        "{set}"
    );
    // The script is used up: that turn fails, and a failed turn blocks the goal.
    let messages = until_turns_completed(&mut server, 1).await?;
    let last = goal_updates(&messages)
        .last()
        .map(|u| u["goal"]["status"].clone());
    anyhow::ensure!(last == Some(json!("blocked")), "{:?}", methods(&messages));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_blocks_the_goal_and_bad_changes_are_refused() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(Fault::HttpStatus {
        status: 400,
        body: None,
        retry_after: None,
    })]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let cases = [
        (json!({"threadId": thread_id}), "no goal"),
        (
            json!({"threadId": thread_id, "status": "paused"}),
            "no goal",
        ),
        (
            json!({"threadId": thread_id, "objective": "   "}),
            "must not be empty",
        ),
        (
            json!({"threadId": thread_id, "objective": "x".repeat(4001)}),
            "at most 4000 characters",
        ),
        (
            json!({"threadId": thread_id, "objective": "ok", "tokenBudget": 0}),
            "must be positive",
        ),
        (
            json!({"threadId": thread_id, "objective": "ok", "status": "bogus"}),
            "bogus",
        ),
        (
            json!({"threadId": "00000000-0000-7000-8000-000000000000", "objective": "ok"}),
            "not loaded",
        ),
    ];
    for (params, expected) in cases {
        let result = server.request("thread/goal/set", params.clone()).await;
        let error = match result {
            Err(keel_test_support::Error::JsonRpc { error, .. }) => error,
            other => anyhow::bail!("{params}: expected an error, got {other:?}"),
        };
        let message = error["message"].as_str().unwrap_or_default();
        anyhow::ensure!(message.contains(expected), "{params}: {error}");
    }
    let cleared = server
        .request("thread/goal/clear", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(cleared == json!({"cleared": false}), "{cleared}");
    anyhow::ensure!(world.mock.requests().is_empty(), "nothing ran");

    server
        .request(
            "thread/goal/set",
            json!({"threadId": thread_id, "objective": "ship it"}),
        )
        .await?;
    let messages = until_turns_completed(&mut server, 1).await?;
    let last = goal_updates(&messages)
        .last()
        .map(|u| u["goal"]["status"].clone());
    anyhow::ensure!(last == Some(json!("blocked")), "{:?}", methods(&messages));
    let cleared = server
        .request("thread/goal/clear", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(cleared == json!({"cleared": true}), "{cleared}");
    server.read_notification("thread/goal/cleared").await?;
    let got = server
        .request("thread/goal/get", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(got == json!({"goal": null}), "{got}");
    Ok(())
}
