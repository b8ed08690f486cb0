//! Telegram's `MarkdownV2` parse mode, as the Bot API documents it, for the loopback server:
//! the plain text and entities a formatted message becomes, or the error Telegram gives.
//!
//! * Entities: `*bold*`, `_italic_`, `__underline__`, `~strikethrough~`, `||spoiler||`,
//!   `` `code` ``, ```` ```language\npre``` ````, `[text](url)`, and `>` block quotes at the
//!   start of a line.
//! * Outside entities that take them, the characters `` _*[]()~`>#+-=|{}.! `` must be escaped
//!   with `\`; any character of code 1–126 may be. Inside `code` and `pre`, `` ` `` and `\`
//!   must be escaped; inside a link's `(…)`, `)` and `\`.
//! * Errors (the text after `Bad Request: can't parse entities: `): `Character 'X' is reserved
//!   and must be escaped with the preceding '\'`, and `Can't find end of the entity starting at
//!   byte offset N` for an entity opened and not closed.

use serde_json::{Value, json};

const RESERVED: &str = "_*[]()~`>#+-=|{}.!";

#[derive(Debug, Clone, PartialEq)]
enum Open {
    Style(&'static str),
    Link,
}

struct Parser<'a> {
    src: &'a str,
    text: String,
    len16: usize,
    entities: Vec<Value>,
    /// Open entities: what, UTF-16 start, byte offset in the source.
    open: Vec<(Open, usize, usize)>,
}

impl Parser<'_> {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.len16 += c.len_utf16();
    }

    fn entity(&mut self, kind: &str, start: usize, extra: Option<(&str, String)>) {
        if self.len16 > start {
            let mut e = json!({"type": kind, "offset": start, "length": self.len16 - start});
            if let Some((k, v)) = extra {
                e[k] = Value::String(v);
            }
            self.entities.push(e);
        }
    }

    /// Opens `kind`, or closes it if it is the innermost open entity.
    fn toggle(&mut self, kind: &'static str, at: usize) -> Result<(), String> {
        match self
            .open
            .iter()
            .rposition(|(o, ..)| *o == Open::Style(kind))
        {
            Some(i) if i + 1 == self.open.len() => {
                let (_, start, _) = self.open.remove(i);
                self.entity(kind, start, None);
                Ok(())
            }
            Some(i) => Err(unclosed(self.open[i + 1].2)),
            None => {
                self.open.push((Open::Style(kind), self.len16, at));
                Ok(())
            }
        }
    }
}

fn unclosed(byte: usize) -> String {
    format!("Can't find end of the entity starting at byte offset {byte}")
}

fn reserved(c: char) -> String {
    format!("Character '{c}' is reserved and must be escaped with the preceding '\\'")
}

/// Parses `src`; returns the plain text and its entities (Bot API `MessageEntity` objects), or
/// the error description (see the module doc).
pub fn parse(src: &str) -> Result<(String, Vec<Value>), String> {
    let mut p = Parser {
        src,
        text: String::new(),
        len16: 0,
        entities: Vec::new(),
        open: Vec::new(),
    };
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut i = 0;
    let mut line_start = true;
    let mut quote: Option<usize> = None;
    while i < chars.len() {
        let (at, c) = chars[i];
        let next = chars.get(i + 1).map(|x| x.1);
        if line_start && c == '>' {
            quote = Some(p.len16);
            i += 1;
            line_start = false;
            continue;
        }
        line_start = false;
        match c {
            '\\' => {
                match next {
                    Some(n) if (n as u32) >= 1 && (n as u32) <= 126 => p.push(n),
                    _ => return Err(reserved('\\')),
                }
                i += 2;
                continue;
            }
            '`' if src[at..].starts_with("```") => {
                i = code_block(&mut p, &chars, i + 3, at, true)?;
                continue;
            }
            '`' => {
                i = code_block(&mut p, &chars, i + 1, at, false)?;
                continue;
            }
            '*' => p.toggle("bold", at)?,
            '~' => p.toggle("strikethrough", at)?,
            '_' if next == Some('_') => {
                p.toggle("underline", at)?;
                i += 1;
            }
            '_' => p.toggle("italic", at)?,
            '|' if next == Some('|') => {
                p.toggle("spoiler", at)?;
                i += 1;
            }
            '[' => p.open.push((Open::Link, p.len16, at)),
            ']' => {
                let Some(pos) = p.open.iter().rposition(|(o, ..)| *o == Open::Link) else {
                    return Err(reserved(']'));
                };
                if pos + 1 != p.open.len() {
                    return Err(unclosed(p.open[pos + 1].2));
                }
                if next != Some('(') {
                    return Err(reserved(']'));
                }
                let (url, after) =
                    link_url(&chars, i + 2).ok_or_else(|| unclosed(p.open[pos].2))?;
                let (_, start, _) = p.open.remove(pos);
                p.entity("text_link", start, Some(("url", url)));
                i = after;
                continue;
            }
            '\n' => {
                if let Some(start) = quote.take() {
                    p.entity("blockquote", start, None);
                }
                p.push('\n');
                line_start = true;
            }
            c if RESERVED.contains(c) => return Err(reserved(c)),
            c => p.push(c),
        }
        i += 1;
    }
    if let Some(start) = quote.take() {
        p.entity("blockquote", start, None);
    }
    if let Some((_, _, at)) = p.open.first() {
        return Err(unclosed(*at));
    }
    let _ = p.src;
    p.entities
        .sort_by_key(|e| e["offset"].as_u64().unwrap_or(0));
    Ok((p.text, p.entities))
}

/// Reads a `code` (or, with `pre`, a ```` ``` ```` block with its language line) starting at
/// char index `i`; returns the index after its closing backticks.
fn code_block(
    p: &mut Parser<'_>,
    chars: &[(usize, char)],
    mut i: usize,
    at: usize,
    pre: bool,
) -> Result<usize, String> {
    let mut language = None;
    if pre {
        let start = i;
        while i < chars.len() && chars[i].1 != '\n' {
            if chars[i].1 == '`' {
                break;
            }
            i += 1;
        }
        if i < chars.len() && chars[i].1 == '\n' {
            let lang: String = chars[start..i].iter().map(|c| c.1).collect();
            language = Some(lang.trim().to_string()).filter(|l| !l.is_empty());
            i += 1;
        } else {
            i = start;
        }
    }
    let start16 = p.len16;
    while i < chars.len() {
        let c = chars[i].1;
        let closes = if pre {
            chars[i..].iter().take(3).all(|x| x.1 == '`') && chars.len() - i >= 3
        } else {
            c == '`'
        };
        if closes {
            let kind = if pre { "pre" } else { "code" };
            p.entity(kind, start16, language.map(|l| ("language", l)));
            return Ok(i + if pre { 3 } else { 1 });
        }
        if c == '\\' {
            match chars.get(i + 1).map(|x| x.1) {
                Some(n @ ('`' | '\\')) => {
                    p.push(n);
                    i += 2;
                    continue;
                }
                _ => return Err(reserved('\\')),
            }
        }
        p.push(c);
        i += 1;
    }
    Err(unclosed(at))
}

/// Reads a link URL from char index `i` (after `(`) to the unescaped `)`; returns it and the
/// index after `)`.
fn link_url(chars: &[(usize, char)], mut i: usize) -> Option<(String, usize)> {
    let mut url = String::new();
    while i < chars.len() {
        match chars[i].1 {
            '\\' => {
                url.push(chars.get(i + 1)?.1);
                i += 2;
            }
            ')' => return Some((url, i + 1)),
            c => {
                url.push(c);
                i += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_examples() {
        let (t, e) = parse("*bold \\*text*\n_italic_ __under__ ~s~ ||sp|| [inline URL](http://www.example.com/)\n`code` ```python\nprint(1)\n```").unwrap();
        assert_eq!(
            t,
            "bold *text\nitalic under s sp inline URL\ncode print(1)\n"
        );
        let kinds: Vec<&str> = e.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "bold",
                "italic",
                "underline",
                "strikethrough",
                "spoiler",
                "text_link",
                "code",
                "pre"
            ]
        );
        assert_eq!(e[7]["language"], "python");
    }

    #[test]
    fn reserved_characters_and_unclosed_entities_are_errors() {
        assert_eq!(
            parse("Done.").unwrap_err(),
            "Character '.' is reserved and must be escaped with the preceding '\\'"
        );
        assert_eq!(parse("Done\\.").unwrap().0, "Done.");
        assert_eq!(
            parse("ab *open").unwrap_err(),
            "Can't find end of the entity starting at byte offset 3"
        );
        assert_eq!(
            parse("🙂 ```\nx").unwrap_err(),
            "Can't find end of the entity starting at byte offset 5"
        );
        assert!(parse("(x)").is_err());
        assert_eq!(parse("a-b").unwrap_err(), reserved('-'));
    }

    #[test]
    fn offsets_are_utf16() {
        let (_, e) = parse("🙂 *b*").unwrap();
        assert_eq!(
            (e[0]["offset"].as_u64(), e[0]["length"].as_u64()),
            (Some(3), Some(1))
        );
    }
}
