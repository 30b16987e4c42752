//! `keel app-server generate-json-schema --out DIR`: the JSON Schema of the app-server
//! protocol, one file per message table plus a bundle.

use std::path::Path;

use keel_protocol::app_server::{
    ClientNotification, ClientRequest, ServerNotification, ServerRequest,
};
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The schema documents by file name.
pub fn app_server_schemas() -> Vec<(String, Value)> {
    let settings = SchemaSettings::draft07();
    let mut files = vec![
        (
            "ClientRequest.json".to_string(),
            settings
                .clone()
                .into_generator()
                .into_root_schema_for::<ClientRequest>()
                .to_value(),
        ),
        (
            "ClientNotification.json".to_string(),
            settings
                .clone()
                .into_generator()
                .into_root_schema_for::<ClientNotification>()
                .to_value(),
        ),
        (
            "ServerNotification.json".to_string(),
            settings
                .clone()
                .into_generator()
                .into_root_schema_for::<ServerNotification>()
                .to_value(),
        ),
        (
            "ServerRequest.json".to_string(),
            settings
                .clone()
                .into_generator()
                .into_root_schema_for::<ServerRequest>()
                .to_value(),
        ),
    ];
    let mut generator = settings.into_generator();
    generator.subschema_for::<ClientRequest>();
    generator.subschema_for::<ClientNotification>();
    generator.subschema_for::<ServerNotification>();
    generator.subschema_for::<ServerRequest>();
    let definitions: serde_json::Map<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    files.push((
        "keel_app_server_protocol.schemas.json".to_string(),
        serde_json::json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "KeelAppServerProtocol",
            "definitions": definitions,
        }),
    ));
    files
}

/// Writes [`app_server_schemas`] into `dir` (created if missing).
pub fn write_json_schema(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, schema) in app_server_schemas() {
        let mut text = serde_json::to_string_pretty(&schema).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}
