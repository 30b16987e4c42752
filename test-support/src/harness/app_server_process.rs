//! [`AppServerProcess`]: a [`JsonLinesProcess`] speaking the app-server protocol (no
//! `jsonrpc` member), with the handshake and the thread/turn calls as one-liners.

use std::ops::{Deref, DerefMut};

use keel_protocol::{RpcNotification, RpcRequest};
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

/// The typed side of the client: requests and notifications named by their marker types in
/// keel-protocol's method tables (`client_request::ThreadStart`, `server_notification::…`),
/// so a test builds params and reads results as the protocol's own structs and the compiler
/// checks every field name. Raw JSON (`request`, `read_until`) stays for tests of wire shapes.
impl AppServerProcess {
    /// Sends request `M` and returns its result as `M`'s response type; a JSON-RPC error is
    /// [`Error::JsonRpc`], a result of another shape [`Error::Shape`].
    pub async fn call<M: RpcRequest>(&mut self, params: M::Params) -> Result<M::Response> {
        let params = serde_json::to_value(params)?;
        let result = self.process.request(M::METHOD, params).await?;
        decode(&format!("the result of {}", M::METHOD), result)
    }

    /// Reads until notification `N` whose params satisfy `matches`, and returns them.
    pub async fn next_notification<N: RpcNotification>(
        &mut self,
        matches: impl Fn(&N::Params) -> bool,
    ) -> Result<N::Params> {
        let message = self
            .process
            .read_until(N::METHOD, |message| {
                message["method"] == N::METHOD
                    && serde_json::from_value::<N::Params>(message["params"].clone())
                        .is_ok_and(|params| matches(&params))
            })
            .await?;
        decode(
            &format!("the params of {}", N::METHOD),
            message["params"].clone(),
        )
    }
}

/// `value` as `T`, or [`Error::Shape`] naming `what`.
fn decode<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T> {
    serde_json::from_value(value.clone()).map_err(|source| Error::Shape {
        what: what.to_string(),
        source,
        message: value,
    })
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
