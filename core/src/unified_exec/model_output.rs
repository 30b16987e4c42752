//! The text an `exec_command` or `write_stdin` call returns to the model, in the layout
//! models are trained on: a few `Key: value` lines, then the output, cut in the middle when
//! it is over the call's token budget.

use std::fmt::Write as _;
use std::time::Duration;

use rand::Rng;

/// Bytes per token, for estimating token counts without a tokenizer.
const BYTES_PER_TOKEN: usize = 4;

/// Whether the process was still there when the call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessStatus {
    /// It exited with this code.
    Exited(i32),
    /// It is running; poll or write to it with this session id.
    Running(i32),
}

/// Everything one call reports.
#[derive(Debug)]
pub(crate) struct ChunkReport<'a> {
    pub cmd: &'a str,
    pub wall_time: Duration,
    pub status: ProcessStatus,
    /// What the process printed during this call.
    pub output: &'a str,
    pub max_output_tokens: usize,
    /// Lines the model should read before the output (a session pruned, output lost).
    pub notes: &'a [String],
}

/// Estimated tokens of `text`.
pub(crate) fn approx_tokens(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// Renders a call's result.
pub(crate) fn render_chunk(report: &ChunkReport<'_>) -> String {
    let chunk_id: u32 = rand::rng().random_range(0..0x100_0000);
    let mut text = String::new();
    let _ = writeln!(text, "Command: {}", report.cmd);
    let _ = writeln!(text, "Chunk ID: {chunk_id:06x}");
    let _ = writeln!(
        text,
        "Wall time: {:.4} seconds",
        report.wall_time.as_secs_f64()
    );
    match report.status {
        ProcessStatus::Exited(code) => {
            let _ = writeln!(text, "Process exited with code {code}");
        }
        ProcessStatus::Running(id) => {
            let _ = writeln!(text, "Process running with session ID {id}");
        }
    }
    for note in report.notes {
        let _ = writeln!(text, "Note: {note}");
    }
    let _ = writeln!(
        text,
        "Original token count: {}",
        approx_tokens(report.output)
    );
    text.push_str("Output:\n");
    text.push_str(&head_and_tail(report.output, report.max_output_tokens));
    text
}

/// Keeps the first and last halves of the token budget, marking how much was cut.
pub(crate) fn head_and_tail(output: &str, max_tokens: usize) -> String {
    let budget = max_tokens.saturating_mul(BYTES_PER_TOKEN);
    if output.len() <= budget {
        return output.to_string();
    }
    let head_end = floor_char_boundary(output, budget / 2);
    let tail_start = ceil_char_boundary(output, output.len() - (budget - budget / 2));
    let omitted = approx_tokens(&output[head_end..tail_start]);
    format!(
        "{}\n…{omitted} tokens truncated…\n{}",
        &output[..head_end],
        &output[tail_start..]
    )
}

/// A rendered chunk read back as the object code mode's scripts get from
/// `tools.exec_command` and `tools.write_stdin`: `{chunk_id, wall_time_seconds, exit_code |
/// session_id, original_token_count, output}`. `None` for text that is not a chunk (an error).
pub(crate) fn chunk_as_object(text: &str) -> Option<serde_json::Value> {
    let (head, output) = text
        .split_once("Output:\n")
        .or_else(|| text.strip_suffix("Output:").map(|head| (head, "")))?;
    let mut object = serde_json::Map::new();
    let mut notes = Vec::new();
    for line in head.lines() {
        if let Some(id) = line.strip_prefix("Chunk ID: ") {
            object.insert("chunk_id".into(), id.into());
        } else if let Some(wall) = line.strip_prefix("Wall time: ") {
            let seconds: f64 = wall.trim_end_matches(" seconds").parse().ok()?;
            object.insert("wall_time_seconds".into(), seconds.into());
        } else if let Some(code) = line.strip_prefix("Process exited with code ") {
            object.insert("exit_code".into(), code.parse::<i64>().ok()?.into());
        } else if let Some(id) = line.strip_prefix("Process running with session ID ") {
            object.insert("session_id".into(), id.parse::<i64>().ok()?.into());
        } else if let Some(count) = line.strip_prefix("Original token count: ") {
            object.insert(
                "original_token_count".into(),
                count.parse::<u64>().ok()?.into(),
            );
        } else if let Some(note) = line.strip_prefix("Note: ") {
            notes.push(serde_json::Value::from(note));
        }
    }
    object.get("wall_time_seconds")?;
    if !notes.is_empty() {
        object.insert("notes".into(), notes.into());
    }
    object.insert("output".into(), output.into());
    Some(serde_json::Value::Object(object))
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(output: &str, status: ProcessStatus, max_output_tokens: usize) -> String {
        render_chunk(&ChunkReport {
            cmd: "echo hi",
            wall_time: Duration::from_millis(1500),
            status,
            output,
            max_output_tokens,
            notes: &[],
        })
    }

    #[test]
    fn an_exited_process_reports_its_code_and_output() {
        let text = report("hi\n", ProcessStatus::Exited(0), 100);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Command: echo hi");
        assert!(lines[1].starts_with("Chunk ID: ") && lines[1].len() == "Chunk ID: ".len() + 6);
        assert_eq!(lines[2], "Wall time: 1.5000 seconds");
        assert_eq!(lines[3], "Process exited with code 0");
        assert_eq!(lines[4], "Original token count: 1");
        assert_eq!(lines[5], "Output:");
        assert_eq!(lines[6], "hi");
    }

    #[test]
    fn a_chunk_reads_back_as_an_object() {
        let object = chunk_as_object(&report("hi\n", ProcessStatus::Exited(3), 100)).unwrap();
        assert_eq!(object["exit_code"], 3);
        assert_eq!(object["output"], "hi\n");
        assert_eq!(object["wall_time_seconds"], 1.5);
        assert_eq!(object["chunk_id"].as_str().map(str::len), Some(6));
        let running = chunk_as_object(&report("", ProcessStatus::Running(7), 100)).unwrap();
        assert_eq!(running["session_id"], 7);
        assert!(running.get("exit_code").is_none());
        assert!(chunk_as_object("no such session").is_none());
    }

    #[test]
    fn a_running_process_reports_its_session_id() {
        let text = report("", ProcessStatus::Running(1003), 100);
        assert!(text.contains("\nProcess running with session ID 1003\n"));
        assert!(text.ends_with("Output:\n"));
    }

    #[test]
    fn output_over_the_budget_keeps_head_and_tail() {
        let output: String = (0..1000).map(|n| format!("line {n:04}\n")).collect();
        let text = report(&output, ProcessStatus::Exited(0), 50);
        assert!(text.contains("Original token count: 2500\n"));
        assert!(text.contains("line 0000\n"));
        assert!(text.contains("line 0999\n"));
        assert!(!text.contains("line 0500\n"));
        assert!(text.contains("tokens truncated…"));
    }

    #[test]
    fn cutting_never_splits_a_character() {
        let output = "é".repeat(1000);
        let cut = head_and_tail(&output, 3);
        assert!(cut.starts_with("éé") && cut.ends_with("éé"));
    }
}
