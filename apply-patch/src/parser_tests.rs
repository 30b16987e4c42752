//! Parser tests: every operation, the tolerated sloppiness, and malformed patches.

use super::*;
use pretty_assertions::assert_eq;

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|line| line.to_string()).collect()
}

fn chunk(context: Option<&str>, old: &[&str], new: &[&str], eof: bool, line: usize) -> UpdateChunk {
    UpdateChunk {
        change_context: context.map(str::to_string),
        old_lines: strings(old),
        new_lines: strings(new),
        is_end_of_file: eof,
        line,
    }
}

fn parse_err(text: &str) -> String {
    parse_patch(text).unwrap_err().to_string()
}

#[test]
fn parses_every_operation() {
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n+world\n*** Delete File: old.txt\n*** Update File: src/a.txt\n*** Move to: src/b.txt\n@@ fn main() {\n keep\n-old\n+new\n@@\n tail\n+appended\n*** End of File\n*** End Patch\n";
    assert_eq!(
        parse_patch(patch).unwrap(),
        Patch {
            hunks: vec![
                Hunk::Add {
                    path: PathBuf::from("new.txt"),
                    contents: "hello\nworld\n".to_string(),
                },
                Hunk::Delete {
                    path: PathBuf::from("old.txt"),
                },
                Hunk::Update {
                    path: PathBuf::from("src/a.txt"),
                    move_path: Some(PathBuf::from("src/b.txt")),
                    chunks: vec![
                        chunk(
                            Some("fn main() {"),
                            &["keep", "old"],
                            &["keep", "new"],
                            false,
                            8
                        ),
                        chunk(None, &["tail"], &["tail", "appended"], true, 12),
                    ],
                },
            ],
        }
    );
}

#[test]
fn tolerates_whitespace_heredoc_and_missing_first_header() {
    let patch = "\n  <<'EOF'\n   *** Begin Patch  \n*** Update File:   a.txt  \n foo\n-bar\n+baz\n\n\n  *** End Patch\t\nEOF\n\n";
    assert_eq!(
        parse_patch(patch).unwrap(),
        Patch {
            hunks: vec![Hunk::Update {
                path: PathBuf::from("a.txt"),
                move_path: None,
                chunks: vec![chunk(None, &["foo", "bar"], &["foo", "baz"], false, 5)],
            }],
        }
    );
    for opener in ["<<EOF", "<<\"EOF\"", "<<-EOF", "apply_patch <<'EOF'"] {
        let text = format!("{opener}\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF");
        assert!(parse_patch(&text).is_ok(), "{opener}");
    }
}

#[test]
fn blank_context_lines_and_git_headers() {
    let patch = "*** Begin Patch\n*** Update File: a.py\n@@ -1,4 +1,4 @@\n a\n\n-b\n+c\n\n*** Add File: x\n+1\n\n+3\n\n*** End Patch";
    assert_eq!(
        parse_patch(patch).unwrap().hunks,
        vec![
            Hunk::Update {
                path: PathBuf::from("a.py"),
                move_path: None,
                chunks: vec![chunk(None, &["a", "", "b"], &["a", "", "c"], false, 3)],
            },
            Hunk::Add {
                path: PathBuf::from("x"),
                contents: "1\n\n3\n".to_string(),
            },
        ]
    );
}

#[test]
fn stacked_context_headers_narrow_the_search() {
    let patch = "*** Begin Patch\n*** Update File: a.py\n@@ class A:\n@@     def f(self):\n-        pass\n+        return 1\n*** End Patch";
    assert_eq!(
        parse_patch(patch).unwrap().hunks,
        vec![Hunk::Update {
            path: PathBuf::from("a.py"),
            move_path: None,
            chunks: vec![
                chunk(Some("class A:"), &[], &[], false, 3),
                chunk(
                    Some("    def f(self):"),
                    &["        pass"],
                    &["        return 1"],
                    false,
                    4
                ),
            ],
        }]
    );
}

#[test]
fn empty_add_file_is_an_empty_file() {
    let patch = "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch";
    assert_eq!(
        parse_patch(patch).unwrap().hunks,
        vec![Hunk::Add {
            path: PathBuf::from("empty.txt"),
            contents: String::new(),
        }]
    );
}

#[test]
fn malformed_patches_name_line_and_expectation() {
    assert_eq!(
        parse_err(""),
        "the patch is empty; expected `*** Begin Patch`"
    );
    assert_eq!(
        parse_err(" \n\n"),
        "the patch is empty; expected `*** Begin Patch`"
    );
    assert_eq!(
        parse_err("*** Add File: a\n+x\n*** End Patch"),
        "line 1: expected `*** Begin Patch`, found `*** Add File: a`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Add File: a\n+x\n"),
        "line 3: expected `*** End Patch` as the last line, found `+x`"
    );
    assert_eq!(
        parse_err("*** Begin Patch"),
        "line 1: expected `*** End Patch` as the last line, found `*** Begin Patch`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** End Patch"),
        "the patch contains no file operations between `*** Begin Patch` and `*** End Patch`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Delete File: a\nfoo\n*** End Patch"),
        "line 3: expected `*** Add File:`, `*** Delete File:` or `*** Update File:`, found `foo`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch"),
        "line 2: expected `*** Add File:`, `*** Delete File:` or `*** Update File:`, found `*** Frobnicate File: a`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a.txt\n*** End Patch"),
        "line 2: `*** Update File: a.txt` has no changes; expected `@@` followed by lines starting with ` `, `-` or `+`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a.txt\n@@\n*** End Patch"),
        "line 3: in `*** Update File: a.txt`, the `@@` chunk has no lines starting with ` `, `-` or `+`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Add File: n.txt\n+ok\nnot added\n*** End Patch"),
        "line 4: in `*** Add File: n.txt`, expected a line starting with `+`, found `not added`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a\n@@\n x\n*bad\n*** End Patch"),
        "line 5: in `*** Update File: a`, expected a line starting with ` `, `-`, `+` or `@@`, found `*bad`"
    );
    assert_eq!(
        parse_err("*** Begin Patch\n*** Add File:   \n*** End Patch"),
        "line 2: `*** Add File:` must be followed by a file path"
    );
    assert_eq!(
        parse_err("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n"),
        "the heredoc around the patch is not closed by a line `EOF`"
    );
}

#[test]
fn second_chunk_needs_a_header() {
    // After an explicit `*** End of File` a new chunk must start with `@@`.
    assert_eq!(
        parse_err("*** Begin Patch\n*** Update File: a\n x\n*** End of File\nstray\n*** End Patch"),
        "line 5: in `*** Update File: a`, expected a line starting with ` `, `-`, `+` or `@@`, found `stray`"
    );
}

#[test]
fn long_lines_are_shortened_in_errors() {
    let long = "y".repeat(200);
    let message = parse_err(&format!("{long}\n*** End Patch"));
    assert_eq!(
        message,
        format!(
            "line 1: expected `*** Begin Patch`, found `{}…`",
            "y".repeat(80)
        )
    );
}

#[test]
fn crlf_patches_parse() {
    let patch = "*** Begin Patch\r\n*** Update File: a\r\n@@\r\n-x\r\n+y\r\n*** End Patch\r\n";
    assert_eq!(
        parse_patch(patch).unwrap().hunks,
        vec![Hunk::Update {
            path: PathBuf::from("a"),
            move_path: None,
            chunks: vec![chunk(None, &["x"], &["y"], false, 3)],
        }]
    );
}

#[test]
fn never_panics_on_truncated_or_mangled_input() {
    let patch = "<<'EOF'\n*** Begin Patch\n*** Add File: a\n+\u{e9}t\u{e9}\n\n+x\n*** Update File: b\n*** Move to: c\n@@ ctx\n@@ -1,2 +1,2 @@\n k\n\n-\u{2014}\n+y\n*** End of File\n*** Delete File: d\n*** End Patch\nEOF\n";
    assert!(parse_patch(patch).is_ok());
    for (cut, _) in patch.char_indices() {
        let _ = parse_patch(&patch[..cut]);
        let _ = parse_patch(&patch[cut..]);
        let mut mangled = patch.to_string();
        mangled.insert(cut, '\n');
        let _ = parse_patch(&mangled);
    }
}

#[test]
fn heredoc_delimiters() {
    assert_eq!(heredoc_delimiter("<<'EOF'"), Some("EOF"));
    assert_eq!(heredoc_delimiter("<< \"PATCH\""), Some("PATCH"));
    assert_eq!(heredoc_delimiter("<<-END_1"), Some("END_1"));
    assert_eq!(heredoc_delimiter("<<"), None);
    assert_eq!(heredoc_delimiter("<<'a b'"), None);
    assert_eq!(heredoc_delimiter("*** Begin Patch"), None);
}
