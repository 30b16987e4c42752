//! Properties of the parsers that take text from models and users: `apply_patch` and `-c`
//! overrides. Written patches and overrides read back as what was written; any text is
//! refused with an error, never a panic.

use std::path::PathBuf;

use keel_core::apply_patch::{Hunk, Patch, UpdateChunk, parse_patch};
use keel_core::config::parse_cli_override;
use proptest::prelude::*;

fn path() -> impl Strategy<Value = PathBuf> {
    "[a-z]{1,8}(/[a-z]{1,8}){0,2}\\.txt".prop_map(PathBuf::from)
}

/// A line without edge whitespace (the parser trims `@@` contexts, leniently).
fn text_line() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9 ]{0,18}[a-z0-9])?"
}

/// One chunk line: context (`' '`), removed (`'-'`) or added (`'+'`).
fn chunk_lines() -> impl Strategy<Value = Vec<(char, String)>> {
    prop::collection::vec(
        (prop::sample::select(vec![' ', '-', '+']), text_line()),
        1..6,
    )
}

fn hunk() -> impl Strategy<Value = Hunk> {
    prop_oneof![
        (path(), prop::collection::vec(text_line(), 0..5)).prop_map(|(path, lines)| Hunk::Add {
            path,
            contents: lines.iter().map(|line| format!("{line}\n")).collect(),
        }),
        path().prop_map(|path| Hunk::Delete { path }),
        (
            path(),
            prop::option::of(path()),
            prop::collection::vec((prop::option::of(text_line()), chunk_lines()), 1..4),
        )
            .prop_map(|(path, move_path, chunks)| Hunk::Update {
                path,
                move_path,
                chunks: chunks
                    .into_iter()
                    .map(|(change_context, lines)| UpdateChunk {
                        change_context,
                        old_lines: lines
                            .iter()
                            .filter(|(kind, _)| *kind != '+')
                            .map(|(_, line)| line.clone())
                            .collect(),
                        new_lines: lines
                            .iter()
                            .filter(|(kind, _)| *kind != '-')
                            .map(|(_, line)| line.clone())
                            .collect(),
                        is_end_of_file: false,
                        line: 0,
                    })
                    .collect(),
            }),
    ]
}

/// The patch text for `hunks`, with update chunks written from their old and new lines
/// (removed lines first, then added ones, context as both).
fn render(hunks: &[Hunk]) -> String {
    let mut text = String::from("*** Begin Patch\n");
    for hunk in hunks {
        match hunk {
            Hunk::Add { path, contents } => {
                text.push_str(&format!("*** Add File: {}\n", path.display()));
                for line in contents.lines() {
                    text.push_str(&format!("+{line}\n"));
                }
            }
            Hunk::Delete { path } => {
                text.push_str(&format!("*** Delete File: {}\n", path.display()))
            }
            Hunk::Update {
                path,
                move_path,
                chunks,
            } => {
                text.push_str(&format!("*** Update File: {}\n", path.display()));
                if let Some(to) = move_path {
                    text.push_str(&format!("*** Move to: {}\n", to.display()));
                }
                for chunk in chunks {
                    match &chunk.change_context {
                        Some(context) => text.push_str(&format!("@@ {context}\n")),
                        None => text.push_str("@@\n"),
                    }
                    for line in &chunk.old_lines {
                        text.push_str(&format!("-{line}\n"));
                    }
                    for line in &chunk.new_lines {
                        text.push_str(&format!("+{line}\n"));
                    }
                }
            }
        }
    }
    text.push_str("*** End Patch\n");
    text
}

/// Chunks without their patch line numbers, which the generator cannot know.
fn without_line_numbers(mut patch: Patch) -> Patch {
    for hunk in &mut patch.hunks {
        if let Hunk::Update { chunks, .. } = hunk {
            for chunk in chunks {
                chunk.line = 0;
            }
        }
    }
    patch
}

proptest! {
    #[test]
    fn a_written_patch_parses_back_to_its_hunks(hunks in prop::collection::vec(hunk(), 1..5)) {
        let parsed = parse_patch(&render(&hunks)).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(without_line_numbers(parsed), Patch { hunks });
    }

    #[test]
    fn any_text_is_parsed_or_refused_without_panicking(text in "(\\*\\*\\* [A-Za-z ]{0,12}:? ?[a-z]{0,5}\n|[@+ -][a-z]{0,6}\n|[^\n]{0,20}\n){0,12}") {
        let _ = parse_patch(&format!("*** Begin Patch\n{text}*** End Patch"));
        let _ = parse_patch(&text);
    }

    #[test]
    fn an_override_reads_back_as_written(
        key in "[a-z_]{1,10}(\\.[a-z_]{1,10}){0,3}",
        value in prop_oneof![
            any::<i64>().prop_map(toml::Value::Integer),
            any::<bool>().prop_map(toml::Value::Boolean),
            "[a-zA-Z0-9 ./:-]{0,20}".prop_map(toml::Value::String),
            prop::collection::vec(any::<i32>().prop_map(|n| toml::Value::Integer(n.into())), 0..4)
                .prop_map(toml::Value::Array),
        ],
    ) {
        let raw = format!("{key}={value}");
        let parsed = parse_cli_override(&raw).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(parsed, (key, value));
    }

    #[test]
    fn a_bare_word_is_a_string(key in "[a-z_]{1,10}", word in "[a-z][a-z0-9-]{0,10}") {
        prop_assume!(!["true", "false", "inf", "nan"].contains(&word.as_str()));
        let parsed = parse_cli_override(&format!("{key}={word}"))
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(parsed, (key, toml::Value::String(word)));
    }

    #[test]
    fn any_override_text_is_parsed_or_refused_without_panicking(raw in "[ -~]{0,40}") {
        let _ = parse_cli_override(&raw);
    }
}
