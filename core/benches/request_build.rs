//! How long Keel takes to turn a long history into the bytes of one model request, and how
//! big that request is. Not part of `cargo test`; run with
//! `cargo bench -p keel-core --bench request_build` (add `-- --turns N` for another size).
//!
//! Workload: a thread of N turns (default 200), each a user message (~200 B), a
//! `function_call` (`exec_command` with ~150 B of arguments), its output (4 KiB of command
//! output), a reasoning item with ~1 KiB of encrypted content and an assistant message
//! (~400 B): about 1.2 MB of history at 200 turns, with 12 tools and 4.5 KB of instructions,
//! on the Responses API for `gpt-5-codex`. Measured: `ModelClient::request_bytes`, which is
//! what every request of a turn pays before it is sent (the history clone the turn makes is
//! measured separately).

use std::time::{Duration, Instant};

use keel_core::config::WireApi;
use keel_core::{ClientSettings, ContentItem, ModelClient, Prompt, ReasoningSummary, ResponseItem};
use serde_json::json;

fn history(turns: usize) -> Vec<ResponseItem> {
    let mut items = Vec::with_capacity(turns * 5);
    let output_line = "src/lib.rs:42: warning: unused variable `x` (some compiler output)\n";
    let output: String = output_line.repeat(4096 / output_line.len());
    for t in 0..turns {
        items.push(ResponseItem::Message {
            id: None,
            role: "user".to_string(),
            content: vec![ContentItem::InputText {
                text: format!("Turn {t}: please fix the failing test in module {t} and run the suite again; keep the change small and explain what you did."),
            }],
        });
        items.push(ResponseItem::Reasoning {
            id: Some(format!("rs_{t}")),
            summary: vec![ReasoningSummary::SummaryText {
                text: "Looking at the failing test first.".to_string(),
            }],
            encrypted_content: Some("gAAAAB".repeat(170)),
        });
        items.push(ResponseItem::FunctionCall {
            id: None,
            name: "exec_command".to_string(),
            namespace: None,
            arguments: json!({"cmd": format!("cargo test -p module{t} -- --nocapture 2>&1 | tail -n 80"), "yield_time_ms": 10000, "workdir": "/home/user/project"}).to_string(),
            call_id: format!("call_{t}"),
        });
        items.push(ResponseItem::FunctionCallOutput {
            call_id: format!("call_{t}"),
            output: output.clone().into(),
        });
        items.push(ResponseItem::Message {
            id: None,
            role: "assistant".to_string(),
            content: vec![ContentItem::OutputText {
                text: "I changed the comparison in `check_bounds` to include the upper limit, which the test expects; the suite passes now. ".repeat(3),
            }],
        });
    }
    items
}

fn tools() -> Vec<serde_json::Value> {
    (0..12)
        .map(|i| {
            json!({
                "type": "function",
                "name": format!("tool_{i}"),
                "description": "A tool the model may call, described in a sentence or two so the model knows when to use it and what it returns.",
                "strict": false,
                "parameters": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "A path."},
                    "count": {"type": "number", "description": "How many."}
                }, "required": ["path"], "additionalProperties": false}
            })
        })
        .collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut turns = 200;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--turns" {
            turns = args.next().ok_or("--turns needs a number")?.parse()?;
        }
    }
    let client = ModelClient::new(ClientSettings {
        url: "http://127.0.0.1:9/v1/responses".to_string(),
        wire_api: WireApi::Responses,
        headers: Vec::new(),
        api_key: Ok(None),
        model: "gpt-5-codex".to_string(),
        reasoning_effort: None,
        reasoning_summary: Default::default(),
        verbosity: None,
        service_tier: None,
        chat_reasoning_field: None,
        reasoning_override: None,
        stream_idle_timeout: Duration::from_secs(300),
        catalog: keel_core::model_catalog::ModelCatalog::builtin(),
    });
    let prompt = Prompt {
        output_schema: None,
        instructions: "You are Keel. ".repeat(320),
        input: history(turns),
        tools: tools(),
        conversation_id: Some("0199c0de-0000-7000-8000-000000000000".to_string()),
        metadata: None,
    };
    let history_bytes: usize = prompt
        .input
        .iter()
        .map(|item| serde_json::to_vec(item).map_or(0, |v| v.len()))
        .sum();
    let rounds = 200;
    let mut build = Vec::with_capacity(rounds);
    let mut clone = Vec::with_capacity(rounds);
    let mut via_tree = Vec::with_capacity(rounds);
    let mut size = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        let copy = prompt.input.clone();
        clone.push(start.elapsed());
        std::hint::black_box(copy);
        let start = Instant::now();
        let bytes = client.request_bytes(&prompt)?;
        build.push(start.elapsed());
        size = bytes.len();
        std::hint::black_box(bytes);
        // For comparison: the same history through a `serde_json::Value` tree first (how
        // Keel built requests before 2026-11-23).
        let start = Instant::now();
        let tree = serde_json::to_value(&prompt.input)?;
        let bytes = serde_json::to_vec(&tree)?;
        via_tree.push(start.elapsed());
        std::hint::black_box(bytes);
    }
    println!(
        "| turns | history | request | build + serialise (median of {rounds}) | history clone | history via a JSON tree |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {turns} | {:.2} MB | {:.2} MB | {:.3} ms | {:.3} ms | {:.3} ms |",
        history_bytes as f64 / 1e6,
        size as f64 / 1e6,
        median(build).as_secs_f64() * 1e3,
        median(clone).as_secs_f64() * 1e3,
        median(via_tree).as_secs_f64() * 1e3,
    );
    Ok(())
}
