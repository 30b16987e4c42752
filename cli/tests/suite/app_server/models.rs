//! The model catalogue and `modelProvider/*` through `keel app-server`, as Codex 0.171 answers
//! them: `model/list` pages the catalogue by priority (listed entries, the first the default,
//! `max`/`ultra` among the efforts), a `model_catalog_json` file corrects and extends it, and
//! providers are listed, chosen and edited in the user's `config.toml`.

use keel_test_support::Script;
use serde_json::{Value, json};

use super::common::{World, request_error};

fn slugs(models: &Value) -> Vec<String> {
    models["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|model| model["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_list_pages_the_catalogue_as_codex_does() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[("model", "gpt-6.2-sol".into())]).await?;
    let mut server = world.server().await?;

    let listed = server.request("model/list", json!({})).await?;
    let ids = slugs(&listed);
    assert_eq!(ids.len(), 11, "{ids:?}");
    assert_eq!(
        &ids[..4],
        [
            "gpt-6.2-sol",
            "gpt-6.2-astra",
            "gpt-6.1-terra",
            "gpt-6.1-sol"
        ]
    );
    assert_eq!(ids.last().map(String::as_str), Some("gpt-5.5"));
    assert_eq!(listed["nextCursor"], Value::Null);
    let first = &listed["data"][0];
    assert_eq!(first["isDefault"], true);
    assert_eq!(first["displayName"], "GPT-6.2-Sol");
    assert_eq!(first["defaultReasoningEffort"], "low");
    let efforts: Vec<&str> = first["supportedReasoningEfforts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|option| option["reasoningEffort"].as_str())
        .collect();
    assert_eq!(efforts, ["low", "medium", "high", "xhigh", "max", "ultra"]);
    assert_eq!(first["multiAgentVersion"], "v2");
    assert_eq!(first["inputModalities"], json!(["text", "image"]));
    let older = listed["data"]
        .as_array()
        .and_then(|models| models.iter().find(|model| model["id"] == "gpt-5.6-sol"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(older["upgrade"], "gpt-6-sol");
    assert_eq!(older["upgradeInfo"]["model"], "gpt-6-sol");

    let all = server
        .request("model/list", json!({"includeHidden": true}))
        .await?;
    assert_eq!(slugs(&all).len(), 14);
    assert_eq!(all["data"][13]["id"], "codex-auto-review");
    assert_eq!(all["data"][13]["hidden"], true);

    let page = server.request("model/list", json!({"limit": 2})).await?;
    assert_eq!(slugs(&page), ["gpt-6.2-sol", "gpt-6.2-astra"]);
    assert_eq!(page["nextCursor"], "2");
    let next = server
        .request("model/list", json!({"limit": 2, "cursor": "2"}))
        .await?;
    assert_eq!(slugs(&next), ["gpt-6.1-terra", "gpt-6.1-sol"]);
    let at_least_one = server.request("model/list", json!({"limit": 0})).await?;
    assert_eq!(slugs(&at_least_one).len(), 1);
    let end = server
        .request("model/list", json!({"cursor": "11"}))
        .await?;
    assert_eq!(end["data"], json!([]));

    let bad = request_error(&mut server, "model/list", json!({"cursor": "zzz"})).await?;
    assert_eq!(bad["code"], -32600);
    assert_eq!(bad["message"], "invalid cursor: zzz");
    let past = request_error(&mut server, "model/list", json!({"cursor": "999"})).await?;
    assert_eq!(past["message"], "cursor 999 exceeds total models 11");
    let unknown =
        request_error(&mut server, "model/list", json!({"modelProvider": "nope"})).await?;
    assert_eq!(unknown["code"], -32600);
    assert_eq!(
        unknown["data"],
        json!({"type": "modelProviderNotConfigured", "modelProvider": "nope"})
    );
    Ok(())
}

/// A custom provider's own model is listed alone, as before the catalogue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_providers_model_is_listed_alone() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let listed = server.request("model/list", json!({})).await?;
    assert_eq!(slugs(&listed), ["mock-model"]);
    assert_eq!(listed["data"][0]["isDefault"], true);
    Ok(())
}

/// `model_catalog_json` corrects a built-in entry and adds a new one; a broken file is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalogue_file_corrects_and_extends_the_catalogue() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([]),
        &[
            ("model", "gpt-6.2-sol".into()),
            ("model_catalog_json", "my-models.json".into()),
        ],
    )
    .await?;
    std::fs::write(
        world.home.path().join("my-models.json"),
        json!({"models": [
            {"slug": "gpt-6.2-sol", "display_name": "Sol (house)"},
            {"slug": "house-model", "display_name": "House", "visibility": "list", "priority": 0,
             "default_reasoning_level": "medium",
             "supported_reasoning_levels": [{"effort": "medium", "description": "the one"}]}
        ]})
        .to_string(),
    )?;
    let mut server = world.server().await?;
    let listed = server.request("model/list", json!({})).await?;
    assert_eq!(listed["data"][0]["id"], "house-model");
    assert_eq!(listed["data"][0]["isDefault"], true);
    assert_eq!(listed["data"][1]["displayName"], "Sol (house)");
    assert_eq!(listed["data"][1]["defaultReasoningEffort"], "low");
    assert_eq!(slugs(&listed).len(), 12);

    std::fs::write(world.home.path().join("my-models.json"), "{not json")?;
    let broken = request_error(&mut server, "model/list", json!({})).await?;
    let message = broken["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("model_catalog_json") && message.contains("my-models.json"),
        "{broken}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_providers_are_listed_chosen_and_edited() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let config_file = world.home.path().join("config.toml");
    let mut server = world.server().await?;

    let listed = server.request("modelProvider/list", json!({})).await?;
    assert_eq!(listed["defaultProviderId"], "mock");
    assert_eq!(listed["canChangeDefault"], true);
    assert_eq!(
        listed["data"],
        json!([
            {"id": "mock", "name": "mock", "canEdit": true, "baseUrl": world.mock.uri(),
             "settings": {"type": "customGateway", "auth": {"mode": "none"}}},
            {"id": "openai", "name": "OpenAI", "canEdit": false, "baseUrl": null,
             "settings": {"type": "openai"}}
        ])
    );
    let capabilities = server
        .request("modelProvider/capabilities/read", json!({}))
        .await?;
    assert_eq!(
        capabilities,
        json!({"imageGeneration": false, "webSearch": true})
    );

    // Choosing a provider that is not configured changes nothing.
    let before = std::fs::read_to_string(&config_file)?;
    let refused = request_error(
        &mut server,
        "modelProvider/default/set",
        json!({"providerId": "nope"}),
    )
    .await?;
    assert_eq!(refused["code"], -32600);
    assert_eq!(
        refused["message"],
        "Model provider `nope` is not configured."
    );
    assert_eq!(
        refused["data"],
        json!({"config_write_error_code": "configValidationError"})
    );
    assert_eq!(std::fs::read_to_string(&config_file)?, before);

    let set = server
        .request("modelProvider/default/set", json!({"providerId": "openai"}))
        .await?;
    assert_eq!(set["status"], "ok");
    assert!(
        set["version"]
            .as_str()
            .unwrap_or_default()
            .starts_with("sha256:")
    );
    let file: toml::Table = std::fs::read_to_string(&config_file)?.parse()?;
    assert_eq!(file["model_provider"].as_str(), Some("openai"));

    // A new gateway gets an id from its name and a table of its own.
    let written = server
        .request(
            "modelProvider/config/write",
            json!({"settings": {"type": "customGateway", "name": "My Gateway",
                                "baseUrl": "http://127.0.0.1:8/v1", "envKey": "MY_GW_KEY"}}),
        )
        .await?;
    assert_eq!(
        written["provider"],
        json!({"id": "my-gateway", "name": "My Gateway", "canEdit": true,
               "baseUrl": "http://127.0.0.1:8/v1",
               "settings": {"type": "customGateway",
                            "auth": {"mode": "environmentVariable", "envKey": "MY_GW_KEY"}}})
    );
    let file: toml::Table = std::fs::read_to_string(&config_file)?.parse()?;
    let table = &file["model_providers"]["my-gateway"];
    assert_eq!(table["base_url"].as_str(), Some("http://127.0.0.1:8/v1"));
    assert_eq!(table["env_key"].as_str(), Some("MY_GW_KEY"));
    assert_eq!(table["wire_api"].as_str(), Some("responses"));
    let again = server
        .request(
            "modelProvider/config/write",
            json!({"settings": {"type": "customGateway", "name": "My Gateway",
                                "baseUrl": "http://127.0.0.1:9/v1"}}),
        )
        .await?;
    assert_eq!(again["provider"]["id"], "my-gateway-2");

    // An edit: `null` removes a key, a value replaces it.
    let edited = server
        .request(
            "modelProvider/config/write",
            json!({"settings": {"type": "customGateway", "providerId": "my-gateway",
                                "envKey": null, "name": "Renamed"}}),
        )
        .await?;
    assert_eq!(edited["provider"]["name"], "Renamed");
    assert_eq!(
        edited["provider"]["settings"]["auth"],
        json!({"mode": "none"})
    );

    for (settings, message) in [
        (
            json!({"type": "customGateway", "name": "Only a name"}),
            "A base URL is required to create a custom provider.",
        ),
        (
            json!({"type": "customGateway", "name": "x", "baseUrl": "http://u:p@host/v1"}),
            "Enter an HTTP(S) base URL without credentials, a query, or a fragment.",
        ),
        (
            json!({"type": "customGateway", "providerId": "not-there", "name": "x"}),
            "Unknown provider ID.",
        ),
        (
            json!({"type": "customGateway", "name": "   "}),
            "Enter a provider name.",
        ),
    ] {
        let error = request_error(
            &mut server,
            "modelProvider/config/write",
            json!({"settings": settings}),
        )
        .await?;
        assert_eq!(error["message"], message, "{settings}");
    }
    let bedrock = request_error(
        &mut server,
        "modelProvider/config/write",
        json!({"settings": {"type": "bedrock", "providerId": "amazon-bedrock", "region": "us-east-1"}}),
    )
    .await?;
    assert!(
        bedrock["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Bedrock"),
        "{bedrock}"
    );
    let wrong = request_error(
        &mut server,
        "modelProvider/config/write",
        json!({"settings": {"type": "bedrock", "providerId": "mock"}}),
    )
    .await?;
    assert!(
        wrong["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown variant `mock`"),
        "{wrong}"
    );
    Ok(())
}
