//! `exec_command` / `write_stdin` and login-shell snapshots through the `keel` binary against
//! the mock model.

mod remote;
mod remote_files;
mod remote_netns;
mod snapshots;
mod tools;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};

const WAIT: Duration = Duration::from_secs(90);

pub struct Run {
    pub mock: MockModelServer,
    pub code: Option<i32>,
    pub stderr: String,
    _home: tempfile::TempDir,
}

impl Run {
    /// The text the model was given for `call_id`.
    pub fn output(&self, call_id: &str) -> String {
        self.mock
            .requests()
            .iter()
            .find_map(|request| request.tool_output(call_id).cloned())
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Runs `keel exec` through `turns` (then a final answer), in `ws`, with `env` added.
pub async fn run(ws: &Path, turns: Vec<Turn>, env: &[(&str, &str)]) -> anyhow::Result<Run> {
    run_with_config(ws, turns, env, &[]).await
}

/// [`run`] with extra `config.toml` keys.
pub async fn run_with_config(
    ws: &Path,
    turns: Vec<Turn>,
    env: &[(&str, &str)],
    config: &[(&str, toml::Value)],
) -> anyhow::Result<Run> {
    run_prompt_with_config(ws, "run the commands", turns, env, config).await
}

/// [`run_with_config`] with the user's `prompt`.
pub async fn run_prompt_with_config(
    ws: &Path,
    prompt: &str,
    turns: Vec<Turn>,
    env: &[(&str, &str)],
    config: &[(&str, toml::Value)],
) -> anyhow::Result<Run> {
    let mut turns = turns;
    turns.push(Turn::new([assistant_message("done")]));
    let mock = MockModelServer::start(Script::new(turns)).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), config.iter().cloned())?;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .args(["exec", prompt])
        .current_dir(ws)
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .context("keel exec did not finish")??;
    Ok(Run {
        mock,
        code: output.status.code(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        _home: home,
    })
}

/// What follows `Output:` in a tool result.
pub fn body_of(output: &str) -> &str {
    output.split_once("Output:\n").map_or("", |(_, body)| body)
}

/// The `Wall time` the model was told, in seconds.
pub fn wall_time(output: &str) -> f64 {
    output
        .lines()
        .find_map(|line| line.strip_prefix("Wall time: "))
        .and_then(|rest| rest.strip_suffix(" seconds"))
        .and_then(|secs| secs.parse().ok())
        .unwrap_or(f64::MAX)
}
