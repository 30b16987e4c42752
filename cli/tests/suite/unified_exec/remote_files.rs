//! A remote environment's files: with `exec_server_url`, a turn's patches are planned and
//! written by the exec-server on its host (the `patch.v1` extension), under the sandbox the
//! engine decided, like its commands. The exec-server here runs as a separate process that
//! needs a token, in a mount namespace whose workspace is a tmpfs of its own: what it writes
//! is not on the engine's disk, so the test tells "written remotely" from "written locally".
//! The files a turn reads for itself (`AGENTS.md`, an image for `view_image`) are read there
//! too (the `fs.v1` extension).

use base64::Engine;
use keel_test_support::{ProcessBuilder, Turn, apply_patch_call, exec_command_call, function_call};
use serde_json::json;

use super::{run_prompt_with_config, run_with_config};
use crate::suite::images::images_in;

/// A server in a mount namespace of its own whose `workspace` is a tmpfs, where `setup` (a
/// shell command run in it) leaves the server's own files.
fn namespaced_exec_server(
    workspace: &std::path::Path,
    token_file: &std::path::Path,
    setup: &str,
) -> ProcessBuilder {
    let (ws, keel, token) = (
        workspace.display(),
        env!("CARGO_BIN_EXE_keel"),
        token_file.display(),
    );
    let script = format!(
        "mount -t tmpfs keel-remote-root '{ws}' && cd '{ws}' && {setup} && exec '{keel}' \
         exec-server --listen ws://127.0.0.1:0 --ws-auth capability-token --ws-token-file '{token}'"
    );
    ProcessBuilder::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("KEEL_LOG", "keel_exec_server=debug")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mount_namespaces),
    ignore = "needs mount namespaces (unshare --mount, as root; .ci/run runs as root)"
)]
async fn patches_are_written_on_the_exec_servers_host_under_its_sandbox() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let secrets = tempfile::tempdir()?;
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "remote-files-token")?;
    // Outside every writable root (the sandbox below leaves /tmp out).
    let outside = tempfile::tempdir()?;
    let mut server = namespaced_exec_server(ws.path(), &token_file, "true").spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);

    let add = "*** Begin Patch\n*** Add File: hello.txt\n+written remotely\n*** End Patch\n";
    let update = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-written remotely\n+edited remotely\n*** End Patch\n";
    let escape =
        "*** Begin Patch\n*** Add File: escape/pwned.txt\n+should never land\n*** End Patch\n";
    let run = run_with_config(
        ws.path(),
        vec![
            Turn::new([apply_patch_call("p1", add)]),
            Turn::new([apply_patch_call("p2", update)]),
            Turn::new([exec_command_call(
                "c1",
                json!({
                    "cmd": format!("cat hello.txt && ln -s '{}' escape", outside.path().display()),
                    "login": false,
                }),
            )]),
            Turn::new([apply_patch_call("p3", escape)]),
        ],
        &[("KEEL_TEST_EXEC_TOKEN", "remote-files-token")],
        &[
            ("exec_server_url", toml::Value::from(url)),
            ("exec_server_auth_token_env", "KEEL_TEST_EXEC_TOKEN".into()),
            ("sandbox_mode", "workspace-write".into()),
            ("sandbox_workspace_write.exclude_slash_tmp", true.into()),
            (
                "sandbox_workspace_write.exclude_tmpdir_env_var",
                true.into(),
            ),
        ],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    let added = run.output("p1");
    assert!(added.contains("hello.txt"), "{added}");
    assert!(!added.contains("failed"), "{added}");
    let edited = run.output("p2");
    assert!(!edited.contains("failed"), "{edited}");
    // Written in the server's workspace, not on the engine's disk.
    assert!(!ws.path().join("hello.txt").exists());
    let shown = run.output("c1");
    assert!(shown.contains("edited remotely"), "{shown}");

    // A link the model planted on the remote host does not carry a write out of the roots.
    let refused = run.output("p3");
    assert!(refused.contains("patch rejected"), "{refused}");
    assert!(refused.contains("symlink"), "{refused}");
    assert!(!outside.path().join("pwned.txt").exists());

    server
        .wait_for_stderr_line("the command ran on the server", |line| {
            line.contains("started") && line.contains("cat hello.txt")
        })
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mount_namespaces),
    ignore = "needs mount namespaces (unshare --mount, as root; .ci/run runs as root)"
)]
async fn agents_md_skills_and_images_are_read_on_the_exec_servers_host() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    // What the engine's host has at the same path; the remote environment has other files.
    std::fs::write(ws.path().join("AGENTS.md"), "local-docs-marker\n")?;
    let local_skill = ws.path().join(".agents/skills/local-skill");
    std::fs::create_dir_all(&local_skill)?;
    std::fs::write(
        local_skill.join("SKILL.md"),
        "---\nname: local-skill\ndescription: local-skill-description\n---\nlocal body\n",
    )?;
    // A project hook on the engine's host at that path is not the environment's: it must not
    // run (hooks run on the engine's host).
    let hook_ran = tempfile::tempdir()?;
    let marker = hook_ran.path().join("local-project-hook-ran");
    std::fs::create_dir_all(ws.path().join(".codex"))?;
    std::fs::write(
        ws.path().join(".codex/hooks.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", marker.display())}]}]}})
        .to_string(),
    )?;
    std::fs::write(ws.path().join("local.png"), b"\x89PNG\r\n\x1a\nlocal")?;
    let secrets = tempfile::tempdir()?;
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "remote-reads-token")?;
    // A PNG signature and a marker, written by the server's own namespace.
    let setup = "printf 'remote-docs-marker\\n' > AGENTS.md \
        && printf '\\211PNG\\r\\n\\032\\nremote' > remote.png \
        && mkdir -p .agents/skills/tools/remote-skill \
        && printf -- '---\\nname: remote-skill\\ndescription: remote-skill-description\\n---\\nremote-skill-body\\n' \
           > .agents/skills/tools/remote-skill/SKILL.md";
    let mut server = namespaced_exec_server(ws.path(), &token_file, setup).spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);

    // The project is trusted, so its skills count.
    let trusted = toml::Value::Table(toml::toml! { trust_level = "trusted" });
    let mut projects = toml::Table::new();
    projects.insert(ws.path().display().to_string(), trusted);
    let run = run_prompt_with_config(
        ws.path(),
        "use $remote-skill",
        vec![
            Turn::new([function_call(
                "v1",
                "view_image",
                r#"{"path":"remote.png"}"#,
            )]),
            Turn::new([function_call("v2", "view_image", r#"{"path":"local.png"}"#)]),
        ],
        &[("KEEL_TEST_EXEC_TOKEN", "remote-reads-token")],
        &[
            ("exec_server_url", toml::Value::from(url)),
            ("exec_server_auth_token_env", "KEEL_TEST_EXEC_TOKEN".into()),
            ("projects", toml::Value::Table(projects)),
            ("bypass_hook_trust", true.into()),
        ],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    let requests = run.mock.requests();
    let first = serde_json::to_string(&requests[0].body)?;
    assert!(first.contains("remote-docs-marker"), "{first}");
    assert!(!first.contains("local-docs-marker"), "{first}");
    // The project's skills are the remote environment's, and a named one comes with its body.
    assert!(first.contains("remote-skill-description"), "{first}");
    assert!(first.contains("remote-skill-body"), "{first}");
    assert!(!first.contains("local-skill"), "{first}");
    assert!(!marker.exists(), "the engine's host's project hook ran");

    assert!(
        run.output("v1").contains("attached image remote.png"),
        "{}",
        run.output("v1")
    );
    let remote_png = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nremote")
    );
    assert!(
        requests
            .iter()
            .any(|request| images_in(request.input()).contains(&remote_png)),
        "the remote image never reached the model"
    );
    // The engine's own file at that path is not the environment's.
    let missing = run.output("v2");
    assert!(
        missing.contains("no such file in the remote environment"),
        "{missing}"
    );

    server
        .wait_for_stderr_line("the server answered the file reads", |line| {
            line.contains("fs/read")
        })
        .await?;
    Ok(())
}
