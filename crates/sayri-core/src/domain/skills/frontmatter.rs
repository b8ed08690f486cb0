//! `SKILL.md`: an optional YAML frontmatter block between `---` lines, then the instructions.
//!
//! ```text
//! ---
//! name: weather-brief
//! description: Short weather briefings for any city.
//! version: 1.0.3
//! metadata: {author: someone}
//! ---
//! # Weather brief
//! …
//! ```
//!
//! Fields other than `name`, `description` and `version` are kept as JSON in
//! [`SkillDoc::metadata`]. Without a frontmatter block the description is the first paragraph
//! of the body that is not a heading.

use serde_json::{Map, Value};

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillDoc {
    /// `name` from the frontmatter (`None` when absent).
    pub name: Option<String>,
    /// `description`, else the first paragraph of the body; trimmed, may be empty.
    pub description: String,
    /// `version` as text (numbers are written as they read).
    pub version: Option<String>,
    /// Every other frontmatter field.
    pub metadata: Map<String, Value>,
    /// The text after the frontmatter.
    pub body: String,
    /// 1-based line number of the body's first line in the file.
    pub body_line: usize,
}

/// Why a `SKILL.md` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file is not UTF-8 text.
    #[error("SKILL.md is not UTF-8 text")]
    NotText,
    /// A `---` opening line without a closing one.
    #[error(
        "SKILL.md opens a frontmatter block with `---` but never closes it; add a `---` line after the fields"
    )]
    Unclosed,
    /// The YAML does not parse, or is not a mapping.
    #[error("SKILL.md frontmatter is not valid YAML ({0}); write it as `key: value` lines")]
    Yaml(String),
}

/// Reads `SKILL.md` from its bytes.
///
/// # Errors
/// Not UTF-8, an unclosed frontmatter block, or frontmatter that is not a YAML mapping.
///
/// ```
/// use sayri_core::domain::skills::parse_skill_md;
/// let d = parse_skill_md(b"---\nname: x\ndescription: Does x.\nversion: 1.0\n---\n# X\nbody\n").unwrap();
/// assert_eq!(d.name.as_deref(), Some("x"));
/// assert_eq!(d.description, "Does x.");
/// assert_eq!(d.version.as_deref(), Some("1.0"));
/// assert_eq!(d.body_line, 6);
/// ```
pub fn parse_skill_md(bytes: &[u8]) -> Result<SkillDoc, FrontmatterError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FrontmatterError::NotText)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (yaml, body, body_line) = split(text)?;
    let mut fields = match yaml {
        None => Map::new(),
        Some(y) if y.trim().is_empty() => Map::new(),
        Some(y) => match serde_saphyr::from_str::<Value>(y) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => Map::new(),
            Ok(_) => return Err(FrontmatterError::Yaml("it is not a list of fields".into())),
            Err(e) => {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or("").to_string();
                return Err(FrontmatterError::Yaml(first));
            }
        },
    };
    let name = fields.remove("name").and_then(scalar);
    let version = fields.remove("version").and_then(scalar);
    let description = fields
        .remove("description")
        .and_then(scalar)
        .map(|d| d.trim().to_string())
        .unwrap_or_else(|| first_paragraph(body));
    Ok(SkillDoc {
        name: name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()),
        description,
        version,
        metadata: fields,
        body: body.to_string(),
        body_line,
    })
}

/// Splits `text` into the frontmatter YAML (if any), the body and the body's first line number.
fn split(text: &str) -> Result<(Option<&str>, &str, usize), FrontmatterError> {
    let first_end = text.find('\n').unwrap_or(text.len());
    if text[..first_end].trim_end() != "---" {
        return Ok((None, text, 1));
    }
    let rest = &text[(first_end + 1).min(text.len())..];
    let mut offset = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Ok((Some(yaml), body, i + 3));
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}

/// A YAML scalar as text (`1.0` stays `1.0`; lists and maps are not scalars).
fn scalar(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The first paragraph of `body` that is not a heading, joined into one line.
fn first_paragraph(body: &str) -> String {
    let mut out = Vec::new();
    for line in body.lines() {
        let t = line.trim();
        if t.is_empty() {
            if out.is_empty() {
                continue;
            }
            break;
        }
        if t.starts_with('#') || t.starts_with("```") {
            if out.is_empty() {
                continue;
            }
            break;
        }
        out.push(t);
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_frontmatter_takes_the_first_paragraph() {
        let d = parse_skill_md(b"# Title\n\nDoes a thing\nwell.\n\nMore.\n").unwrap();
        assert_eq!(d.name, None);
        assert_eq!(d.description, "Does a thing well.");
        assert_eq!(d.body_line, 1);
    }

    #[test]
    fn unclosed_and_bad_yaml_are_errors_that_say_what_to_do() {
        assert_eq!(
            parse_skill_md(b"---\nname: x\n# body\n"),
            Err(FrontmatterError::Unclosed)
        );
        let e = parse_skill_md(b"---\nname: [x\n---\nbody\n").unwrap_err();
        assert!(matches!(e, FrontmatterError::Yaml(_)), "{e}");
        assert!(parse_skill_md(b"---\n- a\n- b\n---\n").is_err());
        assert_eq!(
            parse_skill_md(&[0xff, 0xfe]),
            Err(FrontmatterError::NotText)
        );
    }

    #[test]
    fn crlf_bom_and_metadata_are_read() {
        let d = parse_skill_md(
            "\u{feff}---\r\nname: a\r\ndescription: 'b'\r\nmetadata:\r\n  tags: [x]\r\n---\r\nbody\r\n"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(d.name.as_deref(), Some("a"));
        assert_eq!(d.description, "b");
        assert!(d.metadata.contains_key("metadata"));
        assert_eq!(d.body.trim(), "body");
    }
}
