//! Identifiers that cross the wire. Each is a newtype so a turn id can never be passed where a
//! call id is meant; all serialise as plain JSON strings.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Identifies one conversation (a Codex "thread" or "session") for its whole life, across
/// resume and in rollout files. A UUID v7, so ids sort by creation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConversationId(Uuid);

impl ConversationId {
    /// A fresh, time-ordered id for a new conversation.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// The underlying UUID, for embedders that store ids in their own tables.
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl Default for ConversationId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<Uuid> for ConversationId {
    fn from(value: Uuid) -> Self {
        Self(value)
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Why a string could not be read as a [`ConversationId`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationIdParseError {
    input: String,
    reason: String,
}

impl fmt::Display for ConversationIdParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid conversation id `{}`: {} (expected a UUID such as 0193c2a4-5b1e-7cc0-8a51-1f0e6d3b9a77)",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ConversationIdParseError {}

impl FromStr for ConversationId {
    type Err = ConversationIdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s)
            .map(Self)
            .map_err(|err| ConversationIdParseError {
                input: s.to_string(),
                reason: err.to_string(),
            })
    }
}

impl JsonSchema for ConversationId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ConversationId".into()
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "uuid" })
    }
}

/// Declares a string newtype id with the conversions every id needs.
macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an id received from the wire or minted by the caller.
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The id as the string it is on the wire.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_string())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

string_id!(
    /// Names one submission on the engine queue; every event it causes carries the same id.
    SubmissionId
);
string_id!(
    /// Names one turn of a conversation (one user input and everything the agent did for it).
    TurnId
);
string_id!(
    /// Names one tool call the model made, so its approval, output and events can be matched.
    CallId
);
string_id!(
    /// Names one process started by an exec-server; unique per connection, not an OS pid.
    ExecSessionId
);
