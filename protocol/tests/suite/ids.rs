use std::str::FromStr;

use keel_protocol::{CallId, ConversationId};
use pretty_assertions::assert_eq;

#[test]
fn conversation_id_is_a_plain_uuid_v7_string() -> anyhow::Result<()> {
    let id = ConversationId::new();
    assert_eq!(id.as_uuid().get_version_num(), 7);
    let json = serde_json::to_string(&id)?;
    assert_eq!(json, format!("\"{id}\""));
    assert_eq!(serde_json::from_str::<ConversationId>(&json)?, id);
    assert_eq!(ConversationId::from_str(&id.to_string())?, id);
    Ok(())
}

#[test]
fn conversation_ids_sort_by_creation() {
    let first = ConversationId::new();
    let second = ConversationId::new();
    assert!(first < second);
}

#[test]
fn bad_conversation_id_names_the_input() {
    let err = ConversationId::from_str("not-a-uuid").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("not-a-uuid"), "{text}");
    assert!(text.contains("expected a UUID"), "{text}");
}

#[test]
fn string_ids_serialise_transparently() -> anyhow::Result<()> {
    let id = CallId::new("call_1");
    assert_eq!(serde_json::to_string(&id)?, "\"call_1\"");
    assert_eq!(id.as_str(), "call_1");
    Ok(())
}
