//! The small markdown subset the card draws: paragraphs, headings, bullet and numbered lists,
//! block quotes and code (fenced, indented and inline), with bold, italic and links.
//!
//! Model text is untrusted. Every piece of text in the result has been through
//! [`crate::safe_text::visible`] (before parsing, so a carriage return cannot turn into a line
//! break, and again after, because character references such as `&#27;` decode to controls).
//! Raw HTML in the source is kept as literal text. A link keeps its target only when it is an
//! `http:` or `https:` URL; any other link becomes its label followed by the target in
//! parentheses, as plain text. The widgets that draw a [`Block`] never parse markup from it.

use crate::safe_text::visible;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A run of text with one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inline {
    /// Plain text.
    Text(String),
    /// Bold text.
    Strong(String),
    /// Italic text.
    Emphasis(String),
    /// Inline code.
    Code(String),
    /// A clickable link: `url` is always `http:` or `https:`.
    Link {
        /// Visible label.
        label: String,
        /// Target URL.
        url: String,
    },
    /// A hard line break inside a paragraph.
    Break,
}

/// A block of the card's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A paragraph (also a heading, with `heading: true`).
    Paragraph {
        /// Its runs.
        inlines: Vec<Inline>,
        /// Drawn larger and bold.
        heading: bool,
    },
    /// A list item; `marker` is `•` or `N.`, `depth` 0 for the outermost list.
    Item {
        /// `•` or `1.`, `2.`, …
        marker: String,
        /// Nesting depth.
        depth: usize,
        /// Its runs.
        inlines: Vec<Inline>,
    },
    /// A block quote paragraph.
    Quote(Vec<Inline>),
    /// A code block (monospace, kept verbatim apart from the visible form of controls).
    Code(String),
}

impl Block {
    /// The block's text without styling, as a reader of the card sees it.
    pub fn plain_text(&self) -> String {
        match self {
            Block::Paragraph { inlines, .. } | Block::Quote(inlines) => plain(inlines),
            Block::Item {
                marker, inlines, ..
            } => format!("{marker} {}", plain(inlines)),
            Block::Code(code) => code.clone(),
        }
    }
}

/// Concatenated text of `inlines` (links as their label, breaks as `\n`).
pub fn plain(inlines: &[Inline]) -> String {
    let mut s = String::new();
    for i in inlines {
        match i {
            Inline::Text(t) | Inline::Strong(t) | Inline::Emphasis(t) | Inline::Code(t) => {
                s.push_str(t)
            }
            Inline::Link { label, .. } => s.push_str(label),
            Inline::Break => s.push('\n'),
        }
    }
    s
}

/// True for the only link targets the card makes clickable.
pub fn is_web_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")) && url.len() > 8
}

#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    inlines: Vec<Inline>,
    strong: usize,
    emphasis: usize,
    link: Option<(String, String)>,
    code: Option<String>,
    lists: Vec<Option<u64>>,
    item_marker: Option<String>,
    quote: usize,
    heading: bool,
}

impl Builder {
    fn text(&mut self, t: &str) {
        let t = visible(t).into_owned();
        if let Some(code) = &mut self.code {
            code.push_str(&t);
        } else if let Some((label, _)) = &mut self.link {
            label.push_str(&t);
        } else if self.strong > 0 {
            self.inlines.push(Inline::Strong(t));
        } else if self.emphasis > 0 {
            self.inlines.push(Inline::Emphasis(t));
        } else {
            self.inlines.push(Inline::Text(t));
        }
    }

    /// Ends the current paragraph-like block, if it has any text.
    fn flush(&mut self) {
        let inlines = merge(std::mem::take(&mut self.inlines));
        if inlines.is_empty() {
            return;
        }
        let block = if let Some(marker) = self.item_marker.take() {
            Block::Item {
                marker,
                depth: self.lists.len().saturating_sub(1),
                inlines,
            }
        } else if self.quote > 0 {
            Block::Quote(inlines)
        } else {
            Block::Paragraph {
                inlines,
                heading: self.heading,
            }
        };
        self.blocks.push(block);
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { .. } => {
                self.flush();
                self.heading = true;
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(_) => {
                self.flush();
                self.code = Some(String::new());
            }
            Tag::List(first) => {
                self.flush();
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}.");
                        *n += 1;
                        m
                    }
                    _ => "•".to_string(),
                };
                self.item_marker = Some(marker);
            }
            Tag::Strong => self.strong += 1,
            Tag::Emphasis => self.emphasis += 1,
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.link = Some((String::new(), dest_url.to_string()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Item => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.heading = false;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    let code = code.strip_suffix('\n').unwrap_or(&code).to_string();
                    self.blocks.push(Block::Code(code));
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Strong => self.strong = self.strong.saturating_sub(1),
            TagEnd::Emphasis => self.emphasis = self.emphasis.saturating_sub(1),
            TagEnd::Link | TagEnd::Image => {
                if let Some((label, url)) = self.link.take() {
                    let url = visible(&url).into_owned();
                    if is_web_url(&url) {
                        let label = if label.is_empty() { url.clone() } else { label };
                        self.inlines.push(Inline::Link { label, url });
                    } else {
                        self.inlines.push(Inline::Text(format!("{label} ({url})")));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Joins neighbouring runs of the same style.
fn merge(inlines: Vec<Inline>) -> Vec<Inline> {
    let mut out: Vec<Inline> = Vec::with_capacity(inlines.len());
    for i in inlines {
        match (out.last_mut(), i) {
            (Some(Inline::Text(a)), Inline::Text(b)) => a.push_str(&b),
            (Some(Inline::Strong(a)), Inline::Strong(b)) => a.push_str(&b),
            (Some(Inline::Emphasis(a)), Inline::Emphasis(b)) => a.push_str(&b),
            (_, i) => out.push(i),
        }
    }
    out
}

/// Parses `text` (untrusted) into blocks; see the module rules.
pub fn parse(text: &str) -> Vec<Block> {
    let safe = visible(text);
    let mut b = Builder::default();
    let parser = Parser::new_ext(&safe, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Start(tag) => b.start(tag),
            Event::End(tag) => b.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => b.text(&t),
            Event::Code(t) => {
                let t = visible(&t).into_owned();
                if let Some((label, _)) = &mut b.link {
                    label.push_str(&t);
                } else {
                    b.inlines.push(Inline::Code(t));
                }
            }
            Event::SoftBreak => b.text(" "),
            Event::HardBreak => {
                if b.code.is_some() {
                    b.text("\n");
                } else {
                    b.inlines.push(Inline::Break);
                }
            }
            Event::Rule => {
                b.flush();
                b.blocks.push(Block::Paragraph {
                    inlines: vec![Inline::Text("―――".into())],
                    heading: false,
                });
            }
            Event::TaskListMarker(done) => b.text(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }
    b.flush();
    b.blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn para(text: &str) -> Block {
        Block::Paragraph {
            inlines: vec![Inline::Text(text.into())],
            heading: false,
        }
    }

    #[test]
    fn paragraphs_lists_and_code_become_blocks() {
        let blocks =
            parse("Hello **you**.\n\n- one\n- `two`\n\n1. a\n2. b\n\n```sh\nls -la\n```\n");
        assert_eq!(
            blocks,
            vec![
                Block::Paragraph {
                    inlines: vec![
                        Inline::Text("Hello ".into()),
                        Inline::Strong("you".into()),
                        Inline::Text(".".into())
                    ],
                    heading: false
                },
                Block::Item {
                    marker: "•".into(),
                    depth: 0,
                    inlines: vec![Inline::Text("one".into())]
                },
                Block::Item {
                    marker: "•".into(),
                    depth: 0,
                    inlines: vec![Inline::Code("two".into())]
                },
                Block::Item {
                    marker: "1.".into(),
                    depth: 0,
                    inlines: vec![Inline::Text("a".into())]
                },
                Block::Item {
                    marker: "2.".into(),
                    depth: 0,
                    inlines: vec![Inline::Text("b".into())]
                },
                Block::Code("ls -la".into()),
            ]
        );
    }

    #[test]
    fn nested_list_items_carry_their_depth() {
        let blocks = parse("- outer\n  - inner\n");
        assert!(
            matches!(&blocks[1], Block::Item { depth: 1, .. }),
            "{blocks:?}"
        );
    }

    #[test]
    fn only_web_links_stay_links_and_others_show_their_target_as_text() {
        let blocks = parse(
            "[guide](https://docs.invalid/guide) [x](file:///etc/passwd) [y](javascript:alert(1))",
        );
        let Block::Paragraph { inlines, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        let links: Vec<_> = inlines
            .iter()
            .filter(|i| matches!(i, Inline::Link { .. }))
            .collect();
        assert_eq!(
            links,
            vec![&Inline::Link {
                label: "guide".into(),
                url: "https://docs.invalid/guide".into()
            }]
        );
        let text = plain(inlines);
        assert!(text.contains("x (file:///etc/passwd)"), "{text}");
        assert!(text.contains("y (javascript:alert(1))"), "{text}");
    }

    #[test]
    fn html_in_the_answer_is_kept_as_literal_text() {
        let src = "Open <a href=\"file:///x\">notes</a> <span size=\"1\">hidden</span> <b>b</b>";
        let blocks = parse(src);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].plain_text(), src);
    }

    #[test]
    fn control_characters_stay_visible_even_from_character_references() {
        let blocks = parse("a\rb \u{1b}[2J &#27;[6n &#x202e;x");
        let text = blocks[0].plain_text();
        assert!(
            !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{text:?}"
        );
        assert!(text.contains("a\\rb"), "{text}");
        assert!(text.contains("\\x1b[2J"), "{text}");
        assert!(text.contains("\\x1b[6n"), "{text}");
        assert!(text.contains("\\u{202e}x"), "{text}");
    }

    #[test]
    fn a_plain_line_is_one_paragraph() {
        assert_eq!(parse("just text"), vec![para("just text")]);
        assert!(parse("").is_empty());
    }

    #[test]
    fn web_url_check_is_strict_about_the_scheme() {
        assert!(is_web_url("https://example.invalid/a"));
        assert!(is_web_url("HTTP://example.invalid"));
        assert!(!is_web_url("file:///etc/passwd"));
        assert!(!is_web_url("javascript:alert(1)"));
        assert!(!is_web_url("https://"));
    }
}
