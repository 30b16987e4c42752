//! `write_config`.

use keel_test_support::{Error, config_toml, write_config};
use pretty_assertions::assert_eq;

#[test]
fn default_config_points_at_the_mock_with_zero_retries() -> anyhow::Result<()> {
    let text = config_toml("http://127.0.0.1:9/v1", Vec::<(&str, toml::Value)>::new())?;
    let parsed: toml::Table = toml::from_str(&text)?;
    let expected: toml::Table = toml::from_str(
        r#"
        model = "mock-model"
        model_provider = "mock"
        approval_policy = "never"
        sandbox_mode = "danger-full-access"
        [model_providers.mock]
        name = "mock"
        base_url = "http://127.0.0.1:9/v1"
        wire_api = "responses"
        request_max_retries = 0
        stream_max_retries = 0
        "#,
    )?;
    assert_eq!(parsed, expected);
    Ok(())
}

#[test]
fn overrides_replace_defaults_and_add_keys() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let path = write_config(
        home.path(),
        "http://127.0.0.1:9/v1",
        [
            ("model_providers.mock.wire_api", toml::Value::from("chat")),
            ("model_providers.mock.request_max_retries", 2.into()),
            ("approval_policy", "on-request".into()),
            ("features.web_search", false.into()),
        ],
    )?;
    assert_eq!(path, home.path().join("config.toml"));
    let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(&path)?)?;
    assert_eq!(
        parsed["model_providers"]["mock"]["wire_api"].as_str(),
        Some("chat")
    );
    assert_eq!(
        parsed["model_providers"]["mock"]["request_max_retries"].as_integer(),
        Some(2)
    );
    assert_eq!(
        parsed["model_providers"]["mock"]["stream_max_retries"].as_integer(),
        Some(0)
    );
    assert_eq!(parsed["approval_policy"].as_str(), Some("on-request"));
    assert_eq!(parsed["features"]["web_search"].as_bool(), Some(false));
    Ok(())
}

#[test]
fn an_override_through_a_scalar_is_an_error() {
    let err = config_toml("http://x/v1", [("model.name", "x")]).err();
    assert!(
        matches!(&err, Some(Error::ConfigOverride { at, .. }) if at == "model"),
        "{err:?}"
    );
}
