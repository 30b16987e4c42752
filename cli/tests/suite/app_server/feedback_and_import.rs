//! `feedback/save` and `externalAgentConfig/*` over `keel app-server`: a report written as a
//! zip archive with the thread's record; a project's `CLAUDE.md` found, imported as its
//! `AGENTS.md` with progress, and kept in the import history across restarts.

use std::io::Read;

use anyhow::Context;
use keel_test_support::{Script, Turn, assistant_message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{World, request_error, until_turn_completed};

fn zip_entry(path: &std::path::Path, name: &str) -> anyhow::Result<String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path)?)?;
    let mut text = String::new();
    archive.by_name(name)?.read_to_string(&mut text)?;
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_is_saved_as_an_archive_with_the_threads_record() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([Turn::new([assistant_message("done it")])]),
        &[],
    )
    .await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "please do it").await?;
    until_turn_completed(&mut server, &turn).await?;
    let out = tempfile::tempdir()?;
    let path = out.path().join("report.zip");

    let saved = server
        .request(
            "feedback/save",
            json!({"classification": "bug", "savePath": path, "reason": "it broke",
                   "threadId": thread, "includeLogs": true, "tags": {"k": "v"}}),
        )
        .await?;
    assert_eq!(
        saved,
        json!({"savedPath": path, "threadId": thread, "promptHash": null})
    );
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path)?.permissions()) & 0o777,
        0o600
    );
    let report: Value = serde_json::from_str(&zip_entry(&path, "report.json")?)?;
    assert_eq!(report["classification"], "bug");
    assert_eq!(report["reason"], "it broke");
    assert_eq!(report["tags"], json!({"k": "v"}));
    let manifest: Value = serde_json::from_str(&zip_entry(&path, "manifest.json")?)?;
    let entry = manifest[0]["entry"].as_str().context("an attachment")?;
    assert!(zip_entry(&path, entry)?.contains("please do it"));

    // Without a thread: a made-up id; a relative path is refused.
    let other = out.path().join("plain");
    let saved = server
        .request(
            "feedback/save",
            json!({"classification": "good_result", "savePath": other}),
        )
        .await?;
    assert!(
        saved["threadId"]
            .as_str()
            .is_some_and(|id| id.starts_with("no-active-thread-")),
        "{saved}"
    );
    assert!(other.is_file());
    let error = request_error(
        &mut server,
        "feedback/save",
        json!({"classification": "bug", "savePath": "rel.zip"}),
    )
    .await?;
    assert_eq!(
        error["message"],
        "feedback savePath must be an absolute host path"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_claude_md_is_imported_and_the_import_recorded() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let project = tempfile::tempdir()?;
    std::fs::write(project.path().join("CLAUDE.md"), "Run the tests first.\n")?;
    let mut server = world.server().await?;

    let detected = server
        .request(
            "externalAgentConfig/detect",
            json!({"cwds": [project.path()]}),
        )
        .await?;
    let items = detected["items"].as_array().context("items")?.clone();
    assert_eq!(items.len(), 1, "{detected}");
    assert_eq!(items[0]["itemType"], "AGENTS_MD");

    let skills_item = json!({"itemType": "SKILLS", "description": "skills", "cwd": null});
    let started = server
        .request(
            "externalAgentConfig/import",
            json!({"migrationItems": [items[0], skills_item], "providerId": "claude"}),
        )
        .await?;
    let import_id = started["importId"]
        .as_str()
        .context("importId")?
        .to_string();
    let first = server
        .read_notification("externalAgentConfig/import/progress")
        .await?;
    assert_eq!(first["params"]["importId"], import_id.as_str());
    let success = &first["params"]["itemTypeResults"][0]["successes"][0];
    assert_eq!(
        success["target"],
        project.path().join("AGENTS.md").display().to_string()
    );
    server
        .read_notification("externalAgentConfig/import/progress")
        .await?;
    let completed = server
        .read_notification("externalAgentConfig/import/completed")
        .await?;
    let failure = &completed["params"]["itemTypeResults"][1]["failures"][0];
    assert_eq!(failure["message"], "Keel does not import SKILLS items");
    assert_eq!(
        std::fs::read_to_string(project.path().join("AGENTS.md"))?,
        "Run the tests first.\n"
    );
    // Nothing left to offer, and a second import does not overwrite.
    let detected = server
        .request(
            "externalAgentConfig/detect",
            json!({"cwds": [project.path()]}),
        )
        .await?;
    assert_eq!(detected["items"], json!([]));

    let recorded = server
        .request(
            "externalAgentConfig/import/recordHistory",
            json!({"providerId": "p2", "itemTypeResults": []}),
        )
        .await?;
    assert!(recorded["importId"].is_string());
    drop(server);

    let mut server = world.server().await?;
    let history = server
        .request("externalAgentConfig/import/readHistories", json!(null))
        .await?;
    let data = history["data"].as_array().context("data")?;
    assert_eq!(data.len(), 2, "{history}");
    assert_eq!(data[0]["providerId"], "p2", "newest first");
    assert_eq!(data[1]["importId"], import_id.as_str());
    assert_eq!(data[1]["successes"][0]["itemType"], "AGENTS_MD");
    assert_eq!(history["connectors"], json!([]));
    Ok(())
}
