//! Output capture: stdout and stderr share one pipe, so their interleaving is the order the
//! command wrote them. The capture keeps the beginning and the end of the output — half of the
//! limit each — and counts what lies between, so a long output still shows its first lines and
//! its last ones (where errors and totals are).

use sayri_core::ports::OutputSize;
use std::collections::VecDeque;

/// A bounded capture of a byte stream: the first bytes, the last bytes, and the size of the
/// middle that was dropped.
#[derive(Debug)]
pub struct OutputCapture {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    dropped: OutputSize,
}

/// The captured output, as text (invalid UTF-8 replaced by U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Captured {
    /// All of the output, or its beginning (ending after a line break where there is one).
    pub head: String,
    /// The end of the output (starting after a line break where there is one); empty when
    /// nothing was dropped.
    pub tail: String,
    /// What was dropped between `head` and `tail`.
    pub omitted: OutputSize,
}

impl OutputCapture {
    /// A capture keeping at most `limit` bytes: the first half and the last half.
    pub fn new(limit: usize) -> Self {
        let head_cap = limit - limit / 2;
        OutputCapture {
            head: Vec::with_capacity(head_cap.min(16 * 1024)),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: limit / 2,
            dropped: OutputSize::default(),
        }
    }

    /// Appends `bytes`.
    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_cap {
            let (gone, keep) = bytes.split_at(bytes.len() - self.tail_cap);
            let old: Vec<u8> = self.tail.drain(..).collect();
            self.drop_bytes(&old);
            self.drop_bytes(gone);
            self.tail.extend(keep);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        let gone: Vec<u8> = self.tail.drain(..overflow).collect();
        self.drop_bytes(&gone);
        self.tail.extend(bytes);
    }

    fn drop_bytes(&mut self, bytes: &[u8]) {
        self.dropped.bytes += bytes.len() as u64;
        self.dropped.lines += bytes.iter().filter(|b| **b == b'\n').count() as u64;
    }

    /// Bytes dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.bytes
    }

    /// The captured text. When something was dropped, the head is cut back to its last line
    /// break and the tail starts after its first one (so neither shows half a line), unless
    /// that would leave it empty; a character split by the cut is dropped whole.
    pub fn finish(self) -> Captured {
        let OutputCapture {
            mut head,
            tail,
            mut dropped,
            ..
        } = self;
        let mut tail: Vec<u8> = tail.into();
        if dropped.bytes == 0 {
            head.extend_from_slice(&tail);
            return Captured {
                head: String::from_utf8_lossy(&head).into_owned(),
                ..Captured::default()
            };
        }
        let mut count = |gone: &[u8]| {
            dropped.bytes += gone.len() as u64;
            dropped.lines += gone.iter().filter(|b| **b == b'\n').count() as u64;
        };
        let head_end = match head.iter().rposition(|b| *b == b'\n') {
            Some(p) => p + 1,
            None => utf8_prefix(&head),
        };
        count(&head[head_end..]);
        head.truncate(head_end);
        let tail_start = match tail.iter().position(|b| *b == b'\n') {
            Some(p) if p + 1 < tail.len() => p + 1,
            _ => tail.iter().take_while(|b| (**b & 0xC0) == 0x80).count(),
        };
        count(&tail[..tail_start]);
        tail.drain(..tail_start);
        Captured {
            head: String::from_utf8_lossy(&head).into_owned(),
            tail: String::from_utf8_lossy(&tail).into_owned(),
            omitted: dropped,
        }
    }
}

/// Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence.
fn utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = OutputCapture::new(100);
        c.push(b"ab\n");
        c.push(b"cd");
        assert_eq!(c.dropped(), 0);
        assert_eq!(
            c.finish(),
            Captured {
                head: "ab\ncd".into(),
                ..Captured::default()
            }
        );
    }

    #[test]
    fn long_output_keeps_whole_first_and_last_lines_and_counts_the_middle() {
        let text: String = (1..=1000).map(|i| format!("line {i:04}\n")).collect();
        let mut c = OutputCapture::new(100);
        for chunk in text.as_bytes().chunks(7) {
            c.push(chunk);
        }
        let got = c.finish();
        assert!(got.head.starts_with("line 0001\n") && got.head.ends_with('\n'));
        assert!(got.tail.ends_with("line 1000\n"));
        assert!(got.tail.starts_with("line "), "{:?}", got.tail);
        let total = got.head.len() as u64 + got.omitted.bytes + got.tail.len() as u64;
        assert_eq!(total, text.len() as u64);
        let lines = |s: &str| s.matches('\n').count() as u64;
        assert_eq!(
            lines(&got.head) + got.omitted.lines + lines(&got.tail),
            1000
        );
    }

    #[test]
    fn one_long_line_is_cut_at_character_boundaries() {
        let mut c = OutputCapture::new(11);
        c.push("éééééééééééééééééééé".as_bytes());
        let got = c.finish();
        assert_eq!(got.head, "ééé");
        assert_eq!(got.tail, "éé");
        assert_eq!(got.omitted.bytes, 40 - 10);
    }

    #[test]
    fn lossy_utf8() {
        let mut c = OutputCapture::new(100);
        c.push(&[b'a', 0xff, b'b']);
        assert_eq!(c.finish().head, "a\u{fffd}b");
    }
}
