use std::path::PathBuf;

use keel_protocol::schema::{SCHEMA_BUNDLE_FILE, render_schema_files};

const REGENERATE: &str = "cargo run -p keel-protocol --bin keel-schema -- --out docs/schema";

#[test]
fn committed_schema_matches_the_types() -> anyhow::Result<()> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schema");
    let expected = render_schema_files()?;
    assert!(expected.contains_key(SCHEMA_BUNDLE_FILE));
    for (name, contents) in &expected {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            on_disk == *contents,
            "docs/schema/{name} is stale or missing; regenerate with `{REGENERATE}`"
        );
    }
    let mut extra = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && !expected.contains_key(&name) {
            extra.push(name);
        }
    }
    assert!(
        extra.is_empty(),
        "docs/schema has files for types that no longer exist: {extra:?}; regenerate with `{REGENERATE}`"
    );
    Ok(())
}

#[test]
fn bundle_defines_the_top_level_types() -> anyhow::Result<()> {
    let bundle = keel_protocol::schema::schema_bundle();
    for name in [
        "Event",
        "EventMsg",
        "Submission",
        "Op",
        "JsonRpcMessage",
        "ExecServerRequest",
    ] {
        assert!(bundle["$defs"].get(name).is_some(), "bundle lacks {name}");
    }
    let event_msg = serde_json::to_string(&bundle["$defs"]["EventMsg"])?;
    assert!(event_msg.contains("\"exec_approval_request\""));
    Ok(())
}

/// Two types with one schema name would silently share a definition in the bundle.
#[test]
fn every_type_has_its_own_definition_in_the_bundle() -> anyhow::Result<()> {
    let bundle = keel_protocol::schema::schema_bundle();
    let mut names = std::collections::BTreeSet::new();
    for (name, schema) in keel_protocol::schema::wire_schemas() {
        assert!(
            names.insert(name.clone()),
            "two wire types are named {name}"
        );
        let mut standalone = schema.clone();
        if let Some(map) = standalone.as_object_mut() {
            map.remove("$schema");
            map.remove("$defs");
            map.remove("title");
        }
        let mut bundled = bundle["$defs"][&name].clone();
        if let Some(map) = bundled.as_object_mut() {
            map.remove("title");
        }
        assert!(
            bundled == standalone,
            "the bundle's {name} is not the {name} wire type (a schema name collision?)"
        );
    }
    Ok(())
}
