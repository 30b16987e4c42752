use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, apply_patch_call, assistant_message, function_call};
use pretty_assertions::assert_eq;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_adds_updates_moves_and_deletes() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+fresh\n*** Update File: edit.txt\n@@\n-old line\n+new line\n*** Update File: from.txt\n*** Move to: sub/to.txt\n@@\n-moved\n+moved and changed\n*** Delete File: gone.txt\n*** End Patch";
    let script = Script::new([
        Turn::new([apply_patch_call("p1", patch)]),
        Turn::new([assistant_message("patched")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    std::fs::write(env.ws().join("edit.txt"), "keep\nold line\n")?;
    std::fs::write(env.ws().join("from.txt"), "moved\n")?;
    std::fs::write(env.ws().join("gone.txt"), "bye\n")?;
    let new = env.start().await?;
    say(&new.conversation, "patch it").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("patched"));

    assert_eq!(
        std::fs::read_to_string(env.ws().join("new.txt"))?,
        "fresh\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws().join("edit.txt"))?,
        "keep\nnew line\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws().join("sub/to.txt"))?,
        "moved and changed\n"
    );
    assert!(!env.ws().join("from.txt").exists());
    assert!(!env.ws().join("gone.txt").exists());

    let end = events.iter().find_map(|e| match &e.msg {
        EventMsg::PatchApplyEnd(end) => Some(end.clone()),
        _ => None,
    });
    let end = end.ok_or_else(|| anyhow::anyhow!("no patch_apply_end"))?;
    assert!(end.success, "{end:?}");
    let begin = events.iter().find_map(|e| match &e.msg {
        EventMsg::PatchApplyBegin(begin) => Some(begin.clone()),
        _ => None,
    });
    assert_eq!(begin.map(|b| b.changes.len()), Some(4));
    let diff = events.iter().find_map(|e| match &e.msg {
        EventMsg::TurnDiff(diff) => Some(diff.unified_diff.clone()),
        _ => None,
    });
    let diff = diff.unwrap_or_default();
    assert!(
        diff.contains("+new line") && diff.contains("-old line"),
        "{diff}"
    );
    assert!(diff.contains("b/new.txt"), "{diff}");

    // The model was told which files changed (custom tool output for a freeform call).
    let output = env.mock.requests()[1]
        .tool_output("p1")
        .cloned()
        .unwrap_or_default();
    assert!(
        output.as_str().unwrap_or_default().contains("A new.txt"),
        "{output}"
    );
    env.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_patch_changes_nothing_and_tells_the_model() -> anyhow::Result<()> {
    let patch = "*** Begin Patch\n*** Add File: created.txt\n+should not exist\n*** Update File: edit.txt\n@@\n-no such line\n+x\n*** End Patch";
    let args = serde_json::json!({ "input": patch }).to_string();
    let script = Script::new([
        Turn::new([function_call("p1", "apply_patch", args)]),
        Turn::new([assistant_message("could not patch")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    std::fs::write(env.ws().join("edit.txt"), "original\n")?;
    let new = env.start().await?;
    say(&new.conversation, "patch it").await?;
    until_turn_end(&new.conversation).await?;
    assert!(!env.ws().join("created.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.ws().join("edit.txt"))?,
        "original\n"
    );
    let output = env.mock.requests()[1]
        .tool_output("p1")
        .cloned()
        .unwrap_or_default();
    let output = output.as_str().unwrap_or_default().to_string();
    assert!(output.contains("edit.txt"), "{output}");
    assert!(output.contains("no such line"), "{output}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_call_carrying_apply_patch_is_applied_in_process() -> anyhow::Result<()> {
    let script_text = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: via_shell.txt\n+hi\n*** End Patch\nEOF\n";
    let script = Script::new([
        Turn::new([keel_test_support::shell_call(
            "s1",
            ["bash", "-lc", script_text],
        )]),
        Turn::new([assistant_message("ok")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "patch via shell").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(
        std::fs::read_to_string(env.ws().join("via_shell.txt"))?,
        "hi\n"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.msg, EventMsg::ExecCommandBegin(_))),
        "the patch must not run as a shell command: {:?}",
        kinds(&events)
    );
    Ok(())
}

/// Patches into a protected folder are refused without asking, under `never` and
/// `on-request` alike: `.git` (present), `.codex` and `.agents` (missing: not created either).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_obey_the_sandbox_roots_and_keep_protected_folders_read_only() -> anyhow::Result<()>
{
    for approval in ["never", "on-request"] {
        let into_git =
            "*** Begin Patch\n*** Add File: .git/hooks/post-commit\n+#!/bin/sh\n*** End Patch";
        let into_codex =
            "*** Begin Patch\n*** Add File: .codex/hooks.json\n+{\"hooks\": {}}\n*** End Patch";
        let into_agents =
            "*** Begin Patch\n*** Add File: .agents/skills/x/SKILL.md\n+hi\n*** End Patch";
        let inside = "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** End Patch";
        let script = Script::new([
            Turn::new([apply_patch_call("g1", into_git)]),
            Turn::new([apply_patch_call("c1", into_codex)]),
            Turn::new([apply_patch_call("a1", into_agents)]),
            Turn::new([apply_patch_call("i1", inside)]),
            Turn::new([assistant_message("done")]),
        ]);
        let env = TestEnv::new(
            script,
            &[
                ("sandbox_mode", "workspace-write".into()),
                ("approval_policy", approval.into()),
            ],
        )
        .await?;
        std::fs::create_dir_all(env.ws().join(".git/hooks"))?;
        let new = env.start().await?;
        say(&new.conversation, "patch").await?;
        // Nobody is asked: an approval request would hold the turn, and show here.
        let events = until_turn_end(&new.conversation).await?;
        let asked: Vec<String> = kinds(&events)
            .into_iter()
            .filter(|kind| kind.contains("approval"))
            .collect();
        assert_eq!(asked, Vec::<String>::new(), "{approval}");
        assert!(!env.ws().join(".git/hooks/post-commit").exists());
        assert!(!env.ws().join(".codex").exists(), "{approval}");
        assert!(!env.ws().join(".agents").exists(), "{approval}");
        assert_eq!(std::fs::read_to_string(env.ws().join("ok.txt"))?, "fine\n");
        for (call, turn) in [("g1", 1), ("c1", 2), ("a1", 3)] {
            let output = env.mock.requests()[turn]
                .tool_output(call)
                .cloned()
                .unwrap_or_default();
            let text = output.as_str().unwrap_or_default();
            assert!(
                text.contains("protected folder") && text.contains("danger-full-access"),
                "{approval} {call}: {output}"
            );
        }
    }
    Ok(())
}

/// A patch updating a device (through a symlink) or a FIFO is refused at once with what the
/// path is: the engine never reads `/dev/zero` without end or waits on a FIFO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_on_devices_and_fifos_are_refused_without_reading_them() -> anyhow::Result<()> {
    let update =
        |path: &str| format!("*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch");
    let script = Script::new([
        Turn::new([apply_patch_call("z1", update("zero"))]),
        Turn::new([apply_patch_call("f1", update("pipe"))]),
        Turn::new([assistant_message("done")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    std::os::unix::fs::symlink("/dev/zero", env.ws().join("zero"))?;
    nix::unistd::mkfifo(&env.ws().join("pipe"), nix::sys::stat::Mode::S_IRWXU)?;
    let new = env.start().await?;
    say(&new.conversation, "patch").await?;
    until_turn_end(&new.conversation).await?;
    for (call, turn, what) in [("z1", 1, "a character device"), ("f1", 2, "a FIFO")] {
        let output = env.mock.requests()[turn]
            .tool_output(call)
            .cloned()
            .unwrap_or_default();
        let text = output.as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("it is {what}, not a regular file")),
            "{call}: {output}"
        );
    }
    Ok(())
}
