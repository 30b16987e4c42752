//! Writes to `config.toml`: comments kept, merges, removals, and every refusal leaving the
//! file as it was.

use serde_json::json;

use super::{TestResult, home_with, test_env};
use crate::config::{
    CONFIG_FILE_NAME, Config, ConfigEdit, ConfigOverrides, ConfigWriteError, MergeStrategy,
    config_version, write_config_edits,
};

fn edit(key_path: &str, value: serde_json::Value, merge: MergeStrategy) -> ConfigEdit {
    ConfigEdit {
        key_path: key_path.to_string(),
        value,
        merge,
    }
}

const FILE: &str = "# my settings\nmodel = \"o3\" # the usual one\n\n[model_providers.mock]\n# local mock\nname = \"mock\"\nbase_url = \"http://127.0.0.1:1/v1\"\n";

#[test]
fn an_edit_keeps_comments_and_the_result_loads() -> TestResult {
    let home = home_with(Some(FILE))?;
    let written = write_config_edits(
        home.path(),
        &[
            edit("model", json!("gpt-5"), MergeStrategy::Replace),
            edit(
                "model_reasoning_effort",
                json!("high"),
                MergeStrategy::Upsert,
            ),
        ],
        Some(&config_version(FILE)),
        &test_env(),
    )?;
    let text = std::fs::read_to_string(home.path().join(CONFIG_FILE_NAME))?;
    assert!(
        text.contains("# my settings") && text.contains("# local mock"),
        "{text}"
    );
    assert!(text.contains("model = \"gpt-5\""), "{text}");
    assert_eq!(written.version, config_version(&text));
    let config = Config::load_with_env(
        home.path(),
        Vec::new(),
        ConfigOverrides::default(),
        &test_env(),
    )?;
    assert_eq!(config.model, "gpt-5");
    assert_eq!(
        config.model_reasoning_effort,
        Some(keel_protocol::ReasoningEffort::HIGH)
    );
    Ok(())
}

#[test]
fn upsert_merges_a_table_replace_swaps_it_and_null_removes() -> TestResult {
    let home = home_with(Some(FILE))?;
    write_config_edits(
        home.path(),
        &[edit(
            "model_providers.mock",
            json!({"request_max_retries": 0}),
            MergeStrategy::Upsert,
        )],
        None,
        &test_env(),
    )?;
    let text = std::fs::read_to_string(home.path().join(CONFIG_FILE_NAME))?;
    assert!(
        text.contains("base_url") && text.contains("request_max_retries = 0"),
        "{text}"
    );

    write_config_edits(
        home.path(),
        &[
            edit(
                "model_providers.\"other.one\"",
                json!({"name": "other", "base_url": "http://127.0.0.1:2/v1"}),
                MergeStrategy::Replace,
            ),
            edit("model", serde_json::Value::Null, MergeStrategy::Replace),
        ],
        None,
        &test_env(),
    )?;
    let config = Config::load_with_env(
        home.path(),
        Vec::new(),
        ConfigOverrides::default(),
        &test_env(),
    )?;
    assert!(config.model_providers.contains_key("other.one"));
    let text = std::fs::read_to_string(home.path().join(CONFIG_FILE_NAME))?;
    assert!(!text.contains("model = "), "{text}");
    Ok(())
}

#[test]
fn refused_edits_leave_the_file_as_it_was() -> TestResult {
    let home = home_with(Some(FILE))?;
    let path = home.path().join(CONFIG_FILE_NAME);
    let cases: Vec<(Vec<ConfigEdit>, Option<&str>, &str, &str)> = vec![
        (
            vec![edit("model", json!(5), MergeStrategy::Replace)],
            None,
            "configValidationError",
            "model",
        ),
        (
            vec![edit(
                "model_context_window",
                json!(u64::MAX),
                MergeStrategy::Replace,
            )],
            None,
            "configValidationError",
            "too large",
        ),
        (
            vec![edit("modle", json!("o3"), MergeStrategy::Replace)],
            None,
            "configValidationError",
            "did you mean `model`",
        ),
        (
            vec![edit("model.inner", json!("x"), MergeStrategy::Replace)],
            None,
            "configValidationError",
            "`model` holds a value",
        ),
        (
            vec![edit("a..b", json!(1), MergeStrategy::Replace)],
            None,
            "configValidationError",
            "empty key",
        ),
        (
            vec![edit("model", json!("gpt-5"), MergeStrategy::Replace)],
            Some("sha256:0000"),
            "configVersionConflict",
            "sha256:0000",
        ),
    ];
    for (edits, expected_version, code, needle) in cases {
        let err = write_config_edits(home.path(), &edits, expected_version, &test_env())
            .expect_err("the edit must be refused");
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        assert_eq!(std::fs::read_to_string(&path)?, FILE, "after {err}");
    }
    Ok(())
}

#[test]
fn a_write_creates_a_missing_file() -> TestResult {
    let home = home_with(None)?;
    let written = write_config_edits(
        home.path(),
        &[edit(
            "approval_policy",
            json!("never"),
            MergeStrategy::Replace,
        )],
        Some(&config_version("")),
        &test_env(),
    )?;
    assert_eq!(written.path, home.path().join(CONFIG_FILE_NAME));
    let config = Config::load_with_env(
        home.path(),
        Vec::new(),
        ConfigOverrides::default(),
        &test_env(),
    )?;
    assert_eq!(config.approval_policy, keel_protocol::AskForApproval::Never);
    assert!(matches!(
        write_config_edits(home.path(), &[], Some("sha256:0"), &test_env()),
        Err(ConfigWriteError::VersionConflict { .. })
    ));
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_symlinked_private_file_stays_a_symlink_and_private() -> TestResult {
    use std::os::unix::fs::PermissionsExt;
    let home = home_with(None)?;
    let dotfiles = tempfile::tempdir()?;
    let real = dotfiles.path().join("keel.toml");
    std::fs::write(&real, FILE)?;
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600))?;
    let link = home.path().join(CONFIG_FILE_NAME);
    std::os::unix::fs::symlink(&real, &link)?;
    write_config_edits(
        home.path(),
        &[edit("model", json!("gpt-5"), MergeStrategy::Replace)],
        None,
        &test_env(),
    )?;
    assert!(std::fs::symlink_metadata(&link)?.file_type().is_symlink());
    assert!(std::fs::read_to_string(&real)?.contains("model = \"gpt-5\""));
    assert_eq!(
        std::fs::metadata(&real)?.permissions().mode() & 0o777,
        0o600
    );
    Ok(())
}

#[test]
fn replacing_a_table_keeps_the_comments_above_its_header() -> TestResult {
    let home = home_with(Some(
        "model = \"o3\"\n\n# the local mock server\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
    ))?;
    write_config_edits(
        home.path(),
        &[edit(
            "model_providers.mock",
            json!({"name": "mock", "base_url": "http://127.0.0.1:3/v1"}),
            MergeStrategy::Replace,
        )],
        None,
        &test_env(),
    )?;
    let text = std::fs::read_to_string(home.path().join(CONFIG_FILE_NAME))?;
    assert!(
        text.contains("# the local mock server\n[model_providers.mock]"),
        "{text}"
    );
    assert!(text.contains("127.0.0.1:3"), "{text}");
    let header = text.find("[model_providers.mock]").unwrap_or(usize::MAX);
    assert!(
        text.find("model = ").is_some_and(|model| model < header),
        "{text}"
    );
    Ok(())
}
