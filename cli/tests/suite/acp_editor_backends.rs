//! `keel acp` with an editor that offers its files and terminals (`fs` and `terminal` at
//! `initialize`), driven by a client on the official ACP SDK
//! (`tests/fixtures/acp_editor_backends.mjs`): a patch is planned against the editor's unsaved
//! buffer and written back through `fs/write_text_file` (the disk untouched), the model reads
//! `AGENTS.md` as the editor holds it (unsaved), and a patch through
//! a link out of the workspace is refused before the editor is asked to write; the model's
//! command runs in an editor terminal, still inside Keel's sandbox helper (a write outside the
//! workspace fails), and its tool call shows the terminal; a command the person stops while
//! it runs in a terminal is killed there, and the prompt ends `cancelled`.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, apply_patch_call, assistant_message, shell_call,
};
use serde_json::{Value, json};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;

/// Ample for two turns on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(120);

/// What the model was told of call `call_id`, from the requests the mock received.
fn output_of(mock: &MockModelServer, call_id: &str) -> Option<String> {
    mock.requests().iter().find_map(|request| {
        request.input().iter().find_map(|item| {
            let is_output = item["type"]
                .as_str()
                .is_some_and(|kind| kind.ends_with("_output"));
            (is_output && item["call_id"] == call_id).then(|| item["output"].to_string())
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_that_offers_files_and_terminals_gets_the_edit_and_runs_the_commands()
-> anyhow::Result<()> {
    // Outside every writable root (the workspace and the temporary folders).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let escaped = outside.path().join("escaped.txt");
    let mock = MockModelServer::start(Script::new([
        Turn::new([apply_patch_call(
            "p1",
            "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two (unsaved)\n+2\n\
             *** Add File: fresh.txt\n+fresh\n*** End Patch",
        )]),
        // A link planted in the workspace, pointing out of it: the patch must not reach.
        Turn::new([apply_patch_call(
            "p2",
            "*** Begin Patch\n*** Update File: escape.txt\n@@\n-outside\n+owned\n*** End Patch",
        )]),
        Turn::new([shell_call(
            "c1",
            [
                "bash",
                "-lc",
                &format!(
                    "echo from-terminal; touch {} || echo refused; echo after",
                    escaped.display()
                ),
            ],
        )]),
        Turn::new([assistant_message("Edited and ran.")]),
        Turn::new([shell_call("c2", ["bash", "-lc", "sleep 600"])]),
    ]))
    .await?;
    let world = World::with_mock(
        mock,
        &[
            ("approval_policy", toml::Value::from("never")),
            ("sandbox_mode", toml::Value::from("workspace-write")),
        ],
    )?;
    let ws = std::fs::canonicalize(world.ws())?;
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, "one\ntwo\n")?;
    let target = outside.path().join("target.txt");
    std::fs::write(&target, "outside\n")?;
    std::os::unix::fs::symlink(&target, ws.join("escape.txt"))?;
    let agents_md = ws.join("AGENTS.md");
    std::fs::write(&agents_md, "Saved rules.\n")?;

    let mut command = editor_command("acp_editor_backends.mjs", &world)?;
    command.arg(&ws).arg(&notes).arg("one\ntwo (unsaved)\n");
    command
        .arg(&agents_md)
        .arg("Unsaved rules: answer in haiku.\n");
    let report: Value = editor_report(command, WAIT).await?;

    // The project docs the model got are the editor's unsaved text, not the disk's.
    let first_request = serde_json::to_string(world.mock.requests()[0].input())?;
    assert!(
        first_request.contains("Unsaved rules: answer in haiku."),
        "{first_request}"
    );
    assert!(!first_request.contains("Saved rules."), "{first_request}");

    // The patch was planned against the editor's unsaved buffer and written back through it;
    // a file new to both was never read; the disk holds what it held.
    let notes_path = notes.display().to_string();
    let read: Vec<&str> = report["reads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|read| read["path"].as_str())
        .collect();
    let escape_path = ws.join("escape.txt").display().to_string();
    let agents_path = agents_md.display().to_string();
    assert!(
        read.iter()
            .all(|path| [&notes_path, &escape_path, &agents_path].contains(&&path.to_string())),
        "{read:?}"
    );
    assert!(read.contains(&agents_path.as_str()), "{read:?}");
    assert!(!read.is_empty(), "{report:#}");
    assert_eq!(report["buffers"][&notes_path], "one\n2\n", "{report:#}");
    let fresh = ws.join("fresh.txt").display().to_string();
    assert_eq!(report["buffers"][&fresh], "fresh\n", "{report:#}");
    assert_eq!(std::fs::read_to_string(&notes)?, "one\ntwo\n");
    assert!(!ws.join("fresh.txt").exists());
    let patched = output_of(&world.mock, "p1").context("no output for the patch")?;
    assert!(patched.contains("notes.txt"), "{patched}");

    // The link out of the workspace was refused before the editor was asked to write, and
    // the file it points to is untouched.
    let escaped_patch = output_of(&world.mock, "p2").context("no output for the link patch")?;
    assert!(escaped_patch.contains("patch rejected"), "{escaped_patch}");
    let written: Vec<&str> = report["writes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|write| write["path"].as_str())
        .collect();
    assert!(
        written
            .iter()
            .all(|path| !path.contains("escape") && !path.contains("target")),
        "{written:?}"
    );
    assert_eq!(std::fs::read_to_string(&target)?, "outside\n");

    // The command ran in an editor terminal, inside the sandbox helper.
    let first_terminal = &report["created"][0];
    let program = first_terminal["command"].as_str().context("command")?;
    assert_eq!(
        Path::new(program)
            .file_name()
            .and_then(|name| name.to_str()),
        Some("keel-linux-sandbox"),
        "{first_terminal:#}"
    );
    assert!(
        first_terminal["args"]
            .as_array()
            .is_some_and(|args| args.iter().any(|arg| arg == "--sandbox-policy")),
        "{first_terminal:#}"
    );
    assert_eq!(first_terminal["cwd"], ws.display().to_string());
    let ran = output_of(&world.mock, "c1").context("no output for the command")?;
    assert!(
        ran.contains("from-terminal") && ran.contains("refused") && ran.contains("after"),
        "{ran}"
    );
    assert!(!escaped.exists(), "the sandbox let a write out");

    // The tool call showed the terminal, to its end.
    let terminal_id = report["exits"]
        .as_object()
        .and_then(|exits| exits.keys().next().cloned())
        .context("no terminal")?;
    let shown = json!([{"type": "terminal", "terminalId": terminal_id}]);
    let updates: Vec<&Value> = report["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|notification| &notification["update"])
        .collect();
    let call_updates: Vec<&&Value> = updates
        .iter()
        .filter(|update| update["content"] == shown)
        .collect();
    assert!(
        call_updates
            .iter()
            .any(|update| update["status"] == "completed"),
        "{updates:#?}"
    );
    let announced = updates
        .iter()
        .position(|update| update["sessionUpdate"] == "tool_call" && update["kind"] == "execute")
        .context("no command tool call")?;
    let showed = updates
        .iter()
        .position(|update| update["content"] == shown)
        .context("terminal never shown")?;
    assert!(announced < showed, "shown before announced: {updates:#?}");

    // Stopped while running in a terminal: killed there, the prompt cancelled, every
    // terminal released.
    assert_eq!(report["second"]["stopReason"], "cancelled", "{report:#}");
    let long = report["created"]
        .as_array()
        .and_then(|created| created.len().checked_sub(1))
        .map(|last| format!("term-{last}"))
        .context("no terminal for the long command")?;
    assert_eq!(report["killed"], json!([long]), "{report:#}");
    assert_eq!(report["exits"][&long]["signal"], "SIGKILL", "{report:#}");
    assert_eq!(report["running"], json!([]), "{report:#}");
    let released = report["released"].as_array().map(Vec::len);
    let created = report["created"].as_array().map(Vec::len);
    assert_eq!(released, created, "{report:#}");
    Ok(())
}
