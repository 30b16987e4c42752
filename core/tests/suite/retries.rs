use std::time::Duration;

use keel_protocol::EventMsg;
use keel_test_support::{Fault, Script, Turn, assistant_message};
use pretty_assertions::assert_eq;

use super::common::*;

async fn run(
    script: Script,
    overrides: &[(&str, toml::Value)],
) -> anyhow::Result<(TestEnv, Vec<keel_protocol::Event>)> {
    let env = TestEnv::new(script, overrides).await?;
    let new = env.start().await?;
    say(&new.conversation, "hi").await?;
    let events = until_turn_end(&new.conversation).await?;
    drop(new);
    Ok((env, events))
}

fn retry_notices(events: &[keel_protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.msg {
            EventMsg::StreamError(notice) => Some(notice.message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_a_500_then_succeeds() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::failing(Fault::http(500)),
        Turn::new([assistant_message("recovered")]),
    ]);
    let (env, events) = run(
        script,
        &[("model_providers.mock.request_max_retries", 2.into())],
    )
    .await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("recovered"));
    let notices = retry_notices(&events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("500") && notices[0].contains("1/2"),
        "{notices:?}"
    );
    assert_eq!(env.mock.requests().len(), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honours_retry_after_on_429() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::failing(Fault::rate_limited(0)),
        Turn::new([assistant_message("ok")]),
    ]);
    let (_env, events) = run(
        script,
        &[("model_providers.mock.request_max_retries", 1.into())],
    )
    .await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("ok"));
    let notices = retry_notices(&events);
    assert!(
        notices
            .iter()
            .any(|n| n.contains("429") && n.contains("in 0ms")),
        "{notices:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gives_up_after_the_retry_budget_with_an_error() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::failing(Fault::http(500)),
        Turn::failing(Fault::http(503)),
    ]);
    let (env, events) = run(
        script,
        &[("model_providers.mock.request_max_retries", 1.into())],
    )
    .await?;
    let Some(EventMsg::Error(err)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("expected an error, got {:?}", kinds(&events));
    };
    assert!(err.message.contains("503"), "{}", err.message);
    assert_eq!(env.mock.requests().len(), 2);
    Ok(())
}

/// A 429 for an exhausted quota is not a rate limit: waiting does not cure it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_quota_fails_at_once() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(Fault::http_with_body(
        429,
        r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    ))]);
    let (env, events) = run(
        script,
        &[("model_providers.mock.request_max_retries", 3.into())],
    )
    .await?;
    let Some(EventMsg::Error(err)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("expected an error, got {:?}", kinds(&events));
    };
    assert!(
        err.message.contains("exceeded your current quota"),
        "{}",
        err.message
    );
    assert!(retry_notices(&events).is_empty());
    assert_eq!(
        env.mock.requests().len(),
        1,
        "an exhausted quota must not be retried"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_fails_at_once_with_the_server_message() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(Fault::http_with_body(
        401,
        "{\"error\":{\"message\":\"bad key\"}}",
    ))]);
    let (env, events) = run(
        script,
        &[("model_providers.mock.request_max_retries", 3.into())],
    )
    .await?;
    let Some(EventMsg::Error(err)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("expected an error, got {:?}", kinds(&events));
    };
    assert!(
        err.message.contains("401") && err.message.contains("bad key"),
        "{}",
        err.message
    );
    assert_eq!(env.mock.requests().len(), 1, "401 must not be retried");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_is_retried_whole() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("partial answer that breaks")])
            .with_fault(Fault::disconnect_after(2)),
        Turn::new([assistant_message("complete answer")]),
    ]);
    let (env, events) = run(
        script,
        &[("model_providers.mock.stream_max_retries", 1.into())],
    )
    .await?;
    assert_eq!(
        last_agent_message(&events).as_deref(),
        Some("complete answer")
    );
    assert_eq!(retry_notices(&events).len(), 1);
    assert_eq!(env.mock.requests().len(), 2);
    Ok(())
}

/// An attempt that fails after its message was complete (but before `response.completed`)
/// announces nothing: the only finished message is the retry's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_announces_no_finished_items() -> anyhow::Result<()> {
    // created, item added, part added, 5 deltas, text done, part done, item done: 11 events.
    let script = Script::new([
        Turn::new([assistant_message("partial answer text that is")])
            .with_fault(Fault::disconnect_after(11)),
        Turn::new([assistant_message("RECOVERED")]),
    ]);
    let (_env, events) = run(
        script,
        &[("model_providers.mock.stream_max_retries", 1.into())],
    )
    .await?;
    let finished: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::AgentMessage(message) => Some(message.message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec!["RECOVERED".to_string()]);
    assert_eq!(retry_notices(&events).len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_times_out_and_is_retried() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("stalls")])
            .with_fault(Fault::stall_after(1, Duration::from_secs(60))),
        Turn::new([assistant_message("fresh")]),
    ]);
    let (_env, events) = run(
        script,
        &[
            ("model_providers.mock.stream_max_retries", 1.into()),
            ("model_providers.mock.stream_idle_timeout_ms", 300.into()),
        ],
    )
    .await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("fresh"));
    let notices = retry_notices(&events);
    assert!(notices.iter().any(|n| n.contains("idle")), "{notices:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_wire_api_works_end_to_end() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([keel_test_support::shell_call(
            "c1",
            ["bash", "-lc", "echo chat"],
        )]),
        Turn::new([assistant_message("chat done")]),
    ]);
    let (env, events) = run(script, &[("model_providers.mock.wire_api", "chat".into())]).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("chat done"));
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].path.ends_with("/chat/completions"),
        "{}",
        requests[0].path
    );
    env.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_retry_after_falls_back_to_backoff() -> anyhow::Result<()> {
    // A Retry-After too large for a `Duration` must not panic the turn (which would leave
    // the conversation stuck with a turn that never ends).
    let script = Script::new([
        Turn::failing(Fault::HttpStatus {
            status: 429,
            body: None,
            retry_after: Some("1e300".to_string()),
        }),
        Turn::new([assistant_message("ok")]),
    ]);
    let (env, events) = tokio::time::timeout(
        Duration::from_secs(30),
        run(
            script,
            &[("model_providers.mock.request_max_retries", 1.into())],
        ),
    )
    .await??;
    assert_eq!(last_agent_message(&events).as_deref(), Some("ok"));
    assert_eq!(retry_notices(&events).len(), 1);
    assert_eq!(env.mock.requests().len(), 2);
    Ok(())
}
