//! Many streams at once, with no head-of-line blocking.

use std::time::Duration;

use keel_test_support::{CapturedRequest, Fault, MockModelServer, Turn, assistant_message};
use pretty_assertions::assert_eq;

use super::common::{WAIT, responses_body, stream};

/// The user text of a captured Responses request.
fn user_text(request: &CapturedRequest) -> String {
    request.body["input"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_streams_complete_while_one_stalls() -> anyhow::Result<()> {
    // The responder answers each conversation with its own text, whatever the arrival order;
    // the "stalled" conversation goes quiet for far longer than the test may run.
    let server = MockModelServer::builder()
        .responder(|request| {
            let text = user_text(request);
            let turn = Turn::new([assistant_message(format!("echo {text}"))])
                .with_event_delay(Duration::from_millis(5));
            Some(if text == "stalled" {
                turn.with_fault(Fault::stall_after(1, Duration::from_secs(3600)))
            } else {
                turn
            })
        })
        .start()
        .await?;
    let uri = server.uri();

    let stalled = tokio::spawn({
        let uri = uri.clone();
        async move { stream(&uri, "/responses", &responses_body("stalled")).await }
    });
    server.wait_for_requests(1, WAIT).await?;

    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..64 {
        let uri = uri.clone();
        tasks.spawn(async move {
            let text = format!("conversation {index}");
            let outcome = stream(&uri, "/responses", &responses_body(&text)).await?;
            let reply: String = outcome
                .events
                .iter()
                .filter(|e| e.event == "response.output_text.delta")
                .map(|e| e.json()["delta"].as_str().unwrap_or_default().to_owned())
                .collect();
            anyhow::Ok((text, reply))
        });
    }
    let mut completed = 0;
    while let Some(joined) = tokio::time::timeout(WAIT, tasks.join_next()).await? {
        let (text, reply) = joined??;
        assert_eq!(reply, format!("echo {text}"));
        completed += 1;
    }
    assert_eq!(completed, 64);
    assert!(
        !stalled.is_finished(),
        "the stalled stream should still be open"
    );
    stalled.abort();
    assert_eq!(server.requests().len(), 65);
    server.verify()?;
    Ok(())
}
