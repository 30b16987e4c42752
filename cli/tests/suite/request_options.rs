//! Request options from `config.toml` as Codex 0.169 sends them: `service_tier` (`flex` and
//! `priority` sent, `fast` as `priority`, `default` not at all, anything else refused), and
//! `openai_base_url` pointing the built-in `openai` provider elsewhere.

use std::process::Stdio;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::Value;

/// Runs `keel exec hi` with `config` (extra keys over the mock's) and `env`; returns the exit
/// code, stderr and the first request's body.
async fn first_request(
    mock: &MockModelServer,
    config: &[(&str, toml::Value)],
    env: &[(&str, &str)],
) -> anyhow::Result<(i32, String, Option<Value>)> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), config.iter().cloned())?;
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["exec", "hi"])
            .current_dir(ws.path())
            .env("KEEL_HOME", home.path())
            .env_remove("OPENAI_BASE_URL")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("keel exec did not finish")??;
    let body = mock.requests().last().map(|request| request.body.clone());
    Ok((
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        body,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_tier_is_sent_as_codex_sends_it() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message("ok")])]))
        .repeat(true)
        .start()
        .await?;
    for (tier, sent) in [
        ("flex", Some("flex")),
        ("priority", Some("priority")),
        ("fast", Some("priority")),
        ("default", None),
    ] {
        let (code, stderr, body) =
            first_request(&mock, &[("service_tier", tier.into())], &[]).await?;
        assert_eq!(code, 0, "{tier}: {stderr}");
        let body = body.unwrap_or_default();
        assert_eq!(body["service_tier"].as_str(), sent, "{tier}: {body}");
    }
    let (code, stderr, _) = first_request(&mock, &[("service_tier", "turbo".into())], &[]).await?;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("turbo") && stderr.contains("flex"),
        "{stderr}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_base_url_points_the_openai_provider_elsewhere() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message("via openai")])]))
        .api_key("sk-test")
        .start()
        .await?;
    let (code, stderr, body) = first_request(
        &mock,
        &[
            ("model_provider", "openai".into()),
            ("openai_base_url", mock.uri().into()),
        ],
        &[("OPENAI_API_KEY", "sk-test")],
    )
    .await?;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(body.unwrap_or_default()["model"], "mock-model");
    Ok(())
}
