//! The text a reply is spoken as: markdown, code, links, URLs and emoji do not belong in
//! speech. [`speakable_text`] converts a whole reply; [`SentenceSplitter`] cuts a streamed
//! reply into speakable sentences as soon as each one is complete, so speech can start before
//! the reply ends.

use crate::static_regex::static_regex;
use regex::Regex;
use std::sync::LazyLock;

struct Rules {
    think: Regex,
    fence: Regex,
    open_fence: Regex,
    inline_code: Regex,
    image: Regex,
    link: Regex,
    url: Regex,
    bold: Regex,
    italic: Regex,
    heading: Regex,
    bullet: Regex,
    quote: Regex,
    leftovers: Regex,
    emoji: Regex,
    spaces: Regex,
    blank_lines: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let r = |p: &str| static_regex(p);
    Rules {
        think: r(r"(?s)<(think|thought)>.*?</(think|thought)>|<(think|thought)>.*$"),
        fence: r(r"(?s)```.*?```|~~~.*?~~~"),
        open_fence: r(r"(?s)```.*$|~~~.*$"),
        inline_code: r(r"`([^`]*)`"),
        image: r(r"!\[([^\]]*)\]\([^)]*\)"),
        link: r(r"\[([^\]]*)\]\([^)]*\)"),
        url: r(r"(?i)\b(?:https?://|www\.)\S+"),
        bold: r(r"(\*\*|__)(.+?)(\*\*|__)"),
        italic: r(r"(^|[\s(])[*_]([^*_\n]+)[*_]"),
        heading: r(r"(?m)^\s{0,3}#{1,6}\s*"),
        bullet: r(r"(?m)^\s*(?:[-*+•]|\d+[.)])\s+"),
        quote: r(r"(?m)^\s*>+\s?"),
        leftovers: r(r"[*_~`#>|<]"),
        emoji: r(concat!(
            "[\u{1F600}-\u{1F64F}\u{1F300}-\u{1F5FF}\u{1F680}-\u{1F6FF}\u{1F1E0}-\u{1F1FF}",
            "\u{1F900}-\u{1F9FF}\u{1FA00}-\u{1FAFF}\u{2700}-\u{27BF}\u{2600}-\u{26FF}",
            "\u{2B50}\u{200D}\u{FE0F}]"
        )),
        spaces: r(r"[ \t]+"),
        blank_lines: r(r"\n\s*\n+"),
    }
});

/// Converts a markdown reply to plain speech: drops reasoning blocks and fenced code entirely,
/// unwraps inline code, bold, italic, headings, list bullets, quotes and links (`[t](u)` → `t`),
/// removes bare URLs, leftover markup characters and emoji, squeezes spaces and blank lines.
/// An empty result means "say nothing".
pub fn speakable_text(markdown: &str) -> String {
    let r = &*RULES;
    let s = r.think.replace_all(markdown, " ");
    let s = r.fence.replace_all(&s, " ");
    let s = r.open_fence.replace_all(&s, " ");
    let s = r.inline_code.replace_all(&s, "$1");
    let s = r.image.replace_all(&s, "$1");
    let s = r.link.replace_all(&s, "$1");
    let s = r.url.replace_all(&s, "");
    let s = r.bold.replace_all(&s, "$2");
    let s = r.italic.replace_all(&s, "$1$2");
    let s = r.heading.replace_all(&s, "");
    let s = r.bullet.replace_all(&s, "");
    let s = r.quote.replace_all(&s, "");
    let s = r.leftovers.replace_all(&s, "");
    let s = r.emoji.replace_all(&s, "");
    let s = r.spaces.replace_all(&s, " ");
    let s = r.blank_lines.replace_all(&s, "\n");
    let lines: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join("\n")
}

/// Cuts a streamed reply into speakable sentences. Text inside an unclosed code fence or
/// reasoning block is held until the block closes (and then dropped, as it is not spoken).
#[derive(Debug, Default, Clone)]
pub struct SentenceSplitter {
    pending: String,
}

impl SentenceSplitter {
    /// An empty splitter.
    pub fn new() -> SentenceSplitter {
        SentenceSplitter::default()
    }

    /// Adds a piece of the reply; returns the speakable sentences it completed, in order.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.pending.push_str(delta);
        let mut out = Vec::new();
        while let Some(end) = self.sentence_end() {
            let head: String = self.pending[..end].to_string();
            self.pending.replace_range(..end, "");
            let spoken = speakable_text(&head).replace('\n', " ");
            if !spoken.trim().is_empty() {
                out.push(spoken.trim().to_string());
            }
        }
        out
    }

    /// The reply ended: returns what is left, speakable (possibly nothing).
    pub fn finish(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.pending);
        let spoken = speakable_text(&rest).replace('\n', " ");
        if spoken.trim().is_empty() {
            Vec::new()
        } else {
            vec![spoken.trim().to_string()]
        }
    }

    /// Byte index just past the first complete sentence outside any open block.
    fn sentence_end(&self) -> Option<usize> {
        let p = &self.pending;
        let fences = p.matches("```").count() + p.matches("~~~").count();
        let opens = p.matches("<think>").count() + p.matches("<thought>").count();
        let closes = p.matches("</think>").count() + p.matches("</thought>").count();
        let in_block = fences % 2 == 1 || opens > closes;
        let mut fence_depth = 0usize;
        let bytes = p.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if p[i..].starts_with("```") || p[i..].starts_with("~~~") {
                fence_depth ^= 1;
                i += 3;
                continue;
            }
            let c = bytes[i];
            let outside = fence_depth == 0 && !(in_block && i >= self.block_start());
            if outside && matches!(c, b'.' | b'!' | b'?' | b'\n') {
                let next = bytes.get(i + 1).copied();
                let boundary = c == b'\n' || matches!(next, Some(b' ' | b'\n' | b'\t'));
                // "3.14" or "e.g." mid-word is not a boundary; a boundary needs whitespace.
                if boundary {
                    return Some(i + 1);
                }
            }
            i += 1;
        }
        None
    }

    fn block_start(&self) -> usize {
        ["<think>", "<thought>", "```", "~~~"]
            .iter()
            .filter_map(|m| self.pending.rfind(m))
            .max()
            .unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_plain_speech() {
        let md = "# Result\n\n**Paris** is the *capital*. See [the map](https://x.y/z) or https://example.com/a.\n\n- one\n- two 😀\n\n```bash\nls -la\n```\nUse `ls` to list.\n<think>hidden</think>> quoted";
        assert_eq!(
            speakable_text(md),
            "Result\nParis is the capital. See the map or\none\ntwo\nUse ls to list.\nquoted"
        );
    }

    #[test]
    fn only_code_says_nothing() {
        assert_eq!(speakable_text("```\nrm -rf /tmp/x\n```"), "");
        assert_eq!(speakable_text("<think>plan</think>"), "");
    }

    #[test]
    fn splitter_yields_sentences_as_they_complete() {
        let mut s = SentenceSplitter::new();
        assert!(s.push("The capital").is_empty());
        assert_eq!(
            s.push(" of France is **Paris**. It"),
            vec!["The capital of France is Paris."]
        );
        assert!(s.push(" has 2.1 million").is_empty());
        assert_eq!(s.push(" people! Bye"), vec!["It has 2.1 million people!"]);
        assert_eq!(s.finish(), vec!["Bye"]);
    }

    #[test]
    fn splitter_holds_code_blocks_until_closed_and_drops_them() {
        let mut s = SentenceSplitter::new();
        assert_eq!(
            s.push("Run this. ```bash\necho hi. there\n"),
            vec!["Run this."]
        );
        assert!(s.push("more.\n").is_empty());
        assert!(s.push("```\nDone. ").len() <= 1);
        let rest = s.finish();
        assert!(rest.iter().all(|x| !x.contains("echo")), "{rest:?}");
    }
}
