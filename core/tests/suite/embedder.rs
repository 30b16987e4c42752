//! What an embedding program sets up in code: its own tools (asked about when they say so,
//! with bad arguments told to the model), names that cannot clash, and API keys that never
//! touch the environment.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use keel_core::{
    ConversationManager, Tool, ToolApproval, ToolContext, ToolError, ToolRegistrationError,
};
use keel_protocol::{EventMsg, ReviewDecision};
use keel_test_support::{Script, Turn, assistant_message, function_call};
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::*;

/// Deletes a (pretend) record: a tool that changes something, so the user is asked first.
struct DeleteRecord {
    deleted: Arc<AtomicUsize>,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The record to delete.
    id: u32,
}

impl Tool for DeleteRecord {
    type Args = DeleteArgs;
    type Output = String;
    const NAME: &'static str = "delete_record";

    fn description(&self) -> String {
        "Deletes a record.".into()
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::Always
    }

    async fn call(&self, ctx: ToolContext, args: DeleteArgs) -> Result<String, ToolError> {
        self.deleted.fetch_add(1, Ordering::SeqCst);
        Ok(format!("deleted {} (call {})", args.id, ctx.call_id()))
    }
}

fn manager_with(deleted: &Arc<AtomicUsize>) -> anyhow::Result<ConversationManager> {
    Ok(ConversationManager::builder()
        .env(Arc::new(|_| None))
        .tool(DeleteRecord {
            deleted: deleted.clone(),
        })
        .build()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_wants_approval_runs_only_once_the_user_says_yes() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call("d1", "delete_record", r#"{"id":7}"#)]),
        Turn::new([function_call("d2", "delete_record", r#"{"id":8}"#)]),
        Turn::new([function_call("d3", "delete_record", r#"{"id":"seven"}"#)]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut env = TestEnv::new(script, &[("approval_policy", "on-request".into())]).await?;
    let deleted = Arc::new(AtomicUsize::new(0));
    env.manager = manager_with(&deleted)?;
    let new = env.start().await?;
    say(&new.conversation, "clean up").await?;
    let (_, requests) = answer_approvals(
        &new.conversation,
        &[
            ReviewDecision::Denied,
            ReviewDecision::Approved,
            ReviewDecision::Approved,
        ],
    )
    .await?;
    // Asked as a command naming the tool and its arguments.
    let asked: Vec<Vec<String>> = requests.iter().map(|r| r.command.clone()).collect();
    assert_eq!(
        asked,
        [
            vec!["delete_record".to_string(), r#"{"id":7}"#.to_string()],
            vec!["delete_record".to_string(), r#"{"id":8}"#.to_string()],
            vec!["delete_record".to_string(), r#"{"id":"seven"}"#.to_string()],
        ]
    );
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    let requests = env.mock.requests();
    let output = |call: &str| {
        requests
            .iter()
            .find_map(|r| {
                r.tool_output(call)
                    .and_then(|o| o.as_str().map(str::to_string))
            })
            .unwrap_or_default()
    };
    assert_eq!(
        output("d1"),
        "the user declined the call to `delete_record`"
    );
    assert_eq!(output("d2"), "deleted 8 (call d2)");
    // Arguments that do not match the schema are the model's to fix, not a failed turn.
    assert!(
        output("d3").starts_with("invalid arguments for `delete_record`"),
        "{}",
        output("d3")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_never_a_tool_that_wants_approval_runs_without_asking() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call("d1", "delete_record", r#"{"id":7}"#)]),
        Turn::new([function_call("d2", "delete_record", r#"{"id":"x"}"#)]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut env = TestEnv::new(script, &[]).await?;
    let deleted = Arc::new(AtomicUsize::new(0));
    env.manager = manager_with(&deleted)?;
    let new = env.start().await?;
    say(&new.conversation, "clean up").await?;
    let (events, requests) = answer_approvals(&new.conversation, &[]).await?;
    assert_eq!(requests.len(), 0);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    // Each call is announced as built-in calls are: begin, then end with the output.
    let calls: Vec<(String, String, bool)> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::ToolCallBegin(begin) => Some((
                format!("begin {}", begin.call_id),
                begin.arguments.to_string(),
                true,
            )),
            EventMsg::ToolCallEnd(end) => Some((
                format!("end {} {}", end.call_id, end.tool),
                end.output.clone(),
                end.success,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    assert_eq!(
        calls[0],
        ("begin d1".to_string(), r#"{"id":7}"#.to_string(), true)
    );
    assert_eq!(
        calls[1],
        (
            "end d1 delete_record".to_string(),
            "deleted 7 (call d1)".to_string(),
            true
        )
    );
    assert_eq!(calls[2].0, "begin d2");
    assert_eq!(calls[3].0, "end d2 delete_record");
    assert!(calls[3].1.starts_with("invalid arguments"), "{calls:#?}");
    assert!(!calls[3].2);
    Ok(())
}

#[test]
fn tool_names_are_checked_when_the_manager_is_built() {
    let deleted = Arc::new(AtomicUsize::new(0));
    let twice = ConversationManager::builder()
        .tool(DeleteRecord {
            deleted: deleted.clone(),
        })
        .tool(DeleteRecord { deleted })
        .build();
    assert_eq!(
        twice.err(),
        Some(ToolRegistrationError::Duplicate("delete_record".into()))
    );

    struct Named(&'static str, &'static str);
    impl keel_core::DynTool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn spec(&self) -> serde_json::Value {
            serde_json::json!({"type": "function", "name": self.1})
        }
        fn approval(&self) -> ToolApproval {
            ToolApproval::Never
        }
        fn handle(
            &self,
            _ctx: ToolContext,
            _input: keel_core::ToolInput,
        ) -> futures::future::BoxFuture<'_, Result<String, ToolError>> {
            Box::pin(async { Ok(String::new()) })
        }
    }
    let shadowing = ConversationManager::builder()
        .tool(Named("shell", "shell"))
        .build();
    assert_eq!(
        shadowing.err(),
        Some(ToolRegistrationError::Duplicate("shell".into()))
    );
    let spaced = ConversationManager::builder()
        .tool(Named("look up", "look up"))
        .build();
    assert_eq!(
        spaced.err(),
        Some(ToolRegistrationError::InvalidName("look up".into()))
    );
    // A definition that names another tool would be offered without a handler.
    let mismatched = ConversationManager::builder()
        .tool(Named("lookup", "search"))
        .build();
    assert_eq!(
        mismatched.err(),
        Some(ToolRegistrationError::SpecNameMismatch {
            name: "lookup".into(),
            offered: "search".into()
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_set_in_code_is_sent_and_the_environment_is_not_read() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message("hi")])]);
    // The provider names an environment variable that is not set: without the key from
    // code the request would fail naming it.
    let mut env = TestEnv::new(
        script,
        &[("model_providers.mock.env_key", "KEEL_TEST_KEY".into())],
    )
    .await?;
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    env.manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .api_key_fn(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Some("sk-from-code".to_string())
        }))
        .build()?;
    let new = env.start().await?;
    say(&new.conversation, "hello").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("hi"));
    let requests = env.mock.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-code")
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    Ok(())
}
