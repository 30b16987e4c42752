//! A tool switch as a config file writes it, whatever its key: `view_image = false` under
//! `[features]` or `[tools]`, or a tool's own table (`[tools.NAME] enabled = false`). Read
//! generically, so a built-in with a switch of its own needs no field of its own in the
//! configuration (its row in the tools' table names the key).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The switch a value states: `Some` for a boolean or a table with a boolean `enabled`,
/// `None` for anything else (Codex's other keys load silently).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SwitchValue(pub Option<bool>);

impl<'de> Deserialize<'de> for SwitchValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        Ok(Self(match &value {
            toml::Value::Boolean(on) => Some(*on),
            toml::Value::Table(table) => table.get("enabled").and_then(toml::Value::as_bool),
            _ => None,
        }))
    }
}

impl Serialize for SwitchValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}
