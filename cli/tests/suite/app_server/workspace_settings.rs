//! Switches a client sets for the server's lifetime, over `keel app-server`: extra skill
//! roots (announced by `skills/changed`, listed, offered to a new thread's model), feature
//! enablement (Keel's features kept, others dropped, gone after a restart), and a person's
//! approval of an action an automatic reviewer denied (the model is told).

use anyhow::Context;
use keel_test_support::{Script, Turn, assistant_message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{World, request_error, until_turn_completed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_skill_roots_and_feature_switches_last_as_long_as_the_server() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let extra = tempfile::tempdir()?;
    let skill = extra.path().join("myskill");
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: myskill\ndescription: My extra-root skill\n---\nDo the thing.\n",
    )?;
    let mut server = world.server().await?;

    // `skills/changed` comes before the answer.
    let id = server
        .send_request(
            "skills/extraRoots/set",
            json!({"extraRoots": [extra.path()]}),
        )
        .await?;
    let first = server.read_message().await?;
    assert_eq!(first["method"], "skills/changed", "{first}");
    let answer = server.read_response(id).await?;
    assert_eq!(answer["result"], json!({}));
    let listed = server
        .request("skills/list", json!({"cwds": [world.ws()]}))
        .await?;
    let skills = listed["data"][0]["skills"].as_array().context("skills")?;
    let found = skills
        .iter()
        .find(|skill| skill["name"] == "myskill")
        .with_context(|| format!("myskill not listed: {listed}"))?;
    assert_eq!(found["scope"], "user");
    assert_eq!(skills[0]["name"], "myskill", "extra roots come first");

    // A thread started now offers it to the model.
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "hi").await?;
    until_turn_completed(&mut server, &turn).await?;
    let request = world.mock.requests().pop().context("a model request")?;
    assert!(
        request.body.to_string().contains("My extra-root skill"),
        "the skill is not offered: {}",
        request.body
    );

    let error = request_error(
        &mut server,
        "skills/extraRoots/set",
        json!({"extraRoots": ["relative/dir"]}),
    )
    .await?;
    assert_eq!(error["code"], -32602, "{error}");

    // Features: Keel's are kept and shown, others dropped.
    let set = server
        .request(
            "experimentalFeature/enablement/set",
            json!({"enablement": {"goals": false, "not_a_feature": true}}),
        )
        .await?;
    assert_eq!(set, json!({"enablement": {"goals": false}}));
    let goals = |list: &Value| {
        list["data"]
            .as_array()
            .and_then(|data| data.iter().find(|f| f["name"] == "goals").cloned())
            .unwrap_or_default()
    };
    let list = server
        .request("experimentalFeature/list", json!({}))
        .await?;
    assert_eq!(goals(&list)["enabled"], false);
    assert_eq!(goals(&list)["defaultEnabled"], true);
    let error = request_error(
        &mut server,
        "experimentalFeature/enablement/set",
        json!({"enablement": {"goals": "yes"}}),
    )
    .await?;
    assert_eq!(error["code"], -32602);
    drop(server);

    // Neither outlives the server, and nothing was written to `config.toml`.
    let config = std::fs::read_to_string(world.home.path().join("config.toml"))?;
    assert!(
        !config.contains("goals") && !config.contains("extra"),
        "{config}"
    );
    let mut server = world.server().await?;
    let list = server
        .request("experimentalFeature/list", json!({}))
        .await?;
    assert_eq!(goals(&list)["enabled"], true);
    let listed = server
        .request("skills/list", json!({"cwds": [world.ws()]}))
        .await?;
    assert!(!listed.to_string().contains("myskill"), "{listed}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_approval_of_a_denied_action_reaches_the_model() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("ok")])]), &[]).await?;
    let mut server = world.server().await?;
    let event = json!({"id": "g1", "status": "denied",
        "action": {"type": "command", "command": "rm -rf build", "cwd": "/tmp", "source": "shell"}});

    // The event is checked first, then the thread must be loaded.
    let error = request_error(
        &mut server,
        "thread/approveGuardianDeniedAction",
        json!({"threadId": "00000000-0000-7000-8000-000000000000", "event": {}}),
    )
    .await?;
    assert_eq!(
        error["message"],
        "invalid Guardian denial event: missing field `id`"
    );
    let error = request_error(
        &mut server,
        "thread/approveGuardianDeniedAction",
        json!({"threadId": "00000000-0000-7000-8000-000000000000", "event": event}),
    )
    .await?;
    assert_eq!(error["code"], -32600);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("thread not found")),
        "{error}"
    );

    let thread = server.start_thread(world.thread_params()).await?;
    assert_eq!(
        server
            .request(
                "thread/approveGuardianDeniedAction",
                json!({"threadId": thread, "event": event}),
            )
            .await?,
        json!({})
    );
    let turn = server.start_turn(&thread, "go on").await?;
    until_turn_completed(&mut server, &turn).await?;
    let request = world.mock.requests().pop().context("a model request")?;
    let told = request
        .input()
        .iter()
        .any(|item| item["role"] == "developer" && item.to_string().contains("rm -rf build"));
    assert!(told, "the model was not told: {:#?}", request.input());
    Ok(())
}
