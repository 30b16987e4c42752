//! The OpenAI Responses API: request body and SSE event mapping.

use keel_protocol::TokenUsage;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::client::request_options::RequestOptions;
use crate::client::sse::Frame;
use crate::client::{Prompt, ResponseEvent};
use crate::error::{CoreError, Result};
use crate::models::ResponseItem;
use crate::reasoning_settings::ReasoningSummaryMode;

/// The body of `POST /responses`, borrowing the prompt: serialised straight to bytes, with no
/// intermediate JSON tree of the (possibly megabytes of) history.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: InputItems<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Value]>,
    tool_choice: &'static str,
    parallel_tool_calls: bool,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_metadata: Option<Value>,
}

/// The input as sent: in the Responses-lite shape first the tools (code mode's namespaces, as
/// an `additional_tools` item) and the instructions (as a developer message), then the history,
/// every item but the ones Keel does not model.
struct InputItems<'a> {
    lead: Vec<Value>,
    history: &'a [ResponseItem],
}

impl Serialize for InputItems<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        for item in &self.lead {
            seq.serialize_element(item)?;
        }
        for item in self
            .history
            .iter()
            .filter(|item| !matches!(item, ResponseItem::Other))
        {
            seq.serialize_element(item)?;
        }
        seq.end()
    }
}

/// The JSON body of `POST /responses`, as bytes.
fn request_bytes(settings: &RequestOptions<'_>, prompt: &Prompt) -> Result<Vec<u8>> {
    let family = crate::model_family::family(settings.catalog, settings.model);
    // A model reasons if the table or the configuration says so, or if the user asked for an
    // effort (an unknown model named with an effort is taken at its word).
    let reasons = settings
        .reasoning_override
        .unwrap_or(family.reasoning || settings.reasoning_effort.is_some());
    let reasoning = reasons.then(|| {
        let mut reasoning = serde_json::Map::new();
        if let Some(effort) = settings.reasoning_effort.or(family.default_effort.as_ref()) {
            let effort = settings.catalog.wire_effort(settings.model, effort);
            reasoning.insert("effort".into(), json!(effort));
        }
        if settings.reasoning_summary != ReasoningSummaryMode::None {
            reasoning.insert("summary".into(), json!(settings.reasoning_summary));
        }
        if family.responses_lite {
            // The model keeps its reasoning across every turn of the thread.
            reasoning.insert("context".into(), json!("all_turns"));
        }
        Value::Object(reasoning)
    });
    // Code mode's namespaces travel in the input, ahead of everything, not as `tools`.
    let code_mode = prompt.tools.iter().any(|tool| tool["type"] == "namespace");
    let mut lead = Vec::new();
    if code_mode {
        lead.push(json!({
            "type": "additional_tools",
            "id": format!("at_{}", prompt.conversation_id.as_deref().unwrap_or("keel")),
            "role": "developer",
            "tools": prompt.tools,
        }));
    }
    if family.responses_lite {
        lead.push(
            serde_json::to_value(ResponseItem::developer_text(&prompt.instructions))
                .unwrap_or(Value::Null),
        );
    }
    let body = RequestBody {
        model: settings.model,
        instructions: (!family.responses_lite).then_some(prompt.instructions.as_str()),
        input: InputItems {
            lead,
            history: &prompt.input,
        },
        tools: (!code_mode).then_some(prompt.tools.as_slice()),
        tool_choice: "auto",
        // As Codex 0.169 sends for every model it has no catalogue entry for: the model may
        // make several calls in one answer (Keel runs them in order). Today's models make one
        // at a time (their scripts make several).
        parallel_tool_calls: !family.responses_lite,
        store: false,
        stream: true,
        service_tier: settings
            .service_tier
            .and_then(crate::reasoning_settings::ServiceTier::wire_value),
        prompt_cache_key: prompt.conversation_id.as_deref(),
        reasoning,
        // With `store: false` the provider keeps nothing: the reasoning comes back encrypted
        // and is sent again with the next request, so the model keeps its chain of thought
        // across the tool rounds of a turn.
        include: reasons.then_some(["reasoning.encrypted_content"]),
        text: text_options(
            settings
                .verbosity
                .or(family.default_verbosity)
                .filter(|_| family.verbosity),
            prompt.output_schema.as_ref(),
        ),
        client_metadata: prompt
            .metadata
            .as_ref()
            .map(crate::client::RequestMetadata::client_metadata),
    };
    serde_json::to_vec(&body)
        .map_err(|err| CoreError::Stream(format!("cannot encode the request: {err}")))
}

/// The `text` options: verbosity for models that take it, and the output schema as a strict
/// `json_schema` format when the turn has one.
fn text_options(
    verbosity: Option<crate::reasoning_settings::Verbosity>,
    output_schema: Option<&Value>,
) -> Option<Value> {
    let mut text = serde_json::Map::new();
    if let Some(verbosity) = verbosity {
        text.insert("verbosity".into(), json!(verbosity));
    }
    if let Some(schema) = output_schema {
        text.insert(
            "format".into(),
            json!({"type": "json_schema", "name": OUTPUT_SCHEMA_NAME, "schema": schema, "strict": true}),
        );
    }
    (!text.is_empty()).then_some(Value::Object(text))
}

/// The name the output schema is sent under (Codex's).
pub(super) const OUTPUT_SCHEMA_NAME: &str = "codex_output_schema";

#[derive(Deserialize)]
struct EventEnvelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    summary_index: Option<u32>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Deserialize, Default)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize, Default)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<Usage> for TokenUsage {
    fn from(usage: Usage) -> Self {
        TokenUsage {
            input_tokens: usage.input_tokens,
            cached_input_tokens: usage.input_tokens_details.map_or(0, |d| d.cached_tokens),
            output_tokens: usage.output_tokens,
            reasoning_output_tokens: usage
                .output_tokens_details
                .map_or(0, |d| d.reasoning_tokens),
            total_tokens: usage.total_tokens,
        }
    }
}

/// Maps one SSE frame to zero or more response events.
fn map_frame(frame: &Frame) -> Result<Vec<ResponseEvent>> {
    let envelope: EventEnvelope = serde_json::from_str(&frame.data).map_err(|err| {
        CoreError::Stream(format!(
            "unreadable `{}` event data: {err}",
            if frame.event.is_empty() {
                "message"
            } else {
                &frame.event
            }
        ))
    })?;
    Ok(match envelope.kind.as_str() {
        "response.created" => vec![ResponseEvent::Created],
        "response.output_text.delta" => envelope
            .delta
            .map(ResponseEvent::OutputTextDelta)
            .into_iter()
            .collect(),
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => envelope
            .delta
            .map(ResponseEvent::ReasoningSummaryDelta)
            .into_iter()
            .collect(),
        "response.reasoning_summary_part.added" => vec![ResponseEvent::ReasoningSummaryPartAdded {
            summary_index: envelope.summary_index.unwrap_or_default(),
        }],
        "response.output_item.done" => {
            let mut item = envelope
                .item
                .ok_or_else(|| CoreError::Stream("output_item.done without `item`".into()))?;
            keep_known_parts(&mut item);
            match serde_json::from_value::<ResponseItem>(item) {
                Ok(ResponseItem::Other) => Vec::new(),
                Ok(item) => vec![ResponseEvent::OutputItemDone(item)],
                Err(err) => {
                    return Err(CoreError::Stream(format!("unreadable output item: {err}")));
                }
            }
        }
        "response.completed" => {
            let response = envelope.response.unwrap_or(Value::Null);
            let response_id = response
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let token_usage = response
                .get("usage")
                .cloned()
                .and_then(|usage| serde_json::from_value::<Usage>(usage).ok())
                .map(TokenUsage::from);
            vec![ResponseEvent::Completed {
                response_id,
                token_usage,
            }]
        }
        "response.failed" | "response.incomplete" | "error" => {
            let response = envelope.response.unwrap_or(Value::Null);
            let message = response
                .pointer("/error/message")
                .or_else(|| response.pointer("/incomplete_details/reason"))
                .and_then(Value::as_str)
                .unwrap_or("the provider reported the response as failed")
                .to_string();
            let code = response
                .pointer("/error/code")
                .and_then(Value::as_str)
                .map(str::to_string);
            return Err(CoreError::ResponseFailed { code, message });
        }
        _ => Vec::new(),
    })
}

/// Drops the parts of a message Keel cannot use (`output_audio`, and whatever kinds come
/// next), so one such part does not fail the whole answer; text and refusals stay.
fn keep_known_parts(item: &mut Value) {
    if item.get("type").and_then(Value::as_str) != Some("message") {
        return;
    }
    if let Some(Value::Array(parts)) = item.get_mut("content") {
        parts.retain(|part| {
            let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
            let known = matches!(
                kind,
                "output_text" | "refusal" | "input_text" | "input_image"
            );
            if !known {
                tracing::debug!(kind, "dropping a message part Keel does not use");
            }
            known
        });
    }
}

/// The Responses API's frames: each one says what it is (`response.output_text.delta`, ...),
/// and `response.completed` ends the answer.
struct ResponsesDecoder;

impl crate::client::wire_decoder::WireDecoder for ResponsesDecoder {
    fn map_frame(&mut self, frame: &Frame) -> Result<Vec<ResponseEvent>> {
        map_frame(frame)
    }
}

/// The OpenAI Responses API (`POST /responses`): freeform and hosted tools, remote
/// compaction, and Codex's request metadata as headers.
pub(super) struct ResponsesFormat;

impl crate::client::wire_format::WireFormat for ResponsesFormat {
    fn endpoint_path(&self) -> &'static str {
        "responses"
    }

    fn capabilities(&self) -> crate::client::ProviderCapabilities {
        crate::client::ProviderCapabilities {
            freeform_tools: true,
            hosted_tools: true,
            remote_compaction: true,
        }
    }

    fn request_bytes(&self, settings: &RequestOptions<'_>, prompt: &Prompt) -> Result<Vec<u8>> {
        request_bytes(settings, prompt)
    }

    fn decoder(&self, _prompt: &Prompt) -> Box<dyn crate::client::wire_decoder::WireDecoder> {
        Box::new(ResponsesDecoder)
    }

    fn headers(
        &self,
        settings: &RequestOptions<'_>,
        prompt: &Prompt,
    ) -> Vec<(&'static str, String)> {
        let mut headers: Vec<(&'static str, String)> = prompt
            .metadata
            .as_ref()
            .map(crate::client::RequestMetadata::headers)
            .unwrap_or_default();
        // Today's models are sent the lighter Responses shape, and told so, as Codex does.
        if crate::model_family::family(settings.catalog, settings.model).responses_lite {
            headers.push(("x-openai-internal-codex-responses-lite", "true".into()));
            headers.push(("x-codex-beta-features", "remote_compaction_v2".into()));
        }
        headers
    }
}
