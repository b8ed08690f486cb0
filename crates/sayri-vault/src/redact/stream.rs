//! `StreamRedactor`: redaction of output that arrives in pieces, with carry-over between pieces.

use zeroize::Zeroizing;

use super::secret_redactor::SecretRedactor;

/// Redacts a stream of text chunks so that the concatenation of everything returned by
/// [`push`](Self::push) and [`finish`](Self::finish) equals [`SecretRedactor::redact`] of the whole
/// text, while no piece of a secret leaves before the redactor can tell it is one.
///
/// After each chunk it returns the redacted text up to the earliest point from which the buffered
/// text could still grow into a match (a suffix that is a proper prefix of a searched form, in any
/// decoded view, or an escape cut off by the chunk end) and keeps only that tail. Text whose end is
/// not the start of any secret form is returned at once, not delayed. A tail of fewer than 4 bytes
/// followed by a line break is not held: a match continues across a line break only when at least
/// 4 of its bytes precede it, in one-shot and streaming redaction alike.
///
/// When the line-break rule lets the start of a would-be match go out, the redactor keeps that
/// emitted text as look-behind, so the match is still found when the rest arrives; only its
/// unemitted part is replaced. A held tail is bounded: past `8 × longest form + 1 KiB` bytes (only possible with long
/// runs of line breaks inside a would-be match) its oldest part is released, redacted as far as known.
pub struct StreamRedactor {
    redactor: SecretRedactor,
    /// Look-behind (already emitted) followed by the held-back tail.
    buf: Zeroizing<String>,
    /// Bytes at the start of `buf` that were already emitted.
    emitted: usize,
    /// Whether `buf` starts at the start of a line of the stream (dump lines are recognised whole).
    at_line_start: bool,
}

impl StreamRedactor {
    /// A stream over `redactor`'s secrets (same as [`SecretRedactor::stream`]).
    pub fn new(redactor: SecretRedactor) -> Self {
        Self {
            redactor,
            buf: Zeroizing::new(String::new()),
            emitted: 0,
            at_line_start: true,
        }
    }

    fn cap(&self) -> usize {
        8 * self.redactor.max_pattern_len() + 1024
    }

    /// Adds a chunk; returns the redacted text that is now safe to emit (possibly empty).
    pub fn push(&mut self, chunk: &str) -> String {
        if self.redactor.is_empty() {
            return chunk.to_string();
        }
        self.buf.push_str(chunk);
        let text: &str = &self.buf;
        let found = self.redactor.find(text, true, self.at_line_start);
        let floor = self.emitted;
        let mut cut = found.hold_from.max(floor);
        // Never cut inside a match or inside an escape unit of any view.
        loop {
            let mut moved = false;
            for s in &found.spans {
                if s.start.max(floor) < cut && cut < s.end {
                    cut = s.start.max(floor);
                    moved = true;
                }
            }
            for &(s, e) in &found.units {
                if s.max(floor) < cut && cut < e {
                    cut = s.max(floor);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        let cap = self.cap();
        if text.len() - cut > cap {
            cut = text.len() - cap;
            for s in &found.spans {
                if s.start < cut && cut < s.end {
                    cut = s.end;
                }
            }
        }
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let cut = cut.max(floor);
        let out = self
            .redactor
            .replace(text, &clip(&found.spans, floor), floor, cut);
        // Keep emitted text as look-behind only from where a would-be match may continue.
        let mut keep_from = found.lookbehind_from.min(cut);
        // A match held back (not yet emitted) may have been found only with the look-behind
        // before it (a secret split by a line break whose first bytes were already emitted, its
        // span trimmed past the break): keep all of it until the match goes out.
        if found.spans.iter().any(|s| s.end > cut) {
            keep_from = 0;
        }
        let mut keep_from = keep_from.max(cut.saturating_sub(cap));
        while !text.is_char_boundary(keep_from) {
            keep_from -= 1;
        }
        self.emitted = cut - keep_from;
        if keep_from > 0 {
            self.at_line_start = text.as_bytes()[keep_from - 1] == b'\n';
        }
        self.buf = Zeroizing::new(text[keep_from..].to_string());
        out
    }

    /// Ends the stream: returns the redacted held-back tail, and leaves the redactor empty for reuse.
    pub fn finish(&mut self) -> String {
        let text = std::mem::take(&mut *self.buf);
        let text = Zeroizing::new(text);
        let floor = std::mem::take(&mut self.emitted);
        let whole_first_line = std::mem::replace(&mut self.at_line_start, true);
        if self.redactor.is_empty() {
            return text[floor..].to_string();
        }
        let found = self.redactor.find(&text, false, whole_first_line);
        self.redactor
            .replace(&text, &clip(&found.spans, floor), floor, text.len())
    }

    /// Bytes currently held back (not yet emitted).
    pub fn pending_len(&self) -> usize {
        self.buf.len() - self.emitted
    }
}

/// Drops spans that end in emitted text and starts the others no earlier than `floor`.
fn clip(spans: &[super::secret_redactor::Span], floor: usize) -> Vec<super::secret_redactor::Span> {
    spans
        .iter()
        .filter(|s| s.end > floor)
        .map(|s| {
            let mut s = *s;
            s.start = s.start.max(floor);
            s
        })
        .collect()
}
