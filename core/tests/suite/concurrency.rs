use std::sync::Arc;

use futures::future::try_join_all;
use keel_test_support::{MockModelServer, Turn, assistant_message, shell_call};

use super::common::*;

/// 32 conversations on one engine and one mock, each with a shell call and a final answer;
/// the responder routes by the task text so the order of requests does not matter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_conversations_at_once() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let body = request.body.to_string();
            let task = (0..32).find(|n| body.contains(&format!("task-{n}.")))?;
            Some(if request.tool_output_call_ids().is_empty() {
                Turn::new([shell_call(
                    format!("call-{task}"),
                    ["echo", &format!("out-{task}")],
                )])
            } else {
                Turn::new([assistant_message(format!("finished {task}"))])
            })
        })
        .start()
        .await?;
    let env = Arc::new(TestEnv::with_mock(mock, &[])?);
    let runs = (0..32).map(|n| {
        let env = env.clone();
        async move {
            let new = env.start().await?;
            say(&new.conversation, &format!("task-{n}.")).await?;
            let events = until_turn_end(&new.conversation).await?;
            anyhow::ensure!(
                last_agent_message(&events) == Some(format!("finished {n}")),
                "conversation {n}: {:?}",
                kinds(&events)
            );
            Ok(())
        }
    });
    try_join_all(runs).await?;
    assert_eq!(env.mock.requests().len(), 64);
    env.mock.verify()?;
    Ok(())
}
