//! Error messages: each names the file or override, the key and what was expected.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn error_bad_enum_value() {
    assert_eq!(
        load_err("approval_policy = \"sometimes\"\n", &[]),
        "/home/u/.keel/config.toml: approval_policy: unknown variant `sometimes`, expected one \
         of `untrusted`, `on-failure`, `on-request`, `never`"
    );
    assert_eq!(
        load_err("[profiles.x]\nsandbox_mode = \"yolo\"\n", &[]),
        "/home/u/.keel/config.toml: profiles.x.sandbox_mode: unknown variant `yolo`, expected \
         one of `read-only`, `workspace-write`, `danger-full-access`"
    );
    assert_eq!(
        load_err("[model_providers.m]\nwire_api = \"grpc\"\n", &[]),
        "/home/u/.keel/config.toml: model_providers.m.wire_api: unknown variant `grpc`, expected \
         `responses` or `chat`"
    );
}

#[test]
fn error_wrong_type() {
    assert_eq!(
        load_err("[model_providers.m]\nrequest_max_retries = \"many\"\n", &[]),
        "/home/u/.keel/config.toml: model_providers.m.request_max_retries: invalid type: string \
         \"many\", expected u64"
    );
    assert_eq!(
        load_err("model = 5\n", &[]),
        "/home/u/.keel/config.toml: model: invalid type: integer `5`, expected a string"
    );
    assert_eq!(
        load_err(
            "[sandbox_workspace_write]\nwritable_roots = [\"/a\", 1]\n",
            &[]
        ),
        "/home/u/.keel/config.toml: sandbox_workspace_write.writable_roots[1]: invalid type: \
         integer `1`, expected path string"
    );
}

#[test]
fn error_toml_syntax_has_line_and_column() {
    assert_eq!(
        load_err("model = \"o3\"\n[profiles.x\nmodel = \"y\"\n", &[]),
        "/home/u/.keel/config.toml: TOML syntax error at line 2, column 12: unclosed table, \
         expected `]`"
    );
    assert_eq!(
        load_err("model = \"o3\"\napproval_policy = never\n", &[]),
        "/home/u/.keel/config.toml: TOML syntax error at line 2, column 19: invalid float, \
         expected `nan`"
    );
}

#[test]
fn error_unknown_provider_lists_known_ids() {
    assert_eq!(
        load_err("model_provider = \"acme\"\n[model_providers.mock]\n", &[]),
        "model_provider `acme` is not defined (known providers: lmstudio, mock, ollama, openai, oss); define it \
         under [model_providers.acme] in /home/u/.keel/config.toml"
    );
}

#[test]
fn error_unknown_profile() {
    assert_eq!(
        load_err(PROFILES_FILE, &["profile=slow"]),
        "config profile `slow` not found in /home/u/.keel/config.toml (defined profiles: fast, \
         local)"
    );
    assert_eq!(
        load_err("profile = \"x\"\n", &[]),
        "config profile `x` not found in /home/u/.keel/config.toml (no profiles are defined)"
    );
}

#[test]
fn error_bad_cli_override_names_the_override() {
    assert_eq!(
        load_err(
            "[model_providers.mock]\nname = \"Mock\"\n",
            &["model_providers.mock.request_max_retries=lots"]
        ),
        "-c model_providers.mock.request_max_retries=\"lots\": \
         model_providers.mock.request_max_retries: invalid type: string \"lots\", expected u64"
    );
    assert_eq!(
        load_err("", &["sandbox_mode=sideways"]),
        "-c sandbox_mode=\"sideways\": sandbox_mode: unknown variant `sideways`, expected one of \
         `read-only`, `workspace-write`, `danger-full-access`"
    );
    // A dotted override under a string key turns it into a table: blamed on the override.
    assert_eq!(
        load_err("model = \"o3\"\n", &["model.name=x"]),
        "-c model.name=\"x\": model: invalid type: map, expected a string"
    );
    // An override elsewhere does not take the blame for a bad value in the file.
    assert_eq!(
        load_err("approval_policy = 1\n", &["model=o3"]),
        "/home/u/.keel/config.toml: approval_policy: invalid type: integer `1`, expected a \
         string"
    );
}

#[test]
fn unreadable_config_file_is_an_error() -> TestResult {
    let home = home_with(None)?;
    std::fs::create_dir(home.path().join(CONFIG_FILE_NAME))?;
    let err = load(home.path(), &[], ConfigOverrides::default()).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!(
        "{}: cannot read: ",
        home.path().join(CONFIG_FILE_NAME).display()
    )));
    Ok(())
}
