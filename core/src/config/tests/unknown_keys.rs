//! Unknown keys and bad `base_url`s, through the loader.

use pretty_assertions::assert_eq;

use super::super::toml_model::{
    ConfigProfileToml, ConfigToml, SandboxWorkspaceWriteToml, ShellEnvironmentPolicyToml,
};
use super::super::unknown_keys::{
    PROFILE_KEYS, PROVIDER_KEYS, SANDBOX_WORKSPACE_WRITE_KEYS, SHELL_ENVIRONMENT_POLICY_KEYS,
    TOP_LEVEL_KEYS,
};
use super::*;

fn field_names<T: serde::Serialize>(value: &T) -> Vec<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        other => panic!("not a struct: {other:?}"),
    }
}

fn sorted(keys: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    keys.sort();
    keys
}

#[test]
fn known_key_lists_match_the_file_model() {
    assert_eq!(field_names(&ConfigToml::default()), sorted(TOP_LEVEL_KEYS));
    assert_eq!(
        field_names(&ConfigProfileToml::default()),
        sorted(PROFILE_KEYS)
    );
    assert_eq!(
        field_names(&SandboxWorkspaceWriteToml::default()),
        sorted(SANDBOX_WORKSPACE_WRITE_KEYS)
    );
    assert_eq!(
        field_names(&ShellEnvironmentPolicyToml::default()),
        sorted(SHELL_ENVIRONMENT_POLICY_KEYS)
    );
    // Every provider field set, so none is skipped when serialised.
    let provider = ModelProviderInfo {
        name: "n".into(),
        base_url: Some("http://x".into()),
        env_key: Some("K".into()),
        env_key_instructions: Some("i".into()),
        wire_api: WireApi::Responses,
        query_params: BTreeMap::from([("a".into(), "b".into())]),
        http_headers: BTreeMap::from([("a".into(), "b".into())]),
        env_http_headers: BTreeMap::from([("a".into(), "b".into())]),
        request_max_retries: Some(1),
        stream_max_retries: Some(1),
        stream_idle_timeout_ms: Some(1),
        chat_reasoning_field: Some("r".into()),
        requires_openai_auth: true,
        stored_api_key: None,
    };
    assert_eq!(field_names(&provider), sorted(PROVIDER_KEYS));
}

#[test]
fn typos_warn_with_the_closest_key_and_codex_keys_do_not() -> TestResult {
    let config = load_str(
        r#"
modle = "o3"
notify = ["say", "done"]
model_verbosity = "low"
[model_providers.mock]
base_url = "http://localhost:1/v1"
wire_ap = "responses"
requires_openai_auth = false
[model_providers.mock.http_headers]
X-Custom = "1"
[mcp_servers.docs]
command = "docs-mcp"
"#,
        &["sandbox_workspace_write.network_acess=true"],
    )?;
    let warnings: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "/home/u/.keel/config.toml: unknown config key `model_providers.mock.wire_ap` (did you mean `wire_api`?); it is ignored",
            "/home/u/.keel/config.toml: unknown config key `modle` (did you mean `model`?); it is ignored",
            "-c sandbox_workspace_write.network_acess=true: unknown config key `sandbox_workspace_write.network_acess` (did you mean `network_access`?); it is ignored",
        ]
    );
    Ok(())
}

#[test]
fn base_url_is_checked_at_load() {
    assert_eq!(
        load_err(
            "[model_providers.local]\nbase_url = \"localhost:11434/v1\"\n",
            &[]
        ),
        "/home/u/.keel/config.toml: model_providers.local.base_url: `localhost:11434/v1` has \
         scheme `localhost`; expected `http` or `https`"
    );
    assert_eq!(
        load_err("", &["model_providers.x.base_url=127.0.0.1:8080"]),
        "-c model_providers.x.base_url=\"127.0.0.1:8080\": model_providers.x.base_url: \
         `127.0.0.1:8080` is not a URL (relative URL without a base); expected e.g. \
         `http://localhost:11434/v1`"
    );
}

#[test]
fn exec_server_url_is_checked_at_load() {
    assert_eq!(
        load_err("exec_server_url = \"http://127.0.0.1:4500\"\n", &[]),
        "/home/u/.keel/config.toml: exec_server_url: `http://127.0.0.1:4500` has scheme \
         `http`; expected `ws` or `wss`"
    );
    assert_eq!(
        load_err("", &["exec_server_url=127.0.0.1:4500"]),
        "-c exec_server_url=\"127.0.0.1:4500\": exec_server_url: `127.0.0.1:4500` is not a \
         URL (relative URL without a base); expected e.g. `ws://127.0.0.1:4500`"
    );
}

/// `docs/configuration.md` names every Codex key Keel accepts and ignores.
#[test]
fn the_ignored_codex_keys_are_documented() {
    let docs = include_str!("../../../../docs/configuration.md");
    let missing: Vec<&str> = crate::config::unknown_keys::CODEX_KEYS_IGNORED
        .iter()
        .copied()
        .filter(|key| !docs.contains(&format!("`{key}`")))
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
}
