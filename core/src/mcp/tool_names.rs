//! The names MCP tools are offered to the model under.
//!
//! Providers accept function names of at most 64 characters of `[A-Za-z0-9_-]`, while MCP
//! server and tool names are free text. A tool is offered as `mcp__SERVER__TOOL` with every
//! other character replaced by `_`; a name that is too long, or that clashes with one already
//! given, is cut and ends in a hash of the exact server and tool names, so the same
//! configuration always yields the same names.

use std::collections::{BTreeMap, BTreeSet};

/// Longest function name providers accept.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;

const PREFIX: &str = "mcp";
const DELIMITER: &str = "__";

/// A tool the model may call, by the name it was offered under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QualifiedTool {
    /// The name offered to the model.
    pub name: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
}

/// Names every `(server, tool)` pair; the result is sorted by server, then tool, and its names
/// are unique.
pub(crate) fn qualify_tools<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<QualifiedTool> {
    let sorted: BTreeSet<(&str, &str)> = pairs.into_iter().collect();
    let mut taken = BTreeMap::new();
    let mut named = Vec::with_capacity(sorted.len());
    for (server, tool) in sorted {
        let plain = format!(
            "{PREFIX}{DELIMITER}{}{DELIMITER}{}",
            sanitize(server),
            sanitize(tool)
        );
        let name = if plain.len() <= MAX_TOOL_NAME_LEN && !taken.contains_key(&plain) {
            plain
        } else {
            hashed(&plain, server, tool, &taken)
        };
        taken.insert(name.clone(), ());
        named.push(QualifiedTool {
            name,
            server: server.to_string(),
            tool: tool.to_string(),
        });
    }
    named
}

/// Every character outside `[A-Za-z0-9_-]` becomes `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `plain` cut to leave room for `_` and 16 hex digits of a hash of the exact names; on the
/// (astronomically unlikely) clash of two hashes, the hash input is salted until free.
fn hashed(plain: &str, server: &str, tool: &str, taken: &BTreeMap<String, ()>) -> String {
    const SUFFIX_LEN: usize = 17;
    let keep = plain.len().min(MAX_TOOL_NAME_LEN - SUFFIX_LEN);
    // `plain` is ASCII, so any byte index is a character boundary.
    let head = &plain[..keep];
    let mut salt = 0u32;
    loop {
        let digest = fnv1a(&[server, "\u{0}", tool, "\u{0}", &salt.to_string()]);
        let name = format!("{head}_{digest:016x}");
        if !taken.contains_key(&name) {
            return name;
        }
        salt += 1;
    }
}

/// 64-bit FNV-1a: a stable hash (unlike std's, which may change between Rust releases).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts.iter().flat_map(|part| part.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn plain_names_join_server_and_tool() {
        let named = qualify_tools([("everything", "echo"), ("docs", "search.v2")]);
        let names: Vec<&str> = named.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mcp__docs__search_v2", "mcp__everything__echo"]);
        assert_eq!(named[0].tool, "search.v2");
    }

    #[test]
    fn clashing_and_long_names_get_a_stable_hash() {
        let long_tool = "t".repeat(80);
        let first = qualify_tools([("a", "x.y"), ("a", "x_y"), ("srv", long_tool.as_str())]);
        let again = qualify_tools([("srv", long_tool.as_str()), ("a", "x_y"), ("a", "x.y")]);
        assert_eq!(first, again);
        assert_eq!(first[0].name, "mcp__a__x_y");
        assert_ne!(first[1].name, first[0].name);
        assert!(first[1].name.starts_with("mcp__a__x_y_"));
        assert_eq!(first[2].name.len(), MAX_TOOL_NAME_LEN);
    }

    proptest! {
        #[test]
        fn names_are_unique_short_and_valid(
            pairs in proptest::collection::vec(("[a-z.]{1,40}", "\\PC{1,70}"), 1..30)
        ) {
            let named = qualify_tools(pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())));
            let unique: BTreeSet<&str> = named.iter().map(|t| t.name.as_str()).collect();
            prop_assert_eq!(unique.len(), named.len());
            for tool in &named {
                prop_assert!(tool.name.len() <= MAX_TOOL_NAME_LEN, "{}", tool.name);
                prop_assert!(tool.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            }
        }
    }
}
