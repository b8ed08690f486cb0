//! The assistant's Markdown as Telegram text: the plain text and its entities (bold, italic,
//! code, code blocks, links, …) with offsets in UTF-16 code units, as the Bot API counts them.
//!
//! Sending entities instead of a `parse_mode` means no character ever needs escaping and the
//! length Telegram checks (4096 units, counted after entity parsing) is exactly the length of
//! [`Formatted::text`]. Markdown is read with a CommonMark parser (pulldown-cmark):
//! * `**bold**`, `*italic*`/`_italic_`, `~~strike~~`, `` `code` ``, links and images (as links),
//!   block quotes, and fenced or indented code blocks (a `pre` entity with the language);
//! * headings become bold lines; list items keep a `- ` or `N. ` marker; line breaks inside a
//!   paragraph are kept (chat text is written line by line); HTML is kept as text.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A Telegram message entity type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityKind {
    /// `bold`.
    Bold,
    /// `italic`.
    Italic,
    /// `strikethrough`.
    Strikethrough,
    /// `code` (inline).
    Code,
    /// `pre` (a code block), with its language if given.
    Pre(Option<String>),
    /// `text_link` to this URL.
    TextLink(String),
    /// `blockquote`.
    Blockquote,
}

/// One entity: a kind over `[offset, offset + length)` in UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// What it is.
    pub kind: EntityKind,
    /// Start, in UTF-16 code units.
    pub offset: usize,
    /// Length, in UTF-16 code units (never 0).
    pub length: usize,
}

impl Entity {
    /// The Bot API's `MessageEntity` object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({"offset": self.offset, "length": self.length});
        let kind = match &self.kind {
            EntityKind::Bold => "bold",
            EntityKind::Italic => "italic",
            EntityKind::Strikethrough => "strikethrough",
            EntityKind::Code => "code",
            EntityKind::Pre(lang) => {
                if let Some(l) = lang {
                    v["language"] = l.clone().into();
                }
                "pre"
            }
            EntityKind::TextLink(url) => {
                v["url"] = url.clone().into();
                "text_link"
            }
            EntityKind::Blockquote => "blockquote",
        };
        v["type"] = kind.into();
        v
    }
}

/// Text with entities, ready for `sendMessage`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Formatted {
    /// The plain text.
    pub text: String,
    /// Its entities, ordered by where they end being opened (outer before inner when they
    /// start together).
    pub entities: Vec<Entity>,
}

/// The length of `s` in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

impl Formatted {
    /// Plain text without entities.
    pub fn plain(text: impl Into<String>) -> Self {
        Formatted {
            text: text.into(),
            entities: Vec::new(),
        }
    }

    /// The length of the text in UTF-16 code units.
    pub fn len_utf16(&self) -> usize {
        utf16_len(&self.text)
    }
}

/// Builds the text while tracking its UTF-16 length and the open entities.
#[derive(Default)]
struct Builder {
    out: Formatted,
    len16: usize,
    /// Open entities: kind and start.
    open: Vec<(EntityKind, usize)>,
    /// Line breaks owed before the next text (block separation).
    owed: usize,
    /// Open lists: the next number of an ordered list, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// A list marker was just written: the item's first paragraph continues its line.
    after_marker: bool,
}

impl Builder {
    fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if !self.out.text.is_empty() {
            for _ in 0..self.owed {
                self.out.text.push('\n');
                self.len16 += 1;
            }
        }
        self.owed = 0;
        self.after_marker = false;
        self.out.text.push_str(s);
        self.len16 += utf16_len(s);
    }

    fn block(&mut self, lines: usize) {
        if !self.out.text.is_empty() {
            self.owed = self.owed.max(lines);
        }
    }

    fn open(&mut self, kind: EntityKind) {
        // The entity starts where its first text will be, after the owed line breaks.
        let start = if self.out.text.is_empty() {
            0
        } else {
            self.len16 + self.owed
        };
        self.open.push((kind, start));
    }

    fn close(&mut self) {
        if let Some((kind, start)) = self.open.pop()
            && self.len16 > start
        {
            self.out.entities.push(Entity {
                kind,
                offset: start,
                length: self.len16 - start,
            });
        }
    }

    /// Removes a trailing line break (code blocks end with one).
    fn trim_newline(&mut self) {
        if self.out.text.ends_with('\n') {
            self.out.text.pop();
            self.len16 -= 1;
        }
    }

    fn item(&mut self) {
        self.block(1);
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let m = format!("{n}. ");
                *n += 1;
                m
            }
            _ => "- ".to_string(),
        };
        let indent = "  ".repeat(depth);
        self.push(&format!("{indent}{marker}"));
        self.after_marker = true;
    }
}

/// Converts Markdown to Telegram text and entities (see the module rules).
pub fn markdown(md: &str) -> Formatted {
    let mut b = Builder::default();
    let parser = Parser::new_ext(md, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Start(tag) => start(&mut b, tag),
            Event::End(tag) => end(&mut b, tag),
            Event::Text(t) => b.push(&t),
            Event::Code(t) => {
                b.open(EntityKind::Code);
                b.push(&t);
                b.close();
            }
            Event::Html(t) | Event::InlineHtml(t) => b.push(&t),
            Event::SoftBreak | Event::HardBreak => {
                b.push("\n");
            }
            Event::Rule => {
                b.block(2);
                b.push("———");
                b.block(2);
            }
            Event::FootnoteReference(t) => b.push(&format!("[^{t}]")),
            Event::TaskListMarker(done) => b.push(if done { "[x] " } else { "[ ] " }),
            Event::InlineMath(t) | Event::DisplayMath(t) => b.push(&t),
        }
    }
    while !b.open.is_empty() {
        b.close();
    }
    let mut out = b.out;
    let trimmed = out.text.trim_end_matches('\n').len();
    out.text.truncate(trimmed);
    let len = utf16_len(&out.text);
    out.entities.retain_mut(|e| {
        e.length = e.length.min(len.saturating_sub(e.offset));
        e.length > 0
    });
    out.entities.sort_by_key(|e| e.offset);
    out
}

fn start(b: &mut Builder, tag: Tag<'_>) {
    match tag {
        Tag::Paragraph if b.after_marker => {}
        Tag::Paragraph => b.block(2),
        Tag::Heading { .. } => {
            b.block(2);
            b.open(EntityKind::Bold);
        }
        Tag::BlockQuote(_) => {
            b.block(2);
            b.open(EntityKind::Blockquote);
        }
        Tag::CodeBlock(kind) => {
            b.block(2);
            let lang = match kind {
                CodeBlockKind::Fenced(info) => info
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
                    .filter(|l| !l.is_empty()),
                CodeBlockKind::Indented => None,
            };
            b.open(EntityKind::Pre(lang));
        }
        Tag::List(first) => {
            b.block(if b.lists.is_empty() { 2 } else { 1 });
            b.lists.push(first);
        }
        Tag::Item => b.item(),
        Tag::Emphasis => b.open(EntityKind::Italic),
        Tag::Strong => b.open(EntityKind::Bold),
        Tag::Strikethrough => b.open(EntityKind::Strikethrough),
        Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
            b.open(EntityKind::TextLink(dest_url.to_string()));
        }
        _ => {}
    }
}

fn end(b: &mut Builder, tag: TagEnd) {
    match tag {
        TagEnd::Paragraph => b.block(2),
        TagEnd::Heading(_) | TagEnd::BlockQuote(_) => {
            b.close();
            b.block(2);
        }
        TagEnd::CodeBlock => {
            b.trim_newline();
            b.close();
            b.block(2);
        }
        TagEnd::List(_) => {
            b.lists.pop();
            b.block(if b.lists.is_empty() { 2 } else { 1 });
        }
        TagEnd::Item => b.block(1),
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => b.close(),
        TagEnd::Link | TagEnd::Image => {
            let empty_url =
                matches!(b.open.last(), Some((EntityKind::TextLink(u), _)) if u.is_empty());
            if empty_url {
                b.open.pop();
            } else {
                b.close();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(f: &Formatted, kind: &EntityKind) -> Vec<String> {
        let units: Vec<u16> = f.text.encode_utf16().collect();
        f.entities
            .iter()
            .filter(|e| &e.kind == kind)
            .map(|e| String::from_utf16_lossy(&units[e.offset..e.offset + e.length]))
            .collect()
    }

    #[test]
    fn inline_styles_links_and_code() {
        let f = markdown(
            "**Nightly report** (v1.2-beta): _see_ [the docs](https://x.invalid/d) and `ls -l`. Done!",
        );
        assert_eq!(
            f.text,
            "Nightly report (v1.2-beta): see the docs and ls -l. Done!"
        );
        assert_eq!(ent(&f, &EntityKind::Bold), ["Nightly report"]);
        assert_eq!(ent(&f, &EntityKind::Italic), ["see"]);
        assert_eq!(ent(&f, &EntityKind::Code), ["ls -l"]);
        assert_eq!(
            ent(&f, &EntityKind::TextLink("https://x.invalid/d".into())),
            ["the docs"]
        );
    }

    #[test]
    fn blocks_keep_their_lines_and_code_blocks_become_pre() {
        let f = markdown(
            "## 1. Disks\n\n- Item 1\n- Item 2\n\n```bash\necho a\necho b\n```\n🙂 end\nline two",
        );
        assert_eq!(
            f.text,
            "1. Disks\n\n- Item 1\n- Item 2\n\necho a\necho b\n\n🙂 end\nline two"
        );
        assert_eq!(ent(&f, &EntityKind::Bold), ["1. Disks"]);
        assert_eq!(
            ent(&f, &EntityKind::Pre(Some("bash".into()))),
            ["echo a\necho b"]
        );
    }

    #[test]
    fn offsets_count_utf16_units() {
        let f = markdown("🙂🙂 **b**");
        assert_eq!(f.text, "🙂🙂 b");
        assert_eq!(f.entities[0].offset, 5);
        assert_eq!(f.entities[0].length, 1);
        assert_eq!(f.len_utf16(), 6);
    }

    #[test]
    fn ordered_and_nested_lists() {
        let f = markdown("1. one\n2. two\n   - sub\n3. three");
        assert_eq!(f.text, "1. one\n2. two\n  - sub\n3. three");
    }
}
