//! Output capture: stdout and stderr share one pipe, so their interleaving is the order the
//! command wrote them. The capture keeps the first `limit` bytes and counts the rest.

/// A bounded byte buffer that remembers how much it dropped.
#[derive(Debug)]
pub struct OutputCapture {
    buf: Vec<u8>,
    limit: usize,
    dropped: u64,
}

impl OutputCapture {
    /// A capture keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        OutputCapture {
            buf: Vec::with_capacity(limit.min(64 * 1024)),
            limit,
            dropped: 0,
        }
    }

    /// Appends `bytes`, keeping only what fits under the limit.
    pub fn push(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.buf.len());
        let take = room.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }

    /// Bytes dropped beyond the limit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The captured text (invalid UTF-8 replaced by U+FFFD), followed by
    /// `\n[truncated N bytes]` when anything was dropped.
    pub fn finish(self) -> String {
        let mut s = String::from_utf8_lossy(&self.buf).into_owned();
        if self.dropped > 0 {
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!("[truncated {} bytes]", self.dropped));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_marks_truncation() {
        let mut c = OutputCapture::new(4);
        c.push(b"ab");
        c.push(b"cdef");
        c.push(b"gh");
        assert_eq!(c.dropped(), 4);
        assert_eq!(c.finish(), "abcd\n[truncated 4 bytes]");
    }

    #[test]
    fn lossy_utf8() {
        let mut c = OutputCapture::new(100);
        c.push(&[b'a', 0xff, b'b']);
        assert_eq!(c.finish(), "a\u{fffd}b");
    }
}
