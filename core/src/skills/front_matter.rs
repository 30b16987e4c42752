//! The front matter of a `SKILL.md`: a YAML block between `---` lines at the top of the file,
//! holding at least a name and a description. The rest of the file is the skill's body.

use serde::Deserialize;

/// Longest name accepted, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// What the front matter says about a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub name: String,
    pub description: String,
    pub short_description: Option<String>,
}

#[derive(Deserialize)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    metadata: Option<RawMetadata>,
}

#[derive(Deserialize)]
struct RawMetadata {
    #[serde(rename = "short-description")]
    short_description: Option<String>,
}

/// Parses the front matter of `text`; `folder` names the skill when the front matter does
/// not. The error says what is wrong, for the user to fix.
pub(crate) fn parse(text: &str, folder: &str) -> Result<FrontMatter, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("no front matter: the file must start with a `---` line".to_string());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err("the front matter is not closed by a `---` line".to_string());
    }
    let raw: Raw =
        serde_norway::from_str(&yaml).map_err(|err| format!("invalid front matter: {err}"))?;
    let name = single_line("name", raw.name.or_else(|| Some(folder.to_string())))?;
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "`name` is {chars} characters long; at most {MAX_NAME_CHARS} are allowed"
        ));
    }
    let description = single_line("description", raw.description)?;
    let short_description = raw
        .metadata
        .and_then(|metadata| metadata.short_description)
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty());
    Ok(FrontMatter {
        name,
        description,
        short_description,
    })
}

/// A required field, with its whitespace folded onto one line.
fn single_line(field: &str, value: Option<String>) -> Result<String, String> {
    value
        .map(|value| value.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|value| !value.is_empty())
        .ok_or_else(|| format!("missing field `{field}` in the front matter"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn reads_name_description_and_short_description() {
        let parsed = parse(
            "---\nname: pdf-tools\ndescription: >\n  Fill and merge PDF forms.\n  Use for any PDF.\nmetadata:\n  short-description: PDF helpers\n---\n# Body\n",
            "folder",
        );
        assert_eq!(
            parsed,
            Ok(FrontMatter {
                name: "pdf-tools".to_string(),
                description: "Fill and merge PDF forms. Use for any PDF.".to_string(),
                short_description: Some("PDF helpers".to_string()),
            })
        );
    }

    #[test]
    fn says_what_is_wrong() {
        let cases = [
            ("# no front matter\n", "no front matter"),
            ("---\nname: x\n", "not closed"),
            ("---\nname: [unclosed\n---\n", "invalid front matter"),
            ("---\nname: x\n---\n", "missing field `description`"),
            (
                "---\nname: x\ndescription: \"\"\n---\n",
                "missing field `description`",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text, "folder").err().unwrap_or_default();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
        let long = format!("---\nname: {}\ndescription: d\n---\n", "n".repeat(65));
        let err = parse(&long, "f").err().unwrap_or_default();
        assert!(err.contains("at most 64"), "{err}");
        // Without a name, the folder names the skill.
        let unnamed = parse("---\ndescription: d\n---\n", "deploy").map(|f| f.name);
        assert_eq!(unnamed, Ok("deploy".to_string()));
    }
}
