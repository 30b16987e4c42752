use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, assistant_message};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_api_key_fails_the_first_request_naming_the_variable() -> anyhow::Result<()> {
    let script = Script::new([Turn::new([assistant_message("never sent")])]);
    let env = TestEnv::new(
        script,
        &[(
            "model_providers.mock.env_key",
            "KEEL_TEST_ABSENT_KEY".into(),
        )],
    )
    .await?;
    let new = env.start().await?;
    say(&new.conversation, "hi").await?;
    let events = until_turn_end(&new.conversation).await?;
    let Some(EventMsg::Error(err)) = events.last().map(|e| e.msg.clone()) else {
        anyhow::bail!("expected an error, got {:?}", kinds(&events));
    };
    assert!(
        err.message.contains("KEEL_TEST_ABSENT_KEY"),
        "{}",
        err.message
    );
    assert!(env.mock.requests().is_empty());

    // The conversation stays usable after the error.
    say(&new.conversation, "again").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert!(matches!(
        events.last().map(|e| &e.msg),
        Some(EventMsg::Error(_))
    ));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_value_names_file_key_and_expectation() -> anyhow::Result<()> {
    let script = Script::new([]);
    let env = TestEnv::new(script, &[("approval_policy", "sometimes".into())]).await?;
    let err = env
        .config()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains("approval_policy"), "{err}");
    assert!(err.contains("untrusted"), "{err}");
    Ok(())
}
