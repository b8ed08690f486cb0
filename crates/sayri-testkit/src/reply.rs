//! What the fake server answers: status, headers, body bytes and how they are delivered.

use std::time::Duration;

use serde_json::Value;

/// How the body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`; every write is one HTTP chunk. A cut leaves out the final
    /// `0\r\n\r\n`, so the client sees a broken body.
    Chunked,
    /// No length, `Connection: close`; the body ends when the server closes. A cut then looks
    /// like a clean end at the HTTP level, and only the SSE content can tell.
    CloseDelimited,
    /// `Content-Length` set; a cut makes the body short.
    Length,
}

/// One scripted HTTP response. Build with [`Reply::sse`], [`Reply::json`], [`Reply::text`]
/// and the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Extra response headers (`Content-Type` is one of them).
    pub headers: Vec<(String, String)>,
    /// The body, replayed byte for byte.
    pub body: Vec<u8>,
    /// Offsets into `body` where one write ends and the next begins (sorted, deduplicated).
    pub boundaries: Vec<usize>,
    /// Sleep between two writes.
    pub write_delay: Duration,
    /// Sleep before the status line (models "thinking" before the first byte).
    pub head_delay: Duration,
    /// Body framing.
    pub framing: Framing,
    /// Close the connection abruptly after this many body bytes.
    pub cut_after: Option<usize>,
    /// After this many body bytes, go silent for the given time (connection kept open).
    pub stall: Option<(usize, Duration)>,
}

impl Reply {
    /// `200 text/event-stream`, chunked, the bytes in one write.
    pub fn sse(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/event-stream".into()),
                ("Cache-Control".into(), "no-cache".into()),
            ],
            body: body.into(),
            boundaries: Vec::new(),
            write_delay: Duration::ZERO,
            head_delay: Duration::ZERO,
            framing: Framing::Chunked,
            cut_after: None,
            stall: None,
        }
    }

    /// A JSON body with `status` (`Content-Length` framing).
    pub fn json(status: u16, value: &Value) -> Reply {
        Reply::text(status, value.to_string()).with_header("Content-Type", "application/json")
    }

    /// A plain text body with `status` (`Content-Length` framing).
    pub fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
            body: body.into().into_bytes(),
            boundaries: Vec::new(),
            write_delay: Duration::ZERO,
            head_delay: Duration::ZERO,
            framing: Framing::Length,
            cut_after: None,
            stall: None,
        }
    }

    /// Adds or replaces a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Writes end at these body offsets (e.g. `[10, 11]` → three writes).
    pub fn with_boundaries(mut self, offsets: &[usize]) -> Reply {
        let mut b: Vec<usize> = offsets
            .iter()
            .copied()
            .filter(|&o| o > 0 && o < self.body.len())
            .collect();
        b.sort_unstable();
        b.dedup();
        self.boundaries = b;
        self
    }

    /// One write per `n` bytes.
    pub fn with_write_size(self, n: usize) -> Reply {
        let n = n.max(1);
        let offsets: Vec<usize> = (n..self.body.len()).step_by(n).collect();
        self.with_boundaries(&offsets)
    }

    /// Writes end after every SSE event (after each blank line, `\n\n` or `\r\n\r\n`).
    pub fn with_event_writes(self) -> Reply {
        let mut offsets = Vec::new();
        let b = &self.body;
        let mut i = 0;
        while i + 1 < b.len() {
            if b[i] == b'\n' && b[i + 1] == b'\n' {
                offsets.push(i + 2);
            } else if i + 3 < b.len() && &b[i..i + 4] == b"\r\n\r\n" {
                offsets.push(i + 4);
            }
            i += 1;
        }
        self.with_boundaries(&offsets)
    }

    /// Sleep between writes.
    pub fn with_write_delay(mut self, d: Duration) -> Reply {
        self.write_delay = d;
        self
    }

    /// Sleep before sending the status line.
    pub fn with_head_delay(mut self, d: Duration) -> Reply {
        self.head_delay = d;
        self
    }

    /// Framing of the body.
    pub fn with_framing(mut self, f: Framing) -> Reply {
        self.framing = f;
        self
    }

    /// Close the connection after `n` body bytes, without a proper end.
    pub fn cut_after(mut self, n: usize) -> Reply {
        self.cut_after = Some(n);
        self
    }

    /// Go silent for `d` after `n` body bytes.
    pub fn stall_after(mut self, n: usize, d: Duration) -> Reply {
        self.stall = Some((n, d));
        self
    }

    /// The body split into writes: boundaries, plus the cut and stall points.
    pub(crate) fn writes(&self) -> Vec<(usize, usize)> {
        let end = self
            .cut_after
            .map_or(self.body.len(), |c| c.min(self.body.len()));
        let mut cuts: Vec<usize> = self
            .boundaries
            .iter()
            .copied()
            .filter(|&o| o < end)
            .collect();
        if let Some((s, _)) = self.stall
            && s > 0
            && s < end
        {
            cuts.push(s);
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut out = Vec::new();
        let mut start = 0;
        for c in cuts.into_iter().chain(std::iter::once(end)) {
            if c > start || (c == 0 && end == 0) {
                out.push((start, c));
            }
            start = c;
        }
        out
    }
}
