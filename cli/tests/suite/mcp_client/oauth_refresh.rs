//! A login to an OAuth-protected MCP server through the browser flow, a tool call from a
//! turn with the stored token, and the token refreshed without the user: once when the server
//! rejects it (`401 invalid_token`), once when it has expired on this side before Keel uses it.
//! The server is test-support's `OAuthMcpServer` (authorization server and MCP server in one).

use keel_test_support::{
    MockModelServer, OAuthEvent, OAuthMcpServer, Script, Turn, assistant_message, function_call,
    write_config,
};
use serde_json::Value;

/// A `$BROWSER` that follows the authorization redirect back to Keel, as a signed-in browser
/// does; `marker` records that it ran.
fn browser(dir: &std::path::Path, marker: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\necho opened >> '{}'\nexec curl -sS -L -o /dev/null \"$1\"\n",
            marker.display()
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755))?;
    Ok(browser)
}

/// Runs `keel ARGS` with `home` and `browser`; its stdout, or an error with both streams.
async fn keel(
    home: &std::path::Path,
    browser: &std::path::Path,
    args: &[&str],
) -> anyhow::Result<String> {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(args)
        .env("KEEL_HOME", home)
        .env("BROWSER", browser)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), run).await??;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    anyhow::ensure!(
        output.status.success(),
        "keel {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout)
}

fn whoami_turns() -> [Turn; 2] {
    [
        Turn::new([function_call("c1", "mcp__docs__whoami", "{}")]),
        Turn::new([assistant_message("done")]),
    ]
}

fn grants(events: &[OAuthEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            OAuthEvent::Granted { grant_type, .. } => Some(grant_type.clone()),
            OAuthEvent::McpRequest { .. } => None,
        })
        .collect()
}

fn rejected(events: &[OAuthEvent]) -> usize {
    events
        .iter()
        .filter(|event| {
            matches!(
                event,
                OAuthEvent::McpRequest {
                    accepted: false,
                    token: Some(_),
                    ..
                }
            )
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_calls_the_tool_and_its_token_refreshes_without_the_user() -> anyhow::Result<()> {
    let server = OAuthMcpServer::start().await?;
    let mut turns = Vec::from(whoami_turns());
    turns.extend(whoami_turns());
    let mock = MockModelServer::start(Script::new(turns)).await?;
    let home = tempfile::tempdir()?;
    let scratch = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("mcp_servers.docs.url", toml::Value::String(server.url()))],
    )?;
    let opened = scratch.path().join("browser-opened");
    let browser = browser(scratch.path(), &opened)?;

    // A client ID metadata document cannot be used without one configured: said, and
    // nothing asked of the servers.
    let cimd = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args([
            "mcp",
            "login",
            "docs",
            "--oauth-client-registration",
            "cimd",
        ])
        .env("KEEL_HOME", home.path())
        .env("BROWSER", &browser)
        .stdin(std::process::Stdio::null())
        .output()
        .await?;
    assert_eq!(cimd.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&cimd.stderr).contains("oauth.client_metadata_url"),
        "{}",
        String::from_utf8_lossy(&cimd.stderr)
    );
    assert!(server.events().is_empty());

    keel(
        home.path(),
        &browser,
        &["mcp", "login", "docs", "--oauth-client-registration", "dcr"],
    )
    .await?;
    assert_eq!(grants(&server.events()), ["authorization_code"]);
    assert_eq!(std::fs::read_to_string(&opened)?.lines().count(), 1);

    // The server withdraws the token: the next request is refused, the client refreshes
    // and retries, and the call goes through with the new token.
    server.revoke_access_tokens();
    let out = keel(
        home.path(),
        &browser,
        &[
            "exec",
            "-C",
            &scratch.path().display().to_string(),
            "ask who I am",
        ],
    )
    .await?;
    assert_eq!(out, "done\n");
    let events = server.events();
    assert_eq!(grants(&events), ["authorization_code", "refresh_token"]);
    assert!(
        rejected(&events) >= 1,
        "the revoked token was tried first: {events:?}"
    );
    let output = mock
        .requests()
        .get(1)
        .and_then(|request| request.tool_output("c1").cloned());
    assert_eq!(
        output.as_ref().and_then(Value::as_str),
        Some("called with token 2"),
        "the model saw the tool's answer to the refreshed token"
    );
    let credentials = home.path().join("mcp_credentials.json");
    let stored = std::fs::read_to_string(&credentials)?;
    assert!(stored.contains("access-2"), "the refreshed token is kept");

    // A token that expired while Keel was not running (the stored one made an hour older
    // than its lifetime) is refreshed before it is sent: no refused request this time.
    let mut file: Value = serde_json::from_str(&stored)?;
    let received = &mut file["docs"]["credentials"]["token_received_at"];
    let at = received.as_u64().unwrap_or_default();
    *received = Value::from(at.saturating_sub(7200));
    std::fs::write(&credentials, serde_json::to_vec(&file)?)?;
    let refused_before = rejected(&server.events());
    let out = keel(
        home.path(),
        &browser,
        &["exec", "-C", &scratch.path().display().to_string(), "again"],
    )
    .await?;
    assert_eq!(out, "done\n");
    let events = server.events();
    assert_eq!(
        grants(&events),
        ["authorization_code", "refresh_token", "refresh_token"]
    );
    assert_eq!(rejected(&events), refused_before, "{events:?}");
    assert!(std::fs::read_to_string(&credentials)?.contains("access-3"));
    assert_eq!(
        std::fs::read_to_string(&opened)?.lines().count(),
        1,
        "the browser opened for the login only"
    );

    // Tokens are never written to a rollout.
    let sessions = home.path().join("sessions");
    for rollout in crate::suite::rollout_files(&sessions)? {
        let text = std::fs::read_to_string(&rollout)?;
        assert!(
            !text.contains("access-"),
            "{} holds a token",
            rollout.display()
        );
        assert!(
            !text.contains("refresh-"),
            "{} holds a token",
            rollout.display()
        );
    }
    Ok(())
}
