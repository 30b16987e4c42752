//! Very long `additionalContext` from a hook: over its limit (2,500 tokens unless the hook
//! sets `additionalContextLimit`) the model gets the start and the path of a file with the
//! whole text; `additionalContextLimit: 0` lets it through whole.

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::json;

use super::exec::keel_exec;

/// A hook command printing `marker`, 12,000 letters, then `marker` again with `-END`.
fn long_output(marker: &str) -> String {
    format!("printf '{marker} '; head -c 12000 /dev/zero | tr '\\0' y; printf ' {marker}-END'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_hook_context_is_saved_to_a_file_unless_the_hook_lifts_the_limit() -> anyhow::Result<()>
{
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    std::fs::write(
        home.path().join("hooks.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": long_output("KEEL-CUT")},
            {"type": "command", "command": long_output("KEEL-WHOLE"), "additionalContextLimit": 0}
        ]}]}})
        .to_string(),
    )?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--dangerously-bypass-hook-trust", "hi"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let body = mock.requests()[0].body.to_string();
    assert!(
        body.contains("KEEL-WHOLE-END"),
        "the unlimited hook was cut"
    );
    assert!(body.contains("KEEL-CUT "), "the cut context lost its start");
    assert!(
        !body.contains("KEEL-CUT-END"),
        "the long context was not cut"
    );
    let path = body
        .split("The whole output is saved in ")
        .nth(1)
        .and_then(|rest| rest.split(".txt").next())
        .map(|stem| format!("{stem}.txt"))
        .unwrap_or_default();
    // Under the user's Keel home, not a shared temp directory where another user could have
    // planted a link.
    assert!(
        std::path::Path::new(&path).starts_with(home.path().join("hook-outputs")),
        "{path}"
    );
    let saved = std::fs::read_to_string(&path)?;
    assert!(saved.starts_with("KEEL-CUT ") && saved.ends_with("KEEL-CUT-END"));
    assert_eq!(
        saved.len(),
        "KEEL-CUT ".len() + 12_000 + " KEEL-CUT-END".len()
    );
    if let Some(dir) = std::path::Path::new(&path).parent() {
        std::fs::remove_dir_all(dir)?;
    }
    Ok(())
}
