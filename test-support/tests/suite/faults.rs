//! Each scripted fault, as a client sees it.

use std::time::Duration;

use keel_test_support::{Fault, MockModelServer, Script, Turn, assistant_message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{WAIT, responses_body, stream};

async fn serve(turn: Turn) -> anyhow::Result<MockModelServer> {
    Ok(MockModelServer::start(Script::new([turn])).await?)
}

fn three_words() -> Turn {
    Turn::new([assistant_message("one two three")])
}

/// Event names of a normal stream of `three_words()`, for positions.
const NORMAL: [&str; 9] = [
    "response.created",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
];

async fn post(server: &MockModelServer) -> anyhow::Result<reqwest::Response> {
    let response = tokio::time::timeout(
        WAIT,
        super::common::http()
            .post(format!("{}/responses", server.uri()))
            .json(&responses_body("hi"))
            .send(),
    )
    .await??;
    Ok(response)
}

#[tokio::test]
async fn http_status_429_carries_retry_after_and_a_json_error() -> anyhow::Result<()> {
    let server = serve(Turn::failing(Fault::rate_limited(7))).await?;
    let response = post(&server).await?;
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("7")
    );
    let body: Value = response.json().await?;
    assert_eq!(body["error"]["code"], json!("rate_limit_exceeded"));
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn http_status_500_and_401_with_custom_bodies() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([
        Turn::failing(Fault::http_with_body(500, "upstream exploded")),
        Turn::failing(Fault::http_with_body(
            401,
            r#"{"error":{"message":"bad key"}}"#,
        )),
    ]))
    .await?;
    let first = post(&server).await?;
    assert_eq!(first.status().as_u16(), 500);
    assert_eq!(first.headers().get("retry-after"), None);
    assert_eq!(first.text().await?, "upstream exploded");
    let second = post(&server).await?;
    assert_eq!(second.status().as_u16(), 401);
    assert_eq!(
        second
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    assert_eq!(
        second.json::<Value>().await?,
        json!({"error": {"message": "bad key"}})
    );
    Ok(())
}

#[tokio::test]
async fn disconnect_after_n_events_drops_the_connection() -> anyhow::Result<()> {
    let server = serve(three_words().with_fault(Fault::disconnect_after(4))).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    let names: Vec<&str> = outcome.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, NORMAL[..4].to_vec());
    assert!(
        outcome.error.is_some(),
        "a disconnect must look like an error, not a clean end"
    );
    Ok(())
}

#[tokio::test]
async fn stall_pauses_mid_stream_then_carries_on() -> anyhow::Result<()> {
    let stall = Duration::from_millis(400);
    let server = serve(three_words().with_fault(Fault::stall_after(3, stall))).await?;
    let started = std::time::Instant::now();
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.events.len(), NORMAL.len() + 1);
    // Measured from before the request: on a busy machine the third event may itself arrive
    // late, so the gap the client sees between the two can be shorter than the stall.
    let fourth = outcome.events[3].at.duration_since(started);
    assert!(
        fourth >= stall,
        "the fourth event came {fourth:?} after the request"
    );
    Ok(())
}

#[tokio::test]
async fn stall_is_visible_to_a_client_idle_timeout() -> anyhow::Result<()> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;

    let server =
        serve(three_words().with_fault(Fault::stall_after(2, Duration::from_secs(60)))).await?;
    let mut events = post(&server).await?.bytes_stream().eventsource();
    for _ in 0..2 {
        tokio::time::timeout(WAIT, events.next()).await?;
    }
    let idle = tokio::time::timeout(Duration::from_millis(300), events.next()).await;
    assert!(
        idle.is_err(),
        "the third event must not arrive during the stall"
    );
    Ok(())
}

#[tokio::test]
async fn malformed_data_is_sent_once_then_the_stream_continues() -> anyhow::Result<()> {
    let server = serve(three_words().with_fault(Fault::malformed_after(1))).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    assert_eq!(outcome.error, None);
    let unparsable: Vec<usize> = outcome
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| serde_json::from_str::<Value>(&e.data).is_err())
        .map(|(index, _)| index)
        .collect();
    assert_eq!(unparsable, vec![1]);
    assert_eq!(
        outcome.events.last().map(|e| e.event.as_str()),
        Some("response.completed")
    );
    Ok(())
}

#[tokio::test]
async fn end_without_completed_ends_cleanly_without_the_terminal_event() -> anyhow::Result<()> {
    let server = serve(three_words().with_fault(Fault::EndWithoutCompleted)).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    assert_eq!(outcome.error, None);
    let names: Vec<&str> = outcome.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, NORMAL.to_vec());
    Ok(())
}

#[tokio::test]
async fn response_failed_replaces_completed() -> anyhow::Result<()> {
    let server =
        serve(three_words().with_fault(Fault::response_failed("server_error", "boom"))).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    let last = outcome
        .events
        .last()
        .map(super::common::Received::json)
        .unwrap_or_default();
    assert_eq!(last["type"], json!("response.failed"));
    assert_eq!(
        last["response"]["error"],
        json!({"code": "server_error", "message": "boom"})
    );
    Ok(())
}

#[tokio::test]
async fn event_delay_spaces_out_events() -> anyhow::Result<()> {
    let delay = Duration::from_millis(40);
    let server = serve(three_words().with_event_delay(delay)).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    let (Some(first), Some(last)) = (outcome.events.first(), outcome.events.last()) else {
        anyhow::bail!("no events");
    };
    let spread = last.at - first.at;
    let minimum = delay * u32::try_from(outcome.events.len() - 1)?;
    assert!(
        spread >= minimum,
        "events spread over {spread:?}, expected at least {minimum:?}"
    );
    Ok(())
}

#[tokio::test]
async fn faults_apply_to_chat_completions_too() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([
        Turn::failing(Fault::http(503)),
        three_words().with_fault(Fault::disconnect_after(2)),
    ]))
    .await?;
    let body = json!({"model": "mock-model", "stream": true, "messages": []});
    let client = super::common::http();
    let url = format!("{}/chat/completions", server.uri());
    let failed = tokio::time::timeout(WAIT, client.post(&url).json(&body).send()).await??;
    assert_eq!(failed.status().as_u16(), 503);
    let outcome = stream(&server.uri(), "/chat/completions", &body).await?;
    assert_eq!(outcome.events.len(), 2);
    assert!(outcome.error.is_some());
    Ok(())
}
