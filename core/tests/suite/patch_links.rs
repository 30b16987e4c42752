//! Patches never leave the writable roots through a link, whichever way the model sends them
//! (the freeform tool, `shell ["apply_patch", …]`, `apply_patch` in an `exec_command` heredoc):
//! a directory symlink, a file symlink and `..` are refused; a hard link is replaced, never
//! written through. Written as an attacker would: the links are made first, as a model could
//! with a command the sandbox allows.

use std::os::unix::fs::symlink;
use std::path::Path;

use keel_test_support::{
    Script, Turn, apply_patch_call, assistant_message, exec_command_call, shell_call,
};
use pretty_assertions::assert_eq;

use super::common::*;

fn add(path: &str) -> String {
    format!("*** Begin Patch\n*** Add File: {path}\n+pwned\n*** End Patch")
}

fn update(path: &str) -> String {
    format!("*** Begin Patch\n*** Update File: {path}\n@@\n-orig\n+pwned\n*** End Patch")
}

/// The workspace's traps: `dirlink` → the outside directory, `filelink.txt` → a file in it,
/// `hard.txt` a hard link to another file in it (when both are on one filesystem).
fn lay_traps(ws: &Path, outside: &Path) -> anyhow::Result<bool> {
    std::fs::write(outside.join("target.txt"), "orig\n")?;
    std::fs::write(outside.join("hard.txt"), "orig\n")?;
    symlink(outside, ws.join("dirlink"))?;
    symlink(outside.join("target.txt"), ws.join("filelink.txt"))?;
    Ok(std::fs::hard_link(outside.join("hard.txt"), ws.join("hard.txt")).is_ok())
}

fn output_of(env: &TestEnv, call: &str) -> String {
    env.mock
        .requests()
        .iter()
        .find_map(|r| {
            r.tool_output(call)
                .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_string))
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_patch_form_writes_through_a_link_out_of_the_workspace() -> anyhow::Result<()> {
    let heredoc = format!("apply_patch <<'EOF'\n{}\nEOF", add("dirlink/via-exec.txt"));
    let script = Script::new([
        Turn::new([apply_patch_call("dir", add("dirlink/x.txt"))]),
        Turn::new([apply_patch_call("file", update("filelink.txt"))]),
        Turn::new([shell_call(
            "shell",
            ["apply_patch", &add("dirlink/via-shell.txt")],
        )]),
        Turn::new([exec_command_call(
            "exec",
            serde_json::json!({"cmd": heredoc}),
        )]),
        Turn::new([apply_patch_call("nested", add("dirlink/deeper/new/x.txt"))]),
        Turn::new([apply_patch_call("hard", update("hard.txt"))]),
        Turn::new([apply_patch_call("dotdot", add("dirlink/../escape.txt"))]),
        Turn::new([apply_patch_call("inside", add("ok.txt"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = workspace_write(script, "never").await?;
    let outside = outside_dir()?;
    let hard_linked = lay_traps(env.ws(), outside.path())?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    until_turn_end(&new.conversation).await?;

    // Nothing outside changed or appeared.
    let mut names: Vec<String> = std::fs::read_dir(outside.path())?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["hard.txt", "target.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt"))?,
        "orig\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("hard.txt"))?,
        "orig\n"
    );

    // Each refusal names the link and where it leads.
    for call in ["dir", "file", "shell", "exec", "nested"] {
        let said = output_of(&env, call);
        assert!(
            said.contains("symlink") && said.contains(&outside.path().display().to_string()),
            "{call}: {said}"
        );
    }
    assert!(output_of(&env, "file").contains("filelink.txt"));
    assert!(output_of(&env, "dir").contains("dirlink"));
    // The link itself is left alone.
    assert!(
        std::fs::symlink_metadata(env.ws().join("filelink.txt"))?
            .file_type()
            .is_symlink()
    );

    // A hard link is replaced by a new file: the workspace copy changes, the outside one not.
    if hard_linked {
        assert_eq!(
            std::fs::read_to_string(env.ws().join("hard.txt"))?,
            "pwned\n"
        );
    }
    assert_eq!(std::fs::read_to_string(env.ws().join("ok.txt"))?, "pwned\n");
    // `..` after a link is taken lexically: the file lands in the workspace, not beside the
    // link's target.
    assert_eq!(
        std::fs::read_to_string(env.ws().join("escape.txt"))?,
        "pwned\n"
    );
    let beside_target = outside
        .path()
        .parent()
        .map(|parent| parent.join("escape.txt"))
        .ok_or_else(|| anyhow::anyhow!("outside dir has no parent"))?;
    assert!(!beside_target.exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_out_is_refused_even_where_a_plain_outside_path_is_asked_about() -> anyhow::Result<()>
{
    let script = Script::new([
        Turn::new([apply_patch_call("dir", add("dirlink/x.txt"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = workspace_write(script, "on-request").await?;
    let outside = outside_dir()?;
    lay_traps(env.ws(), outside.path())?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    // No approval is asked: the answer is no, whatever the user would say.
    let (events, asked) = answer_approvals(&new.conversation, &[]).await?;
    assert_eq!(asked.len(), 0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, keel_protocol::EventMsg::ApplyPatchApprovalRequest(_))),
        "{:?}",
        kinds(&events)
    );
    assert!(!outside.path().join("x.txt").exists());
    assert!(
        output_of(&env, "dir").contains("symlink"),
        "{}",
        output_of(&env, "dir")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn danger_full_access_writes_where_the_link_points() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([apply_patch_call("dir", add("dirlink/x.txt"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let outside = outside_dir()?;
    lay_traps(env.ws(), outside.path())?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    until_turn_end(&new.conversation).await?;
    assert_eq!(
        std::fs::read_to_string(outside.path().join("x.txt"))?,
        "pwned\n"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_reached_through_a_link_is_still_the_workspace() -> anyhow::Result<()> {
    // The cwd is a symlink to the workspace (a symlinked home does this): patches inside it
    // are inside the writable roots, not "outside" because their real paths differ.
    let script = Script::new([
        Turn::new([apply_patch_call("in", add("ok.txt"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = workspace_write(script, "never").await?;
    let alias_dir = outside_dir()?;
    let alias = alias_dir.path().join("ws-alias");
    symlink(env.ws(), &alias)?;
    let mut config = env.config()?;
    config.cwd = alias.clone();
    let new = env.manager.new_conversation(config).await?;
    say(&new.conversation, "patch").await?;
    until_turn_end(&new.conversation).await?;
    assert_eq!(std::fs::read_to_string(env.ws().join("ok.txt"))?, "pwned\n");
    assert!(
        !output_of(&env, "in").contains("rejected"),
        "{}",
        output_of(&env, "in")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_where_a_write_through_a_link_lands() -> anyhow::Result<()> {
    // A link that stays inside the workspace is allowed; under `untrusted` the user is asked,
    // and the question says where the file really goes.
    let script = Script::new([
        Turn::new([apply_patch_call("p", add("alias/x.txt"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = workspace_write(script, "untrusted").await?;
    std::fs::create_dir(env.ws().join("real"))?;
    symlink(env.ws().join("real"), env.ws().join("alias"))?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    let asked = events_until(&new.conversation, |msg| {
        matches!(msg, keel_protocol::EventMsg::ApplyPatchApprovalRequest(_))
    })
    .await?;
    let Some(keel_protocol::EventMsg::ApplyPatchApprovalRequest(request)) =
        asked.last().map(|event| event.msg.clone())
    else {
        anyhow::bail!("no patch approval request: {:?}", kinds(&asked));
    };
    let reason = request.reason.unwrap_or_default();
    let real = std::fs::canonicalize(env.ws().join("real"))?.join("x.txt");
    assert!(
        reason.contains("through a symlink") && reason.contains(&real.display().to_string()),
        "{reason}"
    );
    new.conversation
        .submit(keel_protocol::Op::PatchApproval {
            id: request.call_id,
            decision: keel_protocol::ReviewDecision::Approved,
        })
        .await?;
    until_turn_end(&new.conversation).await?;
    assert_eq!(
        std::fs::read_to_string(env.ws().join("real/x.txt"))?,
        "pwned\n"
    );
    Ok(())
}
