//! The optional first line of an `exec` input, `// @exec: {"yield_time_ms": N,
//! "max_output_tokens": N}`: how long the call waits before yielding and how much output the
//! model reads back. Everything after it is the script.

use serde_json::Value;

/// How long `exec` waits for a script before yielding, when the pragma does not say.
pub(super) const DEFAULT_YIELD_TIME_MS: u64 = 30_000;
/// How many tokens of output `exec` and `wait` return, when not told.
pub(super) const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;
/// The largest integer a script's JSON can hold exactly (JavaScript's safe integers).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// An `exec` input, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExecInput {
    /// The JavaScript module source.
    pub source: String,
    /// Wait this long before yielding.
    pub yield_time_ms: u64,
    /// Return at most this many tokens of output.
    pub max_output_tokens: u64,
}

/// Splits `input` into its pragma and source; the error is what the model reads.
pub(super) fn parse(input: &str) -> Result<ExecInput, String> {
    if input.trim().is_empty() {
        return Err(
            "exec takes JavaScript source (not empty), optionally after a first line \
             `// @exec: {\"yield_time_ms\": 10000, \"max_output_tokens\": 1000}`"
                .to_string(),
        );
    }
    let mut exec = ExecInput {
        source: input.to_string(),
        yield_time_ms: DEFAULT_YIELD_TIME_MS,
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
    };
    let (first, rest) = input.split_once('\n').unwrap_or((input, ""));
    let Some(pragma) = first.trim_start().strip_prefix("// @exec:") else {
        return Ok(exec);
    };
    let fields: serde_json::Map<String, Value> = match serde_json::from_str(pragma.trim()) {
        Ok(Value::Object(fields)) => fields,
        _ => {
            return Err(
                "the exec pragma must be a JSON object with the fields `yield_time_ms` \
                 and `max_output_tokens`"
                    .to_string(),
            );
        }
    };
    for (name, value) in fields {
        let number = value
            .as_u64()
            .filter(|number| *number <= MAX_SAFE_INTEGER)
            .ok_or_else(|| {
                format!("the exec pragma's `{name}` must be a whole number, 0 or more")
            })?;
        match name.as_str() {
            "yield_time_ms" => exec.yield_time_ms = number,
            "max_output_tokens" => exec.max_output_tokens = number,
            other => {
                return Err(format!(
                    "the exec pragma has no field `{other}`; it takes `yield_time_ms` and \
                     `max_output_tokens`"
                ));
            }
        }
    }
    let rest = rest.strip_prefix('\r').unwrap_or(rest);
    if rest.trim().is_empty() {
        return Err("the exec pragma must be followed by JavaScript on the next lines".to_string());
    }
    exec.source = rest.to_string();
    Ok(exec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragmas() {
        let plain = parse("text(1)").unwrap();
        assert_eq!(plain.yield_time_ms, DEFAULT_YIELD_TIME_MS);
        assert_eq!(plain.source, "text(1)");
        let tuned = parse("// @exec: {\"yield_time_ms\": 500, \"max_output_tokens\": 20}\ntext(1)")
            .unwrap();
        assert_eq!((tuned.yield_time_ms, tuned.max_output_tokens), (500, 20));
        assert_eq!(tuned.source, "text(1)");
        assert!(parse("  ").is_err());
        assert!(
            parse("// @exec: [1]\ntext(1)")
                .unwrap_err()
                .contains("JSON object")
        );
        assert!(
            parse("// @exec: {\"yield_time_ms\": -1}\nx")
                .unwrap_err()
                .contains("whole number")
        );
        assert!(
            parse("// @exec: {\"speed\": 1}\nx")
                .unwrap_err()
                .contains("`speed`")
        );
        assert!(parse("// @exec: {}").unwrap_err().contains("followed by"));
    }
}
