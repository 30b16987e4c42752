//! Skills through the real binaries: a `SKILL.md` under `KEEL_HOME/skills` is listed in the
//! model's instructions and by `skills/list`; `$name` in a message attaches its body; a
//! malformed one is reported, never fatal; a project's own skills load only when the project
//! is trusted.

use std::path::Path;

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::{Value, json};

use super::exec::keel_exec;
use super::hooks::app_server;

fn write_skill(root: &Path, folder: &str, front: &str, body: &str) -> anyhow::Result<()> {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("SKILL.md"), format!("---\n{front}---\n{body}"))?;
    Ok(())
}

/// A user skill, a malformed one, and a project skill in `ws/.agents/skills`.
fn install(home: &Path, ws: &Path) -> anyhow::Result<()> {
    let user = home.join("skills");
    write_skill(
        &user,
        "release-notes",
        "name: release-notes\ndescription: Write release notes from the git log.\n",
        "KEEL-SKILL-BODY: group the commits by crate.\n",
    )?;
    write_skill(&user, "broken", "name: broken-skill\n", "x\n")?;
    write_skill(
        &ws.join(".agents/skills"),
        "house-style",
        "name: house-style\ndescription: The project's code style.\n",
        "Tabs, never spaces.\n",
    )?;
    Ok(())
}

/// Marks `ws` trusted the way Codex records it.
fn trust(home: &Path, ws: &Path) -> anyhow::Result<()> {
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "\n[projects.{}]\ntrust_level = \"trusted\"\n",
        toml::Value::from(ws.display().to_string())
    ));
    std::fs::write(config, text)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_reach_the_model_and_a_named_one_is_attached() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    install(home.path(), ws.path())?;
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["draft them with $release-notes please"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    let body = requests
        .first()
        .map(|request| request.body.to_string())
        .unwrap_or_default();
    let skill_file = home.path().join("skills/release-notes/SKILL.md");
    let root = format!("`r0` = `{}`", home.path().join("skills").display());
    assert!(
        body.contains("<skills_instructions>")
            && body.contains(&root)
            && body.contains(
                "- release-notes: Write release notes from the git log. (file: r0/release-notes/SKILL.md)"
            ),
        "{body}"
    );
    assert!(
        body.contains(&format!("<path>{}</path>", skill_file.display())),
        "{body}"
    );
    // Its body is attached because the message names it; the malformed one is not offered,
    // nor is the untrusted project's.
    assert!(body.contains("KEEL-SKILL-BODY"), "{body}");
    assert!(!body.contains("house-style"), "{body}");
    assert!(!body.contains("broken-skill"), "{body}");
    Ok(())
}

async fn skills_list(home: &Path, ws: &Path) -> anyhow::Result<Value> {
    let mut server = app_server(home, ws).await?;
    let listed = server
        .request("skills/list", json!({"cwds": [ws.display().to_string()]}))
        .await?;
    Ok(listed["data"][0].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_list_reports_skills_errors_and_project_skills_once_trusted() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    install(home.path(), ws.path())?;

    let untrusted = skills_list(home.path(), ws.path()).await?;
    assert_eq!(untrusted["cwd"], ws.path().display().to_string());
    let names = |entry: &Value| -> Vec<(String, String)> {
        entry["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|skill| {
                (
                    skill["name"].as_str().unwrap_or_default().to_string(),
                    skill["scope"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        names(&untrusted),
        [("release-notes".to_string(), "user".to_string())]
    );
    let skill = &untrusted["skills"][0];
    assert_eq!(
        skill["description"],
        "Write release notes from the git log."
    );
    assert_eq!(skill["enabled"], true);
    assert_eq!(
        skill["path"],
        home.path()
            .join("skills/release-notes/SKILL.md")
            .display()
            .to_string()
    );
    let errors = untrusted["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1, "{untrusted}");
    assert_eq!(
        errors[0]["path"],
        home.path()
            .join("skills/broken/SKILL.md")
            .display()
            .to_string()
    );
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing field `description`")),
        "{untrusted}"
    );

    trust(home.path(), ws.path())?;
    let trusted = skills_list(home.path(), ws.path()).await?;
    assert_eq!(
        names(&trusted),
        [
            ("house-style".to_string(), "repo".to_string()),
            ("release-notes".to_string(), "user".to_string())
        ]
    );
    Ok(())
}

/// A skill installed while a thread is loaded: the next turn offers it, and clients are told
/// with `skills/changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_added_during_a_session_is_announced_and_offered() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let mut server = app_server(home.path(), ws.path()).await?;
    let thread_id = server.start_thread(json!({"cwd": ws.path()})).await?;
    let first = server.start_turn(&thread_id, "first").await?;
    server.read_turn_completed(&first).await?;
    write_skill(
        &home.path().join("skills"),
        "late-skill",
        "name: late-skill\ndescription: Installed while the thread ran.\n",
        "x\n",
    )?;
    let second = server.start_turn(&thread_id, "second").await?;
    let changed = server.read_notification("skills/changed").await?;
    assert_eq!(changed["params"], json!({}));
    server.read_turn_completed(&second).await?;
    let requests = mock.requests();
    assert!(!requests[0].body.to_string().contains("late-skill"));
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("- late-skill: Installed while the thread ran.")
    );
    Ok(())
}

/// `skills/config/write` turns a skill off (an entry in the user's config, as Codex writes it)
/// and on again: `skills/list` marks it, and a loaded thread's next turn neither lists it nor
/// attaches it for `$name` while it is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_turned_off_is_listed_as_off_and_not_offered() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    install(home.path(), ws.path())?;
    let mut server = app_server(home.path(), ws.path()).await?;
    let thread_id = server.start_thread(json!({"cwd": ws.path()})).await?;

    let id = server
        .send_request("skills/config/write", json!({"enabled": false}))
        .await?;
    let bad = server.read_response(id).await?["error"].clone();
    assert_eq!(bad["code"], -32602, "{bad}");
    assert!(
        bad["message"]
            .as_str()
            .is_some_and(|m| m.contains("`name`"))
    );

    let answer = server
        .request(
            "skills/config/write",
            json!({"name": "release-notes", "enabled": false}),
        )
        .await?;
    assert_eq!(answer, json!({"effectiveEnabled": false}));
    let config = std::fs::read_to_string(home.path().join("config.toml"))?;
    let table: toml::Table = config.parse()?;
    assert_eq!(
        table["skills"]["config"].as_array().map(Vec::len),
        Some(1),
        "{config}"
    );
    assert_eq!(
        table["skills"]["config"][0]["name"].as_str(),
        Some("release-notes")
    );
    assert_eq!(
        table["skills"]["config"][0]["enabled"].as_bool(),
        Some(false)
    );
    let listed = server
        .request("skills/list", json!({"cwds": [ws.path()]}))
        .await?;
    assert_eq!(listed["data"][0]["skills"][0]["enabled"], false, "{listed}");

    let off = server
        .start_turn(&thread_id, "use $release-notes please")
        .await?;
    server.read_turn_completed(&off).await?;
    let request = mock.requests()[0].body.to_string();
    assert!(!request.contains("- release-notes:"), "{request}");
    assert!(!request.contains("KEEL-SKILL-BODY"), "{request}");

    server
        .request(
            "skills/config/write",
            json!({"name": "release-notes", "enabled": true}),
        )
        .await?;
    let config = std::fs::read_to_string(home.path().join("config.toml"))?;
    assert!(!config.contains("release-notes"), "{config}");
    let on = server
        .start_turn(&thread_id, "use $release-notes please")
        .await?;
    server.read_turn_completed(&on).await?;
    let request = mock.requests()[1].body.to_string();
    assert!(request.contains("- release-notes:"), "{request}");
    assert!(request.contains("KEEL-SKILL-BODY"), "{request}");
    Ok(())
}
