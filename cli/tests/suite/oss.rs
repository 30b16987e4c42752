//! `keel exec --oss` checks the local server first: nothing listening, or a model the server
//! does not have, is a usage error that says what to do (start the server, pull the model)
//! before any model request; a model it has runs.

use std::process::Stdio;

use anyhow::Context;
use keel_test_support::{Endpoint, MockModelServer, Script, Turn, assistant_message, write_config};

/// `keel exec --oss ARGS... hi` with the local server at `base_url`; exit code, stdout, stderr.
async fn exec_oss(base_url: &str, args: &[&str]) -> anyhow::Result<(i32, String, String)> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    // A config of its own that the `--oss` provider replaces.
    write_config(
        home.path(),
        "http://127.0.0.1:9/v1",
        Vec::<(&str, toml::Value)>::new(),
    )?;
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .arg("exec")
            .arg("--oss")
            .args(args)
            .arg("hi")
            .current_dir(ws.path())
            .env("KEEL_HOME", home.path())
            .env("CODEX_OSS_BASE_URL", base_url)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("keel exec --oss did not finish")??;
    Ok((
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_local_server_is_explained() -> anyhow::Result<()> {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = closed.local_addr()?.port();
    drop(closed);
    let (code, _, stderr) = exec_oss(&format!("http://127.0.0.1:{port}/v1"), &[]).await?;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no local model server") && stderr.contains("ollama serve"),
        "{stderr}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_the_server_lacks_is_explained_and_one_it_has_runs() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .model("gpt-oss:20b")
        .script(Script::new([Turn::new([assistant_message(
            "local answer",
        )])]))
        .start()
        .await?;
    let (code, _, stderr) = exec_oss(&mock.uri(), &["-m", "qwen3:8b"]).await?;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("has no model `qwen3:8b`")
            && stderr.contains("gpt-oss:20b")
            && stderr.contains("ollama pull qwen3:8b"),
        "{stderr}"
    );
    assert!(
        mock.requests()
            .iter()
            .all(|r| !r.endpoint.is_model_request()),
        "a model request was sent"
    );

    let (code, stdout, stderr) = exec_oss(&mock.uri(), &[]).await?;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "local answer\n");
    Ok(())
}

/// `--local-provider lmstudio`: LM Studio's provider (its table in config.toml may move it)
/// and its name for the default model; a missing model names LM Studio's download command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_provider_lmstudio_uses_its_server_and_model_name() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .model("openai/gpt-oss-20b")
        .script(Script::new([Turn::new([assistant_message(
            "from lm studio",
        )])]))
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        "http://127.0.0.1:9/v1",
        [
            (
                "model_providers.lmstudio.name",
                toml::Value::from("LM Studio"),
            ),
            ("model_providers.lmstudio.base_url", mock.uri().into()),
            ("model_providers.lmstudio.wire_api", "chat".into()),
        ],
    )?;
    let run = |args: Vec<&'static str>| {
        let home = home.path().to_path_buf();
        let ws = ws.path().to_path_buf();
        async move {
            let output = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
                    .arg("exec")
                    .args(args)
                    .arg("hi")
                    .current_dir(&ws)
                    .env("KEEL_HOME", &home)
                    .env_remove("RUST_LOG")
                    .stdin(Stdio::null())
                    .kill_on_drop(true)
                    .output(),
            )
            .await??;
            anyhow::Ok((
                output.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ))
        }
    };
    let (code, _, stderr) = run(vec!["--local-provider", "lmstudio", "-m", "qwen3-8b"]).await?;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("lms get qwen3-8b"), "{stderr}");

    let (code, stdout, stderr) = run(vec!["--local-provider", "lmstudio"]).await?;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "from lm studio\n");
    assert_eq!(mock.requests()[0].body["model"], "openai/gpt-oss-20b");
    Ok(())
}

/// An Ollama that serves the Responses API (0.13.4 and later, by its `/api/version`) is
/// spoken to over Responses, as Codex's `--oss` does; an older one, or a server that is not
/// Ollama, over Chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recent_ollama_gets_responses_and_an_older_one_chat() -> anyhow::Result<()> {
    for (version, endpoint) in [
        (Some("0.13.5"), Endpoint::Responses),
        (Some("0.12.11"), Endpoint::ChatCompletions),
        (None, Endpoint::ChatCompletions),
    ] {
        let mut builder = MockModelServer::builder()
            .model("gpt-oss:20b")
            .script(Script::new([Turn::new([assistant_message(
                "local answer",
            )])]));
        if let Some(version) = version {
            builder = builder.ollama_version(version);
        }
        let mock = builder.start().await?;
        let (code, stdout, stderr) = exec_oss(&mock.uri(), &[]).await?;
        assert_eq!(code, 0, "{version:?}: {stderr}");
        assert_eq!(stdout, "local answer\n");
        let requests = mock.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].endpoint, endpoint, "{version:?}");
        mock.verify()?;
    }
    Ok(())
}
