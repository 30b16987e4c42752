//! Signing in to `keel acp` from an editor on the official ACP SDK
//! (`tests/fixtures/acp_editor_auth.mjs`): a provider that takes a key offers one method
//! (`api-key`, naming the variable), `authenticate` passes while the key is in the environment
//! or stored by `keel login`, `logout` forgets the stored key (and `authenticate` then asks
//! for one, `-32000`); a provider without a key offers no method.

use std::process::Stdio;
use std::time::Duration;

use keel_test_support::{MockModelServer, Script};
use serde_json::{Value, json};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;

/// Ample for a handshake on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(60);

/// The variable the test's provider reads its key from.
const KEY_VARIABLE: &str = "KEEL_ACP_TEST_PROVIDER_KEY";

async fn sign_in(world: &World, key_in_environment: bool) -> anyhow::Result<Value> {
    let mut command = editor_command("acp_editor_auth.mjs", world)?;
    command.arg(world.ws()).env_remove(KEY_VARIABLE);
    if key_in_environment {
        command.env(KEY_VARIABLE, "sk-from-the-environment");
    }
    editor_report(command, WAIT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn the_api_key_method_checks_the_key_and_logout_forgets_the_stored_one() -> anyhow::Result<()>
{
    let mock = MockModelServer::start(Script::new([])).await?;
    let world = World::with_mock(
        mock,
        &[(
            "model_providers.mock.env_key",
            toml::Value::from(KEY_VARIABLE),
        )],
    )?;

    // The key in the environment: signed in; logout leaves the environment's key alone.
    let report = sign_in(&world, true).await?;
    let methods = &report["init"]["authMethods"];
    assert_eq!(methods[0]["id"], "api-key", "{report:#}");
    assert!(
        methods[0]["description"]
            .as_str()
            .is_some_and(|text| text.contains(KEY_VARIABLE)),
        "{methods:#}"
    );
    assert_eq!(
        report["init"]["agentCapabilities"]["auth"],
        json!({"logout": {}})
    );
    assert_eq!(report["first"], json!({"result": {}}), "{report:#}");
    assert_eq!(report["unknown"]["code"], -32602, "{report:#}");
    assert_eq!(report["logout"], json!({"result": {}}));
    assert_eq!(report["again"], json!({"result": {}}), "{report:#}");

    // Only a stored key: signed in until logout removes it, then asked for one.
    let stored = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["login", "--with-api-key"])
        .env("KEEL_HOME", world.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(b"sk-stored-by-login\n")?;
            }
            child.wait()
        })?;
    anyhow::ensure!(stored.success(), "keel login failed");
    let report = sign_in(&world, false).await?;
    assert_eq!(report["first"], json!({"result": {}}), "{report:#}");
    assert_eq!(report["logout"], json!({"result": {}}));
    assert_eq!(report["again"]["code"], -32000, "{report:#}");
    assert!(
        report["again"]["message"]
            .as_str()
            .is_some_and(|message| message.contains(KEY_VARIABLE)),
        "{report:#}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn a_provider_without_a_key_offers_no_sign_in() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let world = World::with_mock(mock, &[])?;
    let report = sign_in(&world, false).await?;
    assert_eq!(report["init"]["authMethods"], json!([]), "{report:#}");
    assert_eq!(report["first"]["code"], -32602, "{report:#}");
    Ok(())
}
