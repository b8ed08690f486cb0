//! `SecretRedactor`: replaces every known secret, in every searched form, with `$SECRET:<KEY>`.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use zeroize::Zeroizing;

use super::decoded_views::{Decoding, View, build_view, view_bytes, view_kinds};
use super::encoded_forms::encoded_forms;
use super::stream::StreamRedactor;
use super::url_forms::{percent_spellings, url_values};
use crate::MIN_SECRET_CHARS;

/// The marker a redacted secret becomes: `$SECRET:` followed by its key name.
pub const MARKER_PREFIX: &str = sayri_core::ports::SECRET_MARKER_PREFIX;

/// Replaces secrets in text. Cheap to clone (shared, immutable); build a new one when secrets change.
///
/// What it finds, for every secret: the plain value; hex (lower/upper); base64 (standard and URL-safe,
/// padded or not, at any of the 3 byte offsets inside a longer encoding); and all of these after the
/// text is percent-decoded (any subset of characters, either hex case, `+` as space), JSON-unescaped,
/// or stripped of `\r`/`\n` (values wrapped by `fold`, base64 line wrapping, CRLF), or read back
/// from a multi-line hex or `od -c` dump. The same for the values URL tools derive from a secret
/// (decoded, or split at URL delimiters into distinctive pieces), and the secret percent-encoded
/// once as a literal (so a double encoding decodes into it). Each maximal run of overlapping
/// matches becomes one `$SECRET:<KEY>` (the key of the leftmost, longest match).
///
/// Values shorter than [`MIN_SECRET_CHARS`] characters are ignored (they cannot be told apart from
/// ordinary text).
#[derive(Clone)]
pub struct SecretRedactor {
    inner: Arc<Compiled>,
}

struct Compiled {
    /// (key name, value), in insertion order.
    secrets: Vec<(String, Zeroizing<String>)>,
    /// All patterns, sorted and unique, each with the index of the first secret that produced it.
    patterns: Vec<(Zeroizing<Vec<u8>>, usize)>,
    automaton: Option<AhoCorasick>,
    max_pattern_len: usize,
    any_space: bool,
    /// `first_bytes[b]`: some pattern starts with byte `b`.
    first_bytes: [bool; 256],
    /// Bit `a * 256 + b`: some pattern starts with bytes `a`, `b` (every pattern has at least 4).
    first_pairs: Box<[u64; 1024]>,
}

/// A span of original text to replace, with the index of the secret it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub secret: usize,
}

/// What a search of a (possibly partial) text found.
pub(crate) struct Found {
    /// Merged, sorted, non-overlapping spans, snapped to char boundaries.
    pub spans: Vec<Span>,
    /// Partial mode: the earliest original offset from which the text could still grow into a match.
    pub hold_from: usize,
    /// Partial mode: original ranges of multi-byte escape units of every view.
    pub units: Vec<(usize, usize)>,
    /// Partial mode: earliest untrimmed start of a would-be match; the line-break rule may let its
    /// beginning go out now, so a stream keeps text from here as look-behind.
    pub lookbehind_from: usize,
}

impl std::fmt::Debug for SecretRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRedactor")
            .field("keys", &self.keys())
            .field("patterns", &self.inner.patterns.len())
            .finish()
    }
}

impl Default for SecretRedactor {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl SecretRedactor {
    /// Builds a redactor for `(key name, value)` pairs. Values are searched exactly as given (no
    /// trimming); values under [`MIN_SECRET_CHARS`] characters are skipped.
    pub fn new(secrets: Vec<(String, Zeroizing<String>)>) -> Self {
        let secrets: Vec<_> = secrets
            .into_iter()
            .filter(|(_, v)| v.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        let mut patterns: Vec<(Zeroizing<Vec<u8>>, usize)> = Vec::new();
        for (idx, (_, value)) in secrets.iter().enumerate() {
            for p in encoded_forms(value) {
                patterns.push((p, idx));
            }
            for derived in url_values(value) {
                for p in encoded_forms(&derived) {
                    patterns.push((p, idx));
                }
            }
            for p in percent_spellings(value) {
                patterns.push((p, idx));
            }
        }
        // Sort by bytes; for equal patterns keep the earliest secret.
        patterns.sort_by(|a, b| a.0.as_slice().cmp(b.0.as_slice()).then(a.1.cmp(&b.1)));
        patterns.dedup_by(|a, b| a.0.as_slice() == b.0.as_slice());
        let automaton = if patterns.is_empty() {
            None
        } else {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .build(patterns.iter().map(|(p, _)| p.as_slice()))
                .ok()
        };
        let max_pattern_len = patterns.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
        let any_space = secrets.iter().any(|(_, v)| v.contains(' '));
        let mut first_bytes = [false; 256];
        let mut first_pairs = Box::new([0u64; 1024]);
        for (p, _) in &patterns {
            first_bytes[usize::from(p[0])] = true;
            let pair = usize::from(p[0]) << 8 | usize::from(p[1]);
            first_pairs[pair / 64] |= 1 << (pair % 64);
        }
        Self {
            inner: Arc::new(Compiled {
                secrets,
                patterns,
                automaton,
                max_pattern_len,
                any_space,
                first_bytes,
                first_pairs,
            }),
        }
    }

    /// The same redactor plus one secret that does not live in the vault (e.g. the LLM provider's API
    /// key as `PROVIDER_API_KEY`). A value under [`MIN_SECRET_CHARS`] characters is ignored.
    #[must_use]
    pub fn with_extra(&self, name: &str, value: &str) -> Self {
        let mut secrets = self.inner.secrets.clone();
        secrets.push((name.to_string(), Zeroizing::new(value.to_string())));
        Self::new(secrets)
    }

    /// Key names this redactor knows, in insertion order.
    pub fn keys(&self) -> Vec<String> {
        self.inner.secrets.iter().map(|(k, _)| k.clone()).collect()
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.inner.automaton.is_none()
    }

    /// Returns `text` with every occurrence of every secret, in every searched form, replaced by
    /// `$SECRET:<KEY>`.
    pub fn redact(&self, text: &str) -> String {
        let found = self.find(text, false, true);
        self.replace(text, &found.spans, 0, text.len())
    }

    /// As [`Self::redact`], for a text that was cut short (a title, an intent): a trailing piece
    /// of at least [`MIN_SECRET_CHARS`] characters that starts a secret's value is replaced too
    /// (the longest such piece, by the marker of its secret).
    pub fn redact_cut(&self, text: &str) -> String {
        let mut best: Option<(usize, usize)> = None;
        for (idx, (_, value)) in self.inner.secrets.iter().enumerate() {
            // `at` is the byte length of a prefix of at least MIN_SECRET_CHARS characters.
            for (at, _) in value.char_indices().skip(MIN_SECRET_CHARS) {
                if text.ends_with(&value[..at]) && best.is_none_or(|(len, _)| at > len) {
                    best = Some((at, idx));
                }
            }
        }
        match best {
            None => self.redact(text),
            Some((len, idx)) => {
                let mut out = self.redact(&text[..text.len() - len]);
                out.push_str(MARKER_PREFIX);
                out.push_str(&self.inner.secrets[idx].0);
                out
            }
        }
    }

    /// As [`Self::redact`], for a text whose beginning was cut off (the tail of a long
    /// output): a leading piece of at least [`MIN_SECRET_CHARS`] characters that ends a
    /// secret's value is replaced too (the longest such piece, by the marker of its secret).
    pub fn redact_cut_start(&self, text: &str) -> String {
        let mut best: Option<(usize, usize)> = None;
        for (idx, (_, value)) in self.inner.secrets.iter().enumerate() {
            let chars = value.chars().count();
            // `at` starts a suffix of at least MIN_SECRET_CHARS characters.
            for (n, (at, _)) in value.char_indices().enumerate().skip(1) {
                if chars - n < MIN_SECRET_CHARS {
                    break;
                }
                let piece = &value[at..];
                if text.starts_with(piece) && best.is_none_or(|(len, _)| piece.len() > len) {
                    best = Some((piece.len(), idx));
                }
            }
        }
        match best {
            None => self.redact(text),
            Some((len, idx)) => {
                let mut out = String::from(MARKER_PREFIX);
                out.push_str(&self.inner.secrets[idx].0);
                out.push_str(&self.redact(&text[len..]));
                out
            }
        }
    }

    /// A streaming redactor over this redactor's secrets (see [`StreamRedactor`]).
    pub fn stream(&self) -> StreamRedactor {
        StreamRedactor::new(self.clone())
    }

    /// The longest pattern in bytes (bounds how much a stream must hold back).
    pub(crate) fn max_pattern_len(&self) -> usize {
        self.inner.max_pattern_len
    }

    /// Searches `text` in every view. In `partial` mode also computes how much of the end to hold back.
    /// `whole_first_line` is false when `text` starts inside a line (a stream's kept tail).
    pub(crate) fn find(&self, text: &str, partial: bool, whole_first_line: bool) -> Found {
        let mut found = Found {
            spans: Vec::new(),
            hold_from: text.len(),
            units: Vec::new(),
            lookbehind_from: text.len(),
        };
        let Some(ac) = &self.inner.automaton else {
            return found;
        };
        let mut raw: Vec<Span> = Vec::new();
        for (strip, decoding) in view_kinds(text, self.inner.any_space, partial, whole_first_line) {
            // Most text holds no secret: a one-shot search maps a view back only when it matches.
            if !partial
                && !ac.is_match(view_bytes(text, strip, decoding, whole_first_line).as_ref())
            {
                continue;
            }
            let view = build_view(text, strip, decoding, partial, whole_first_line);
            let breaks = LineBreaks {
                text: text.as_bytes(),
                view: &view,
                active: strip,
            };
            for m in ac.find_overlapping_iter(view.bytes.as_slice()) {
                let s = breaks.trim(m.start(), m.end(), false);
                raw.push(Span {
                    start: view.start[s] as usize,
                    end: view.end[m.end() - 1] as usize,
                    secret: self.inner.patterns[m.pattern().as_usize()].1,
                });
            }
            if partial {
                let (hold, behind) = self.hold_point(&view, &breaks);
                let hold = hold.unwrap_or(text.len());
                let hold = view.incomplete_from.map_or(hold, |i| hold.min(i));
                found.hold_from = found.hold_from.min(hold);
                if let Some(mut b) = behind {
                    // A dump line is recognised whole: keep its start, not only the held bytes.
                    if matches!(decoding, Decoding::Dump(_)) {
                        b = text[..b].rfind('\n').map_or(0, |n| n + 1);
                    }
                    found.lookbehind_from = found.lookbehind_from.min(b);
                }
                found
                    .units
                    .extend(view.units.iter().map(|&(s, e)| (s as usize, e as usize)));
            }
        }
        found.spans = merge(text, raw);
        found
    }

    /// The earliest original offset from which the end of `view` could still grow into a match: the
    /// start (after line-break trimming) of any suffix that is a proper prefix of some pattern; and the
    /// earliest untrimmed start of such a suffix (what a stream must keep as look-behind).
    fn hold_point(&self, view: &View, breaks: &LineBreaks<'_>) -> (Option<usize>, Option<usize>) {
        let n = view.bytes.len();
        let lo = n.saturating_sub(self.inner.max_pattern_len.saturating_sub(1));
        let patterns = &self.inner.patterns;
        let mut best: Option<usize> = None;
        let mut behind: Option<usize> = None;
        let starts_a_pattern = |i: usize| match view.bytes.get(i + 1) {
            Some(&b) => {
                let pair = usize::from(view.bytes[i]) << 8 | usize::from(b);
                self.inner.first_pairs[pair / 64] & (1 << (pair % 64)) != 0
            }
            None => self.inner.first_bytes[usize::from(view.bytes[i])],
        };
        for i in lo..n {
            if !starts_a_pattern(i) {
                continue;
            }
            let suffix = &view.bytes[i..];
            let at = patterns.partition_point(|(p, _)| p.as_slice() < suffix);
            let grows = patterns[at..]
                .iter()
                .take(2)
                .any(|(p, _)| p.len() > suffix.len() && p.starts_with(suffix));
            if grows {
                let t = breaks.trim(i, n, true);
                if t < n {
                    let o = view.start[t] as usize;
                    best = Some(best.map_or(o, |b| b.min(o)));
                }
                if behind.is_none() {
                    behind = Some(view.start[i] as usize);
                }
            }
        }
        (best, behind)
    }

    /// Writes `text[from..to]` with `spans` (which must lie inside or outside that range, never across
    /// its ends) replaced by markers.
    pub(crate) fn replace(&self, text: &str, spans: &[Span], from: usize, to: usize) -> String {
        let mut out = String::with_capacity(to - from);
        let mut pos = from;
        for s in spans.iter().filter(|s| s.start >= from && s.end <= to) {
            out.push_str(&text[pos..s.start]);
            out.push_str(MARKER_PREFIX);
            out.push_str(&self.inner.secrets[s.secret].0);
            pos = s.end;
        }
        out.push_str(&text[pos..to]);
        out
    }
}

/// A match may run across a stripped line break only when at least this many decoded bytes of it
/// precede that break. Without the rule, every line ending in a secret's first character would have
/// to wait for the next line; with it, a value folded into lines shorter than 4 bytes is not joined.
pub(crate) const MIN_BYTES_BEFORE_BREAK: usize = 4;

/// Line-break facts of a view with `\r`/`\n` stripped (inactive for other views).
struct LineBreaks<'a> {
    text: &'a [u8],
    view: &'a View,
    active: bool,
}

impl LineBreaks<'_> {
    /// True when a stripped line break follows view byte `i` in the original text.
    fn after(&self, i: usize) -> bool {
        matches!(
            self.text.get(self.view.end[i] as usize),
            Some(b'\r' | b'\n')
        )
    }

    /// Moves the start of a (partial, when `trailing`) match `[start, end)` past every line break
    /// that fewer than [`MIN_BYTES_BEFORE_BREAK`] of its bytes precede. Returns the new start
    /// (`end` when nothing is left). The same rule serves one-shot and streaming redaction, so both
    /// agree whatever the chunking.
    fn trim(&self, start: usize, end: usize, trailing: bool) -> usize {
        if !self.active {
            return start;
        }
        let last = if trailing { end } else { end.saturating_sub(1) };
        let mut s = start;
        for i in start..last {
            if self.after(i) && i + 1 - s < MIN_BYTES_BEFORE_BREAK {
                s = i + 1;
            }
        }
        s
    }
}

/// Sorts spans, widens them to char boundaries and merges overlapping ones (touching spans stay apart).
fn merge(text: &str, mut raw: Vec<Span>) -> Vec<Span> {
    for s in &mut raw {
        while !text.is_char_boundary(s.start) {
            s.start -= 1;
        }
        while !text.is_char_boundary(s.end) {
            s.end += 1;
        }
    }
    raw.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out: Vec<Span> = Vec::with_capacity(raw.len());
    for s in raw {
        match out.last_mut() {
            Some(last) if s.start < last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

impl sayri_core::ports::Redactor for SecretRedactor {
    fn redact(&self, text: &str) -> String {
        SecretRedactor::redact(self, text)
    }

    fn redact_cut(&self, text: &str) -> String {
        SecretRedactor::redact_cut(self, text)
    }

    fn redact_cut_start(&self, text: &str) -> String {
        SecretRedactor::redact_cut_start(self, text)
    }
}
