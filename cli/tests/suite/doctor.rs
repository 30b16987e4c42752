//! `keel doctor` through the real binary: a healthy setup against the mock passes with the
//! sandbox, MCP server, hooks and skills reported; a provider on a closed port, a provider
//! that refuses the key, and an MCP server that cannot start each fail with exit 1 and say
//! what to fix.

use std::path::Path;
use std::process::Stdio;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, write_config};
use serde_json::Value;

/// Runs `keel doctor --json` with `home`, in `cwd`; returns the exit code and the report.
async fn doctor(home: &Path, cwd: &Path, env: &[(&str, &str)]) -> anyhow::Result<(i32, Value)> {
    doctor_of(Path::new(env!("CARGO_BIN_EXE_keel")), home, cwd, env).await
}

/// [`doctor`] of the binary at `binary`.
async fn doctor_of(
    binary: &Path,
    home: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
) -> anyhow::Result<(i32, Value)> {
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        tokio::process::Command::new(binary)
            .args(["doctor", "--json"])
            .current_dir(cwd)
            .env("KEEL_HOME", home)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("keel doctor did not finish")??;
    let report: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "stdout is not one JSON object: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    Ok((output.status.code().unwrap_or(-1), report))
}

/// The first check named `name`.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|check| check["name"] == name))
        .unwrap_or(&Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_setup_passes_and_lists_what_it_found() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("sandbox_mode", toml::Value::from("workspace-write"))],
    )?;
    let skill = home.path().join("skills/notes");
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\nx\n",
    )?;
    let broken = home.path().join("skills/broken");
    std::fs::create_dir_all(&broken)?;
    std::fs::write(broken.join("SKILL.md"), "no front matter\n")?;
    std::fs::write(
        home.path().join("hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )?;

    let (code, report) = doctor(home.path(), ws.path(), &[]).await?;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["ok"], true);
    assert_eq!(check(&report, "config")["status"], "ok");
    let provider = check(&report, "provider");
    assert_eq!(provider["status"], "ok", "{report:#}");
    assert!(
        provider["detail"]
            .as_str()
            .is_some_and(|d| d.contains("lists `mock-model`"))
    );
    assert_eq!(check(&report, "sandbox")["status"], "ok", "{report:#}");
    // What the helper reported it got, not what the code hopes for.
    assert!(
        check(&report, "sandbox")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("own PID namespace and /proc, protected folders read-only")),
        "{report:#}"
    );
    assert_eq!(check(&report, "skills")["detail"], "1 found");
    let problems: Vec<String> = report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|check| check["status"] == "warn")
        .filter_map(|check| check["detail"].as_str().map(str::to_string))
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("skills/broken/SKILL.md") && p.contains("front matter")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("Stop hook `true`") && p.contains("trusted_hash = \"sha256:")),
        "{problems:#?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_provider_or_mcp_server_fails_with_what_to_fix() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;

    // Nothing listens on the provider's port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = closed.local_addr()?.port();
    drop(closed);
    write_config(
        home.path(),
        &format!("http://127.0.0.1:{port}/v1"),
        Vec::<(&str, toml::Value)>::new(),
    )?;
    let (code, report) = doctor(home.path(), ws.path(), &[]).await?;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["ok"], false);
    let provider = check(&report, "provider");
    assert_eq!(provider["status"], "fail");
    assert!(
        provider["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot connect") && d.contains("base_url")),
        "{provider}"
    );

    // The provider refuses the key.
    let mock = MockModelServer::builder()
        .api_key("sk-right")
        .start()
        .await?;
    write_config(
        home.path(),
        &mock.uri(),
        [(
            "model_providers.mock.env_key",
            toml::Value::from("KEEL_DOCTOR_KEY"),
        )],
    )?;
    let (code, report) = doctor(home.path(), ws.path(), &[("KEEL_DOCTOR_KEY", "sk-wrong")]).await?;
    assert_eq!(code, 1, "{report:#}");
    let provider = check(&report, "provider");
    assert!(
        provider["detail"].as_str().is_some_and(
            |d| d.contains("refused the API key (HTTP 401)") && d.contains("KEEL_DOCTOR_KEY")
        ),
        "{provider}"
    );
    let (code, report) = doctor(home.path(), ws.path(), &[("KEEL_DOCTOR_KEY", "sk-right")]).await?;
    assert_eq!(code, 0, "{report:#}");

    // An MCP server whose command does not exist.
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "model_providers.mock.env_key",
                toml::Value::from("KEEL_DOCTOR_KEY"),
            ),
            (
                "mcp_servers.tickets.command",
                toml::Value::from("/nonexistent/keel-mcp-tickets"),
            ),
        ],
    )?;
    let (code, report) = doctor(home.path(), ws.path(), &[("KEEL_DOCTOR_KEY", "sk-right")]).await?;
    assert_eq!(code, 1, "{report:#}");
    let server = check(&report, "mcp:tickets");
    assert_eq!(server["status"], "fail", "{report:#}");
    assert!(
        server["detail"]
            .as_str()
            .is_some_and(|d| d.contains("keel-mcp-tickets")),
        "{server}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_that_does_not_load_is_the_first_failure() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    std::fs::write(home.path().join("config.toml"), "model = [unclosed\n")?;
    let (code, report) = doctor(home.path(), ws.path(), &[]).await?;
    assert_eq!(code, 1);
    assert_eq!(check(&report, "config")["status"], "fail");
    assert!(
        check(&report, "config")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("config.toml"))
    );
    assert_eq!(check(&report, "provider"), &Value::Null);
    Ok(())
}

/// A binary installed under another name, with no `keel-linux-sandbox` beside it, has no
/// sandbox helper for the engine: doctor says so and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_sandbox_helper_fails_with_what_to_do() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("sandbox_mode", toml::Value::from("workspace-write"))],
    )?;
    // A hard link keeps the name it is run by (a symlink would resolve to `keel`).
    let bin = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let renamed = bin.path().join("agent-engine");
    std::fs::hard_link(env!("CARGO_BIN_EXE_keel"), &renamed)?;
    let (code, report) = doctor_of(&renamed, home.path(), ws.path(), &[]).await?;
    assert_eq!(code, 1, "{report:#}");
    let sandbox = check(&report, "sandbox");
    assert_eq!(sandbox["status"], "fail", "{report:#}");
    assert!(
        sandbox["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("no sandbox helper")
                && detail.contains("keel-linux-sandbox")),
        "{report:#}"
    );
    Ok(())
}

/// With `exec_server_url`: doctor connects with the configured token, and checks that the
/// server offers patches on its host and has the sandbox helper commands are wrapped in; a
/// wrong token fails with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_exec_server_is_checked_for_its_token_patches_and_sandbox_helper()
-> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let token_file = home.path().join("exec-token");
    std::fs::write(&token_file, "doctor-exec-token")?;
    let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token_file.to_string_lossy().as_ref())
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("sandbox_mode", toml::Value::from("workspace-write")),
            ("exec_server_url", url.clone().into()),
            (
                "exec_server_auth_token_env",
                "KEEL_DOCTOR_EXEC_TOKEN".into(),
            ),
        ],
    )?;
    let token = [("KEEL_DOCTOR_EXEC_TOKEN", "doctor-exec-token")];
    let (code, report) = doctor(home.path(), ws.path(), &token).await?;
    let remote = check(&report, "exec-server");
    assert_eq!(remote["status"], "ok", "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    assert!(
        remote["detail"]
            .as_str()
            .is_some_and(|d| d.contains("confined by the sandbox helper")),
        "{report:#}"
    );

    let (code, report) = doctor(
        home.path(),
        ws.path(),
        &[("KEEL_DOCTOR_EXEC_TOKEN", "not-the-token")],
    )
    .await?;
    assert_eq!(code, 1, "{report:#}");
    let remote = check(&report, "exec-server");
    assert_eq!(remote["status"], "fail", "{report:#}");
    assert!(
        remote["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot connect")),
        "{report:#}"
    );

    // The same server as a named environment whose token is in a file.
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("sandbox_mode", toml::Value::from("workspace-write")),
            ("environment", "box".into()),
            ("environments.box.url", url.clone().into()),
            (
                "environments.box.auth_token_file",
                token_file.to_string_lossy().into_owned().into(),
            ),
        ],
    )?;
    let (code, report) = doctor(home.path(), ws.path(), &[]).await?;
    let remote = check(&report, "exec-server");
    assert_eq!(remote["status"], "ok", "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    assert!(
        remote["detail"]
            .as_str()
            .is_some_and(|d| d.contains("environment `box`")),
        "{report:#}"
    );

    Ok(())
}

/// A sandbox helper that is not on the exec-server's host (here its directory is hidden from a
/// server in a mount namespace by a tmpfs): doctor fails the check, naming the path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mount_namespaces),
    ignore = "needs mount namespaces (unshare --mount, as root; .ci/run runs as root)"
)]
async fn a_sandbox_helper_missing_on_the_exec_servers_host_fails_the_check() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let bin = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let local_keel = bin.path().join("keel");
    std::fs::hard_link(env!("CARGO_BIN_EXE_keel"), &local_keel)?;
    let script = format!(
        "mount -t tmpfs hidden '{}' && exec '{}' exec-server --listen ws://127.0.0.1:0",
        bin.path().display(),
        env!("CARGO_BIN_EXE_keel"),
    );
    let mut elsewhere = keel_test_support::ProcessBuilder::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .spawn()?;
    let elsewhere_url = format!("ws://{}", elsewhere.websocket_address().await?);
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("sandbox_mode", toml::Value::from("workspace-write")),
            ("exec_server_url", elsewhere_url.into()),
        ],
    )?;
    let (code, report) = doctor_of(&local_keel, home.path(), ws.path(), &[]).await?;
    assert_eq!(code, 1, "{report:#}");
    let remote = check(&report, "exec-server");
    assert!(
        remote["detail"].as_str().is_some_and(|d| {
            d.contains(&format!("{} is not on that host", local_keel.display()))
        }),
        "{report:#}"
    );
    Ok(())
}
