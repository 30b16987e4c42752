//! `keel revert` on a session `keel exec` recorded: the latest turn is dropped and, with
//! `--files`, the file it changed is put back; a count beyond the session is a usage error.

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, shell_call, write_config,
};

use super::exec::keel_exec;
use super::session_commands::{keel, session};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_revert_drops_the_last_turn_and_restores_its_files() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call("w1", ["sh", "-c", "echo one > notes.txt"])]),
        Turn::new([assistant_message("wrote one")]),
        Turn::new([shell_call(
            "w2",
            ["sh", "-c", "echo two > notes.txt && echo x > extra.txt"],
        )]),
        Turn::new([assistant_message("wrote two")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("sandbox_mode", toml::Value::from("danger-full-access"))],
    )?;
    let id = session(home.path(), ws.path(), "write one").await?;
    let out = keel_exec(home.path(), ws.path(), &["resume", &id, "write two"], None).await?;
    anyhow::ensure!(out.code == Some(0), "{}", out.stderr);
    anyhow::ensure!(std::fs::read_to_string(ws.path().join("notes.txt"))? == "two\n");

    let out = keel(home.path(), ws.path(), &["revert", &id, "--turns", "5"]).await?;
    anyhow::ensure!(out.code == Some(2), "{}{}", out.stdout, out.stderr);
    anyhow::ensure!(out.stderr.contains("cannot drop 5"), "{}", out.stderr);

    let out = keel(home.path(), ws.path(), &["revert", &id, "--files"]).await?;
    anyhow::ensure!(out.code == Some(0), "{}{}", out.stdout, out.stderr);
    anyhow::ensure!(
        out.stdout.contains("restored notes.txt")
            && out.stdout.contains("restored extra.txt")
            && out.stdout.contains("now has 1 turns"),
        "{}",
        out.stdout
    );
    anyhow::ensure!(std::fs::read_to_string(ws.path().join("notes.txt"))? == "one\n");
    anyhow::ensure!(!ws.path().join("extra.txt").exists());
    Ok(())
}
