//! A plain SSE client for the mock, as an outside client would see it.

use std::time::{Duration, Instant};

use anyhow::Context;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

/// Bound on every wait in these tests; generous for two busy cores.
pub const WAIT: Duration = Duration::from_secs(30);

/// One SSE event and when it arrived.
#[derive(Debug)]
pub struct Received {
    pub event: String,
    pub data: String,
    pub at: Instant,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|err| panic!("bad data {:?}: {err}", self.data))
    }
}

/// The outcome of reading a stream to its end.
#[derive(Debug)]
pub struct StreamOutcome {
    pub events: Vec<Received>,
    /// The error that ended the stream, if it did not end cleanly.
    pub error: Option<String>,
}

/// An HTTP client for the mock (reqwest is built without a default TLS provider; tests
/// install `ring`, as Keel does).
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A minimal Responses request body.
pub fn responses_body(text: &str) -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
    })
}

/// POSTs `body` to `{base}{path}` and reads the SSE stream to its end.
pub async fn stream(base: &str, path: &str, body: &Value) -> anyhow::Result<StreamOutcome> {
    let response = http()
        .post(format!("{base}{path}"))
        .bearer_auth("test-key")
        .json(body)
        .send()
        .await
        .context("send")?;
    anyhow::ensure!(
        response.status().is_success(),
        "status {}",
        response.status()
    );
    let mut events = response.bytes_stream().eventsource();
    let mut outcome = StreamOutcome {
        events: Vec::new(),
        error: None,
    };
    while let Some(event) = tokio::time::timeout(WAIT, events.next())
        .await
        .context("stream stalled")?
    {
        match event {
            Ok(event) => outcome.events.push(Received {
                event: event.event,
                data: event.data,
                at: Instant::now(),
            }),
            Err(err) => {
                outcome.error = Some(err.to_string());
                break;
            }
        }
    }
    Ok(outcome)
}
