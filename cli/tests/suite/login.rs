//! `keel login --with-api-key`, `keel login status` and `keel logout`, as Codex's: the key is
//! read from stdin and kept 0600 in the home's `auth.json`; the model is then sent
//! `CODEX_API_KEY` first, the stored key next, `OPENAI_API_KEY` last.

use keel_test_support::{MockModelServer, Turn, assistant_message, write_config};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::exec::Output;

/// `keel ARGS` in `home`, with `env` set (and no API key variable but those), `stdin` piped in.
async fn keel(
    home: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &str,
) -> anyhow::Result<Output> {
    super::exec::keel(home, home, args, env, Some(stdin)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_key_is_used_after_codex_api_key_and_before_openai_api_key() -> anyhow::Result<()>
{
    let mock = MockModelServer::builder()
        .responder(|_| Some(Turn::new([assistant_message("ok")])))
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    // A provider that takes OpenAI's credentials, as the built-in `openai` does.
    write_config(
        home.path(),
        &mock.uri(),
        [
            (
                "model_providers.mock.requires_openai_auth",
                toml::Value::Boolean(true),
            ),
            (
                "model_providers.mock.env_key",
                toml::Value::String("OPENAI_API_KEY".into()),
            ),
        ],
    )?;
    let home = home.path();

    let out = keel(home, &["login", "status"], &[], "").await?;
    assert_eq!((out.code, out.stderr.trim()), (Some(1), "Not logged in"));

    let out = keel(
        home,
        &["login", "--with-api-key"],
        &[],
        "  sk-stored-1234567890\n",
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "Reading API key from stdin...\nAPI key saved. Authentication is checked when you send a request.\n"
    );
    let file = home.join("auth.json");
    assert_eq!(
        std::fs::metadata(&file)?.permissions().mode() & 0o777,
        0o600
    );
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
    assert_eq!(
        stored,
        serde_json::json!({"auth_mode": "apikey", "OPENAI_API_KEY": "sk-stored-1234567890"})
    );
    let out = keel(home, &["login", "status"], &[], "").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("API key configured - sk-store***67890\n"),
        "{}",
        out.stderr
    );

    // Which key the model is sent.
    for (env, expected) in [
        (vec![], "Bearer sk-stored-1234567890"),
        (
            vec![("OPENAI_API_KEY", "sk-env")],
            "Bearer sk-stored-1234567890",
        ),
        (
            vec![("OPENAI_API_KEY", "sk-env"), ("CODEX_API_KEY", "sk-codex")],
            "Bearer sk-codex",
        ),
    ] {
        let before = mock.requests().len();
        let out = keel(home, &["exec", "hi"], &env, "").await?;
        assert_eq!(out.code, Some(0), "{env:?}: {}", out.stderr);
        let sent = &mock.requests()[before];
        assert_eq!(sent.header("authorization"), Some(expected), "{env:?}");
    }

    let out = keel(home, &["logout"], &[], "").await?;
    assert_eq!(
        (out.code, out.stderr.trim()),
        (Some(0), "Successfully logged out")
    );
    assert!(!file.exists());
    let out = keel(home, &["logout"], &[], "").await?;
    assert_eq!((out.code, out.stderr.trim()), (Some(0), "Not logged in"));
    // Without a stored key, `OPENAI_API_KEY` is used.
    let before = mock.requests().len();
    let out = keel(home, &["exec", "hi"], &[("OPENAI_API_KEY", "sk-env")], "").await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        mock.requests()[before].header("authorization"),
        Some("Bearer sk-env")
    );
    // And with no key at all, the error says how to give one.
    let out = keel(home, &["exec", "hi"], &[], "").await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("keel login --with-api-key"),
        "{}",
        out.stderr
    );

    // Nothing on stdin stores nothing.
    let out = keel(home, &["login", "--with-api-key"], &[], "\n").await?;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("No API key provided via stdin."),
        "{}",
        out.stderr
    );
    assert!(!file.exists());
    // A damaged file is named, not ignored.
    std::fs::write(&file, "not json")?;
    let out = keel(home, &["exec", "hi"], &[], "").await?;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("auth.json"), "{}", out.stderr);
    Ok(())
}
