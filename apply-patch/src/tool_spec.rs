//! The `apply_patch` tool as offered to the model: a JSON function tool, or a freeform
//! custom tool whose output is constrained by a Lark grammar of the patch format.

use serde_json::{Value, json};

/// The tool name the model calls.
pub const APPLY_PATCH_TOOL_NAME: &str = "apply_patch";

/// Explains the patch format to the model; shared by both tool flavours.
const FORMAT_GUIDE: &str = r#"Edit files by sending a patch. A patch is plain text framed by `*** Begin Patch` and `*** End Patch`. Between them, write one block per file:

*** Add File: <path>        create a file; every following line is a line of the new file prefixed with `+`
*** Delete File: <path>     remove a file; nothing follows
*** Update File: <path>     edit a file in place; optionally followed by `*** Move to: <new path>` to rename it

An update contains one or more chunks. Start each chunk with `@@`, optionally followed by a line that exists in the file (such as a function or class signature) to jump to before matching: `@@ def handle(request):`. Several `@@` lines in a row narrow the search step by step. Then write the chunk's lines, each with a one-character prefix:
  ` ` (a space) a line that stays as it is (context)
  `-`           a line to remove
  `+`           a line to add
Give about three lines of unchanged context above and below each change so the location is unambiguous, and copy context lines exactly as they appear in the file. Chunks are applied in order, top to bottom, each after the previous one. End a chunk with `*** End of File` when its lines must match the end of the file.

Paths are relative to the working directory (absolute paths also work). Adding a file that exists replaces it. Every block applies or none does: if any chunk does not match, no file changes and the error says which file and chunk failed.

Example:
*** Begin Patch
*** Add File: docs/notes.md
+# Notes
+First entry.
*** Update File: src/app.py
@@ def main():
     config = load()
-    run(config)
+    run(config, verbose=True)
     return 0
*** Delete File: old/legacy.py
*** End Patch"#;

/// A Lark grammar of the patch format, for the freeform (custom) tool.
const LARK_GRAMMAR: &str = r#"start: begin_marker file_block+ end_marker

begin_marker: "*** Begin Patch" NL
end_marker: "*** End Patch" NL?

file_block: add_block | delete_block | update_block

add_block: "*** Add File: " PATH NL added_line*
added_line: "+" TEXT? NL

delete_block: "*** Delete File: " PATH NL

update_block: "*** Update File: " PATH NL rename? chunk+
rename: "*** Move to: " PATH NL
chunk: chunk_header+ chunk_line+ end_of_file?
chunk_header: "@@" (" " TEXT)? NL
chunk_line: (" " | "-" | "+") TEXT? NL
end_of_file: "*** End of File" NL

PATH: /[^\n]+/
TEXT: /[^\n]+/
NL: "\n"
"#;

/// The Responses-API function tool: one string argument `input` holding the patch.
pub fn apply_patch_function_tool() -> Value {
    json!({
        "type": "function",
        "name": APPLY_PATCH_TOOL_NAME,
        "description": format!("Create, edit, move and delete files.\n\n{FORMAT_GUIDE}"),
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "input": {
                    "type": "string",
                    "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`.",
                },
            },
            "required": ["input"],
            "additionalProperties": false,
        },
    })
}

/// The freeform custom tool: the model writes the patch itself, constrained by a grammar.
pub fn apply_patch_freeform_tool() -> Value {
    json!({
        "type": "custom",
        "name": APPLY_PATCH_TOOL_NAME,
        "description": format!(
            "Create, edit, move and delete files. Send the patch as the raw tool input, not JSON.\n\n{FORMAT_GUIDE}"
        ),
        "format": {
            "type": "grammar",
            "syntax": "lark",
            "definition": LARK_GRAMMAR,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_patch;
    use pretty_assertions::assert_eq;

    #[test]
    fn function_tool_shape() {
        let tool = apply_patch_function_tool();
        let description = tool["description"].as_str().unwrap().to_string();
        assert_eq!(
            tool,
            json!({
                "type": "function",
                "name": "apply_patch",
                "description": description,
                "strict": false,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "input": {
                            "type": "string",
                            "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`.",
                        },
                    },
                    "required": ["input"],
                    "additionalProperties": false,
                },
            })
        );
    }

    #[test]
    fn freeform_tool_shape() {
        let tool = apply_patch_freeform_tool();
        assert_eq!(tool["type"], "custom");
        assert_eq!(tool["name"], "apply_patch");
        assert_eq!(tool["format"]["type"], "grammar");
        assert_eq!(tool["format"]["syntax"], "lark");
        let grammar = tool["format"]["definition"].as_str().unwrap();
        for marker in [
            "*** Begin Patch",
            "*** End Patch",
            "*** Add File: ",
            "*** Delete File: ",
            "*** Update File: ",
            "*** Move to: ",
            "*** End of File",
            "@@",
        ] {
            assert!(grammar.contains(marker), "grammar lacks {marker}");
        }
    }

    #[test]
    fn the_documented_example_parses() {
        let example = FORMAT_GUIDE
            .split_once("Example:\n")
            .map(|(_, example)| example)
            .unwrap();
        let patch = parse_patch(example).unwrap();
        assert_eq!(patch.hunks.len(), 3);
    }
}
