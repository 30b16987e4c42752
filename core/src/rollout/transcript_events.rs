//! Events as a loaded transcript keeps them: command outputs cut to head and tail, huge lines
//! read without their bulk.

use std::path::PathBuf;

use keel_protocol::EventMsg;
use serde::Deserialize;

/// Tokens (about 4 bytes each) of each command output a loaded transcript keeps; the live
/// history is not cut.
pub(super) const TRANSCRIPT_OUTPUT_TOKENS: usize = 256;

/// Event lines longer than this are read without their bulk where possible.
pub(super) const HUGE_LINE_BYTES: usize = 1024 * 1024;

/// An `exec_command_end` line read without its output fields (which serde skips without
/// copying them), the output replaced by a note; `None` for any other event.
pub(super) fn huge_exec_command_end(line: &[u8]) -> Option<keel_protocol::ExecCommandEndEvent> {
    #[derive(Deserialize)]
    struct Line {
        payload: Header,
    }
    #[derive(Deserialize)]
    struct Header {
        #[serde(rename = "type")]
        kind: String,
        call_id: keel_protocol::CallId,
        turn_id: keel_protocol::TurnId,
        command: Vec<String>,
        cwd: PathBuf,
        #[serde(default)]
        parsed_cmd: Vec<keel_protocol::ParsedCommand>,
        #[serde(default)]
        source: keel_protocol::ExecCommandSource,
        #[serde(default)]
        process_id: Option<String>,
        exit_code: i32,
        duration: std::time::Duration,
        status: keel_protocol::ExecCommandStatus,
    }
    let header = serde_json::from_slice::<Line>(line).ok()?.payload;
    if header.kind != "exec_command_end" {
        return None;
    }
    Some(keel_protocol::ExecCommandEndEvent {
        call_id: header.call_id,
        turn_id: header.turn_id,
        command: header.command,
        cwd: header.cwd,
        parsed_cmd: header.parsed_cmd,
        source: header.source,
        process_id: header.process_id,
        stdout: String::new(),
        stderr: String::new(),
        aggregated_output: format!(
            "[output not kept in the transcript: its record is {} bytes]",
            line.len()
        ),
        exit_code: header.exit_code,
        duration: header.duration,
        formatted_output: String::new(),
        status: header.status,
    })
}

/// An event as the transcript keeps it: a command's output once (the aggregated stream, cut
/// to head and tail), not three times.
pub(super) fn for_transcript(event: EventMsg) -> EventMsg {
    let cut = |text: String| {
        if text.len() > TRANSCRIPT_OUTPUT_TOKENS * 4 {
            crate::unified_exec::head_and_tail(&text, TRANSCRIPT_OUTPUT_TOKENS)
        } else {
            text
        }
    };
    match event {
        EventMsg::ExecCommandEnd(mut end) => {
            end.stdout = String::new();
            end.stderr = String::new();
            end.formatted_output = String::new();
            end.aggregated_output = cut(std::mem::take(&mut end.aggregated_output));
            EventMsg::ExecCommandEnd(end)
        }
        other => other,
    }
}
