//! Reasoning effort as an open set: each model advertises its own levels (`none` … `xhigh`,
//! and today's `max` and `ultra`), so a client must be able to name one Keel has never seen.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// How hard a reasoning model thinks before answering: one of the levels its model advertises.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ReasoningEffort(Cow<'static, str>);

/// Why a string is not a reasoning effort.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reasoning_effort must not be empty")]
pub struct InvalidReasoningEffort;

impl ReasoningEffort {
    /// No reasoning at all, where the model supports it.
    pub const NONE: Self = Self(Cow::Borrowed("none"));
    /// As little as possible.
    pub const MINIMAL: Self = Self(Cow::Borrowed("minimal"));
    /// Light reasoning.
    pub const LOW: Self = Self(Cow::Borrowed("low"));
    /// The usual default.
    pub const MEDIUM: Self = Self(Cow::Borrowed("medium"));
    /// Thorough reasoning.
    pub const HIGH: Self = Self(Cow::Borrowed("high"));
    /// Extra-high reasoning.
    pub const XHIGH: Self = Self(Cow::Borrowed("xhigh"));
    /// The most today's models offer at their usual speed.
    pub const MAX: Self = Self(Cow::Borrowed("max"));
    /// Beyond `max`, where a model offers it.
    pub const ULTRA: Self = Self(Cow::Borrowed("ultra"));

    /// An effort by name, kept as written (a model may advertise a level Keel has never
    /// seen, and it is sent on as given); only an empty name is refused, as Codex refuses it.
    pub fn new(name: &str) -> Result<Self, InvalidReasoningEffort> {
        if name.is_empty() {
            return Err(InvalidReasoningEffort);
        }
        let known = [
            Self::NONE,
            Self::MINIMAL,
            Self::LOW,
            Self::MEDIUM,
            Self::HIGH,
            Self::XHIGH,
            Self::MAX,
            Self::ULTRA,
        ];
        Ok(known
            .into_iter()
            .find(|effort| effort.as_str() == name)
            .unwrap_or_else(|| Self(Cow::Owned(name.to_string()))))
    }

    /// The name sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = InvalidReasoningEffort;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::new(name)
    }
}

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <Cow<'de, str>>::deserialize(deserializer)?;
        Self::new(&name).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ReasoningEffort {
    fn schema_name() -> Cow<'static, str> {
        "ReasoningEffort".into()
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A non-empty reasoning effort name advertised by the model.",
            "type": "string",
            "minLength": 1
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_new_names_round_trip() {
        let efforts: Vec<ReasoningEffort> =
            serde_json::from_str(r#"["medium","xhigh","max","ultra","turbo"]"#).unwrap();
        assert_eq!(efforts[0], ReasoningEffort::MEDIUM);
        assert_eq!(efforts[1], ReasoningEffort::XHIGH);
        assert_eq!(efforts[3], ReasoningEffort::ULTRA);
        assert_eq!(efforts[4].as_str(), "turbo");
        assert_eq!(
            serde_json::to_string(&efforts).unwrap(),
            r#"["medium","xhigh","max","ultra","turbo"]"#
        );
        let err = serde_json::from_str::<ReasoningEffort>(r#""""#).unwrap_err();
        assert!(err.to_string().contains("must not be empty"), "{err}");
        assert_eq!("MAX".parse::<ReasoningEffort>().unwrap().as_str(), "MAX");
    }
}
