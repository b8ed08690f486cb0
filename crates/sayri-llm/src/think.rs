//! Splits inline `<think>…</think>` reasoning out of streamed answer text.
//!
//! Reasoning models served by llama.cpp, Ollama or LM Studio often put their thoughts in
//! `content`, wrapped in `<think>` tags that may be split across deltas, and some (Qwen3-style
//! templates) omit the opening tag. This splitter turns content deltas into [`Piece`]s that are
//! either answer text or reasoning, so reasoning is never shown as — or searched for code in —
//! the answer.
//!
//! Rules:
//! - `<think>` opens reasoning and `</think>` closes it, only **outside** fenced code blocks
//!   (a line starting with up to three spaces and then a run of three backticks or tildes toggles a fence); a
//!   literal `<think>` inside a fence of the answer is answer text.
//! - Whitespace right after `</think>` is dropped (the answer starts at its first visible char).
//! - [`InlineThink::Auto`]: until the first tag is seen, text is **held back**, because a
//!   `</think>` with no opening tag turns everything before it into reasoning. Held text is
//!   released as answer at the end of the stream (or as soon as the server proves it sends
//!   reasoning in separate fields, see [`ThinkSplitter::answer_mode`]). Safe, but a model
//!   without reasoning then streams its answer in one piece at the end.
//! - [`InlineThink::Explicit`]: only an opening tag starts reasoning; answer text streams at
//!   once and a stray `</think>` is ordinary text.
//! - [`InlineThink::Off`]: no tag handling.

/// How inline `<think>` tags in `content` are treated. Config key idea: `provider.think_tags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InlineThink {
    /// Handle opening and missing-opening tags; hold text until the first tag or the end.
    #[default]
    Auto,
    /// Handle `<think>…</think>`; stream answer text immediately.
    Explicit,
    /// Pass `content` through untouched.
    Off,
}

/// A classified piece of streamed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Answer text.
    Answer(String),
    /// Reasoning text.
    Reasoning(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Auto mode before any tag: answer-like scanning, output held.
    Undecided,
    Reasoning,
    Answer,
}

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Incremental splitter; see the module docs for the rules.
#[derive(Debug)]
pub struct ThinkSplitter {
    policy: InlineThink,
    mode: Mode,
    /// Unprocessed input (may end with a partial tag or fence marker).
    pending: String,
    /// Auto mode: classified-later text.
    held: String,
    in_fence: bool,
    at_line_start: bool,
    trim_leading: bool,
}

impl ThinkSplitter {
    /// A splitter at the start of an answer.
    pub fn new(policy: InlineThink) -> Self {
        let mode = match policy {
            InlineThink::Auto => Mode::Undecided,
            InlineThink::Explicit | InlineThink::Off => Mode::Answer,
        };
        ThinkSplitter {
            policy,
            mode,
            pending: String::new(),
            held: String::new(),
            in_fence: false,
            at_line_start: true,
            trim_leading: true,
        }
    }

    /// The server sends reasoning in its own fields, so no missing-opening-tag case can follow:
    /// release held text as answer and stream from now on.
    pub fn answer_mode(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        if self.mode == Mode::Undecided {
            self.mode = Mode::Answer;
            push(&mut out, Piece::Answer(std::mem::take(&mut self.held)));
            self.run(&mut out);
        }
        out
    }

    /// Feeds one content delta; returns what can already be classified.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        if self.policy == InlineThink::Off {
            push(&mut out, Piece::Answer(text.to_string()));
            return out;
        }
        self.pending.push_str(text);
        self.run(&mut out);
        out
    }

    /// Ends the stream: flushes everything still held or pending.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        match self.mode {
            Mode::Undecided => {
                let mut held = std::mem::take(&mut self.held);
                held.push_str(&rest);
                push(&mut out, Piece::Answer(held));
            }
            Mode::Reasoning => push(&mut out, Piece::Reasoning(rest)),
            Mode::Answer => push(&mut out, Piece::Answer(rest)),
        }
        out
    }

    fn run(&mut self, out: &mut Vec<Piece>) {
        loop {
            let progressed = match self.mode {
                Mode::Reasoning => self.run_reasoning(out),
                Mode::Answer | Mode::Undecided => self.run_answer(out),
            };
            if !progressed {
                break;
            }
        }
    }

    /// Returns true when the mode changed and scanning must continue.
    fn run_reasoning(&mut self, out: &mut Vec<Piece>) -> bool {
        if let Some(i) = self.pending.find(CLOSE) {
            let before = self.pending[..i].to_string();
            self.pending.drain(..i + CLOSE.len());
            push(out, Piece::Reasoning(before));
            self.enter_answer();
            return true;
        }
        let keep = partial_suffix(&self.pending, CLOSE);
        let cut = self.pending.len() - keep;
        let text: String = self.pending.drain(..cut).collect();
        push(out, Piece::Reasoning(text));
        false
    }

    fn enter_answer(&mut self) {
        self.mode = Mode::Answer;
        self.trim_leading = true;
        self.at_line_start = true;
        self.in_fence = false;
    }

    /// Scans answer text (or held text in Auto mode). Returns true on a mode change.
    fn run_answer(&mut self, out: &mut Vec<Piece>) -> bool {
        let mut emitted = String::new();
        let mut i = 0;
        let mut changed = false;
        let s = std::mem::take(&mut self.pending);
        while i < s.len() {
            let rest = &s[i..];
            if self.trim_leading {
                let c = rest.chars().next().unwrap_or(' ');
                if c.is_whitespace() {
                    i += c.len_utf8();
                    continue;
                }
                self.trim_leading = false;
            }
            if self.at_line_start {
                match fence_at(rest) {
                    Fence::Yes(len) => {
                        self.in_fence = !self.in_fence;
                        self.at_line_start = false;
                        emitted.push_str(&rest[..len]);
                        i += len;
                        continue;
                    }
                    Fence::NeedMore => break,
                    Fence::No => {}
                }
            }
            if !self.in_fence {
                if rest.starts_with(OPEN) {
                    self.emit_answerish(out, std::mem::take(&mut emitted));
                    if self.mode == Mode::Undecided {
                        push(out, Piece::Answer(std::mem::take(&mut self.held)));
                    }
                    self.mode = Mode::Reasoning;
                    i += OPEN.len();
                    changed = true;
                    break;
                }
                if self.mode == Mode::Undecided && rest.starts_with(CLOSE) {
                    // Missing opening tag: everything so far was reasoning.
                    let mut reasoning = std::mem::take(&mut self.held);
                    reasoning.push_str(&emitted);
                    emitted.clear();
                    push(out, Piece::Reasoning(reasoning));
                    i += CLOSE.len();
                    self.enter_answer();
                    changed = true;
                    break;
                }
                if is_partial(rest, OPEN)
                    || (self.mode == Mode::Undecided && is_partial(rest, CLOSE))
                {
                    break;
                }
            }
            let c = rest.chars().next().unwrap_or('\n');
            emitted.push(c);
            self.at_line_start = c == '\n';
            i += c.len_utf8();
        }
        self.pending = s[i..].to_string();
        self.emit_answerish(out, emitted);
        changed
    }

    fn emit_answerish(&mut self, out: &mut Vec<Piece>, text: String) {
        if self.mode == Mode::Undecided {
            self.held.push_str(&text);
        } else {
            push(out, Piece::Answer(text));
        }
    }
}

fn push(out: &mut Vec<Piece>, piece: Piece) {
    let empty = match &piece {
        Piece::Answer(t) | Piece::Reasoning(t) => t.is_empty(),
    };
    if !empty {
        out.push(piece);
    }
}

/// `rest` is a non-empty proper prefix of `tag` (more input could complete the tag).
fn is_partial(rest: &str, tag: &str) -> bool {
    !rest.is_empty() && rest.len() < tag.len() && tag.starts_with(rest)
}

/// Length of the longest suffix of `s` that is a proper prefix of `tag`.
fn partial_suffix(s: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            n <= s.len() && s.is_char_boundary(s.len() - n) && tag.starts_with(&s[s.len() - n..])
        })
        .unwrap_or(0)
}

enum Fence {
    Yes(usize),
    No,
    NeedMore,
}

/// A code fence at the start of a line: up to 3 spaces, then three backticks or tildes.
fn fence_at(rest: &str) -> Fence {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < 3 && i < bytes.len() && bytes[i] == b' ' {
        i += 1;
    }
    let marker = match bytes.get(i) {
        None => return Fence::NeedMore,
        Some(b'`') => b'`',
        Some(b'~') => b'~',
        Some(_) => return Fence::No,
    };
    let run = bytes[i..].iter().take_while(|&&b| b == marker).count();
    if run >= 3 {
        Fence::Yes(i + run)
    } else if i + run == bytes.len() {
        Fence::NeedMore
    } else {
        Fence::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: InlineThink, deltas: &[&str]) -> (String, String, usize) {
        let mut s = ThinkSplitter::new(policy);
        let mut pieces = Vec::new();
        for d in deltas {
            pieces.extend(s.push(d));
        }
        pieces.extend(s.finish());
        let mut answer = String::new();
        let mut reasoning = String::new();
        for p in &pieces {
            match p {
                Piece::Answer(t) => answer.push_str(t),
                Piece::Reasoning(t) => reasoning.push_str(t),
            }
        }
        (answer, reasoning, pieces.len())
    }

    const REASONING: &str = "The user wants a listing. Old habit would be:\n```bash\nrm -rf ~/sayri-cache\n```\nbut listing is enough.";

    #[test]
    fn split_tags_across_deltas() {
        let deltas = [
            "<thi",
            "nk>The user wants a listing. Old habit would be:\n```bash\nrm -rf ~/sayri-cache\n```\nbut listing is enough.</th",
            "ink>\n\nHere is the listing:\n",
            "```bash\nls -la\n```\n",
        ];
        for policy in [InlineThink::Auto, InlineThink::Explicit] {
            let (answer, reasoning, _) = run(policy, &deltas);
            assert_eq!(reasoning, REASONING);
            assert_eq!(answer, "Here is the listing:\n```bash\nls -la\n```\n");
        }
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        let full = format!(
            "  <think>{REASONING}</think>\n\nAnswer `x`:\n```\n<think>literal</think>\n```\ndone"
        );
        for cut in 0..=full.len() {
            if !full.is_char_boundary(cut) {
                continue;
            }
            let (answer, reasoning, _) = run(InlineThink::Auto, &[&full[..cut], &full[cut..]]);
            assert_eq!(reasoning, REASONING, "cut {cut}");
            assert_eq!(
                answer, "Answer `x`:\n```\n<think>literal</think>\n```\ndone",
                "cut {cut}"
            );
        }
    }

    #[test]
    fn missing_opening_tag_in_auto_mode() {
        let (answer, reasoning, _) = run(
            InlineThink::Auto,
            &["Let me think about", " `rm -rf /`.</thi", "nk>\nUse ls."],
        );
        assert_eq!(reasoning, "Let me think about `rm -rf /`.");
        assert_eq!(answer, "Use ls.");
    }

    #[test]
    fn auto_holds_text_until_the_end_without_tags() {
        let mut s = ThinkSplitter::new(InlineThink::Auto);
        assert!(s.push("Hello ").is_empty());
        assert!(s.push("world").is_empty());
        assert_eq!(s.finish(), vec![Piece::Answer("Hello world".into())]);
    }

    #[test]
    fn explicit_streams_at_once_and_keeps_stray_close_tag() {
        let mut s = ThinkSplitter::new(InlineThink::Explicit);
        assert_eq!(s.push("Hello "), vec![Piece::Answer("Hello ".into())]);
        let (answer, reasoning, _) = run(InlineThink::Explicit, &["a</think>b"]);
        assert_eq!((answer.as_str(), reasoning.as_str()), ("a</think>b", ""));
    }

    #[test]
    fn literal_think_inside_an_answer_fence_is_left_alone() {
        let text = "Use this:\n```html\n<think>\n```\nok";
        let (answer, reasoning, _) = run(InlineThink::Explicit, &[text]);
        assert_eq!(answer, text);
        assert_eq!(reasoning, "");
        // Split inside the fence marker and inside the tag.
        let (answer, reasoning, _) = run(
            InlineThink::Explicit,
            &["Use this:\n`", "``html\n<thi", "nk>\n``", "`\nok"],
        );
        assert_eq!(answer, text);
        assert_eq!(reasoning, "");
    }

    #[test]
    fn unterminated_reasoning_stays_reasoning() {
        let (answer, reasoning, _) = run(InlineThink::Auto, &["<think>still thinking"]);
        assert_eq!(answer, "");
        assert_eq!(reasoning, "still thinking");
    }

    #[test]
    fn answer_mode_releases_held_text() {
        let mut s = ThinkSplitter::new(InlineThink::Auto);
        assert!(s.push("Hi").is_empty());
        assert_eq!(s.answer_mode(), vec![Piece::Answer("Hi".into())]);
        assert_eq!(s.push(" there"), vec![Piece::Answer(" there".into())]);
    }

    #[test]
    fn off_passes_through() {
        let (answer, reasoning, _) = run(InlineThink::Off, &["<think>x</think>y"]);
        assert_eq!(
            (answer.as_str(), reasoning.as_str()),
            ("<think>x</think>y", "")
        );
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Splitting the content into deltas anywhere never changes the classification.
            #[test]
            fn delta_boundaries_never_change_the_split(
                parts in proptest::collection::vec(prop_oneof![
                    Just("<think>"), Just("</think>"), Just("```"), Just("\n"), Just(" "),
                    Just("rm -rf"), Just("ls"), Just("é"), Just("<"), Just("`"),
                ], 0..24),
                cuts in proptest::collection::vec(0usize..200, 0..6),
                auto in any::<bool>(),
            ) {
                let text: String = parts.concat();
                let policy = if auto { InlineThink::Auto } else { InlineThink::Explicit };
                let whole = run(policy, &[&text]);
                let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= text.len() && text.is_char_boundary(c)).collect();
                cuts.sort_unstable();
                cuts.dedup();
                let mut deltas = Vec::new();
                let mut start = 0;
                for c in cuts.into_iter().chain(std::iter::once(text.len())) {
                    deltas.push(&text[start..c]);
                    start = c;
                }
                let split = run(policy, &deltas);
                prop_assert_eq!((whole.0, whole.1), (split.0, split.1));
            }
        }
    }
}
