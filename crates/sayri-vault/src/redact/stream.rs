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
/// not the start of any secret form is returned at once, not delayed.
///
/// A held tail is bounded: if it exceeds `8 × longest form + 1 KiB` bytes (only possible with long runs
/// of line breaks inside a would-be match) its oldest part is released, redacted as far as known.
pub struct StreamRedactor {
    redactor: SecretRedactor,
    pending: Zeroizing<String>,
}

impl StreamRedactor {
    /// A stream over `redactor`'s secrets (same as [`SecretRedactor::stream`]).
    pub fn new(redactor: SecretRedactor) -> Self {
        Self {
            redactor,
            pending: Zeroizing::new(String::new()),
        }
    }

    /// Adds a chunk; returns the redacted text that is now safe to emit (possibly empty).
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        if self.redactor.is_empty() {
            return std::mem::take(&mut *self.pending);
        }
        let text: &str = &self.pending;
        let found = self.redactor.find(text, true);
        let mut cut = found.hold_from;
        // Never cut inside a match or inside an escape unit of any view.
        loop {
            let mut moved = false;
            for s in &found.spans {
                if s.start < cut && cut < s.end {
                    cut = s.start;
                    moved = true;
                }
            }
            for &(s, e) in &found.units {
                if s < cut && cut < e {
                    cut = s;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        let cap = 8 * self.redactor.max_pattern_len() + 1024;
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
        let out = self.redactor.replace(text, &found.spans, 0, cut);
        let rest = Zeroizing::new(text[cut..].to_string());
        self.pending = rest;
        out
    }

    /// Ends the stream: returns the redacted held-back tail, and leaves the redactor empty for reuse.
    pub fn finish(&mut self) -> String {
        let text = std::mem::take(&mut *self.pending);
        let text = Zeroizing::new(text);
        self.redactor.redact(&text)
    }

    /// Bytes currently held back.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}
