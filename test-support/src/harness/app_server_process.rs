//! [`AppServerProcess`]: a [`JsonLinesProcess`] speaking the app-server protocol (no
//! `jsonrpc` member), with the handshake and the thread/turn calls as one-liners.

use std::ops::{Deref, DerefMut};

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::harness::builder::ProcessBuilder;
use crate::harness::process::JsonLinesProcess;

/// A running app-server over stdio. Derefs to [`JsonLinesProcess`] for raw reads and writes.
#[derive(Debug)]
pub struct AppServerProcess {
    process: JsonLinesProcess,
}

impl AppServerProcess {
    /// Spawns the server configured by `builder`, framing messages without `jsonrpc`.
    pub fn spawn(builder: ProcessBuilder) -> Result<Self> {
        Ok(Self {
            process: builder.without_jsonrpc_field().spawn()?,
        })
    }

    /// `initialize` then `initialized`; returns the `initialize` result.
    pub async fn initialize(&mut self) -> Result<Value> {
        self.initialize_with(json!({})).await
    }

    /// The handshake with the given `capabilities`.
    pub async fn initialize_with(&mut self, capabilities: Value) -> Result<Value> {
        let result = self
            .process
            .request(
                "initialize",
                json!({"clientInfo": {"name": "keel-test", "version": "0"}, "capabilities": capabilities}),
            )
            .await?;
        self.process
            .send_notification("initialized", json!({}))
            .await?;
        Ok(result)
    }

    /// `thread/start` with `params`; returns the thread id.
    pub async fn start_thread(&mut self, params: Value) -> Result<String> {
        let result = self.process.request("thread/start", params).await?;
        string_at(&result, "/thread/id")
    }

    /// `turn/start` with one text input; returns the turn id.
    pub async fn start_turn(&mut self, thread_id: &str, text: &str) -> Result<String> {
        let result = self
            .process
            .request(
                "turn/start",
                json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
            )
            .await?;
        string_at(&result, "/turn/id")
    }

    /// Reads until `turn/completed` for `turn_id` and returns its params.
    pub async fn read_turn_completed(&mut self, turn_id: &str) -> Result<Value> {
        let turn_id = turn_id.to_string();
        let message = self
            .process
            .read_until("turn/completed", |m| {
                m["method"] == "turn/completed" && m["params"]["turn"]["id"] == turn_id.as_str()
            })
            .await?;
        Ok(message["params"].clone())
    }
}

fn string_at(value: &Value, pointer: &str) -> Result<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::UnexpectedMessage {
            what: pointer.to_string(),
            message: value.clone(),
        })
}

impl Deref for AppServerProcess {
    type Target = JsonLinesProcess;

    fn deref(&self) -> &JsonLinesProcess {
        &self.process
    }
}

impl DerefMut for AppServerProcess {
    fn deref_mut(&mut self) -> &mut JsonLinesProcess {
        &mut self.process
    }
}
