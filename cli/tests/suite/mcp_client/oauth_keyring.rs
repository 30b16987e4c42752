//! `mcp_oauth_credentials_store`: logins in the desktop keyring (a throwaway GNOME Keyring on a
//! private D-Bus session), a clear refusal when `keyring` is asked for and none answers, and
//! `auto` falling back to the credentials file.

use keel_test_support::{
    MockModelServer, OAuthMcpServer, Script, SecretServiceSession, Turn, assistant_message,
    function_call, write_config,
};
use serde_json::Value;

/// Runs `keel ARGS` with `home`, a `$BROWSER` that follows the sign-in redirect, and the
/// session bus `bus`; the whole output.
async fn keel(
    home: &std::path::Path,
    browser: &std::path::Path,
    bus: &str,
    args: &[&str],
) -> anyhow::Result<std::process::Output> {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(args)
        .env("KEEL_HOME", home)
        .env("BROWSER", browser)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    Ok(tokio::time::timeout(std::time::Duration::from_secs(120), run).await??)
}

fn ok(output: &std::process::Output, what: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A `$BROWSER` that follows the authorization redirect back to Keel.
fn browser(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        "#!/bin/sh\nexec curl -sS -L -o /dev/null \"$1\"\n",
    )?;
    super::oauth::make_executable(&browser)?;
    Ok(browser)
}

/// A home whose config names the OAuth server `docs` and the store `store`.
fn home_with(
    server: &OAuthMcpServer,
    mock: &MockModelServer,
    store: &str,
) -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("mcp_servers.docs.url", toml::Value::String(server.url())),
            (
                "mcp_oauth_credentials_store",
                toml::Value::String(store.to_string()),
            ),
        ],
    )?;
    Ok(home)
}

/// No session bus at all.
const NO_BUS: &str = "unix:path=/nonexistent/keel-no-bus";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_keyring),
    ignore = "needs dbus-daemon, gnome-keyring-daemon and gdbus (Debian: dbus-daemon, gnome-keyring, libglib2.0-bin; .ci/run installs them)"
)]
async fn a_login_kept_in_the_keyring_calls_the_tool_and_logs_out() -> anyhow::Result<()> {
    let keyring = SecretServiceSession::start().await?;
    let server = OAuthMcpServer::start().await?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([function_call("c1", "mcp__docs__whoami", "{}")]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    let home = home_with(&server, &mock, "keyring")?;
    let scratch = tempfile::tempdir()?;
    let browser = browser(scratch.path())?;
    let bus = keyring.bus_address.as_str();

    let login = keel(home.path(), &browser, bus, &["mcp", "login", "docs"]).await?;
    ok(&login, "keel mcp login")?;
    let credentials = home.path().join("mcp_credentials.json");
    assert!(
        !credentials.exists(),
        "with the keyring store nothing is written to the credentials file"
    );

    // The token comes back out of the keyring for the call.
    let exec = keel(
        home.path(),
        &browser,
        bus,
        &[
            "exec",
            "-C",
            &scratch.path().display().to_string(),
            "ask who I am",
        ],
    )
    .await?;
    assert_eq!(ok(&exec, "keel exec")?, "done\n");
    let output = mock
        .requests()
        .get(1)
        .and_then(|request| request.tool_output("c1").cloned());
    assert_eq!(
        output.as_ref().and_then(Value::as_str),
        Some("called with token 1")
    );
    assert!(!credentials.exists());

    let logout = keel(home.path(), &browser, bus, &["mcp", "logout", "docs"]).await?;
    ok(&logout, "keel mcp logout")?;
    assert!(
        String::from_utf8_lossy(&logout.stderr).contains("Logged out of `docs`"),
        "{}",
        String::from_utf8_lossy(&logout.stderr)
    );
    let again = keel(home.path(), &browser, bus, &["mcp", "logout", "docs"]).await?;
    ok(&again, "the second keel mcp logout")?;
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("No login was stored"),
        "the keyring item is gone: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyring_without_one_is_refused_before_sign_in_and_auto_uses_the_file() -> anyhow::Result<()>
{
    let server = OAuthMcpServer::start().await?;
    let mock = MockModelServer::start(Script::new(Vec::<Turn>::new())).await?;
    let scratch = tempfile::tempdir()?;
    let browser = browser(scratch.path())?;

    let home = home_with(&server, &mock, "keyring")?;
    let refused = keel(home.path(), &browser, NO_BUS, &["mcp", "login", "docs"]).await?;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("mcp_oauth_credentials_store is \"keyring\"")
            && stderr.contains("\"file\" or \"auto\""),
        "the refusal names the setting and the way out: {stderr}"
    );
    assert!(
        server.events().is_empty(),
        "nothing was asked of the servers: {:?}",
        server.events()
    );

    let home = home_with(&server, &mock, "auto")?;
    let login = keel(home.path(), &browser, NO_BUS, &["mcp", "login", "docs"]).await?;
    ok(&login, "keel mcp login with auto")?;
    let credentials = home.path().join("mcp_credentials.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&credentials)?)?;
    assert_eq!(stored["docs"]["url"], Value::String(server.url()));
    let mode = std::os::unix::fs::MetadataExt::mode(&std::fs::metadata(&credentials)?);
    assert_eq!(mode & 0o777, 0o600);

    // A value Keel does not know is an error naming the key.
    let home = home_with(&server, &mock, "vault")?;
    let bad = keel(home.path(), &browser, NO_BUS, &["mcp", "login", "docs"]).await?;
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("mcp_oauth_credentials_store") && stderr.contains("`vault`"),
        "{stderr}"
    );
    Ok(())
}
