//! NDJSON framing: bytes ⇄ lines ⇄ messages, without I/O.
//!
//! Stream sockets have no message boundaries: one `read` may hold half a line, several lines, or
//! end inside a multi-byte UTF-8 character. [`LineFramer`] accumulates bytes and yields complete
//! `\n`-terminated lines whatever the read sizes (a trailing `\r` is dropped). A line longer than
//! [`MAX_LINE_BYTES`] is reported once as [`Frame::TooLong`] and discarded up to its `\n`, so
//! memory stays bounded at about one maximum line and the stream resynchronises on the next line.

use crate::message::{ErrorCode, ProtocolError, Request};
use serde::Serialize;
use serde_json::Value;

/// Longest accepted line: 1 MiB (1,048,576 bytes), excluding the `\n`.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One framing result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line exceeded the limit; its bytes are being discarded up to the next `\n`.
    TooLong,
}

/// Incremental splitter of a byte stream into lines, bounded by a maximum line length.
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    max: usize,
    discarding: bool,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl LineFramer {
    /// A framer accepting lines of at most `max` bytes (excluding `\n`).
    pub fn new(max: usize) -> Self {
        LineFramer {
            buf: Vec::new(),
            max,
            discarding: false,
        }
    }

    /// Bytes held for an unfinished line (never more than `max`).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feeds `data` (any split of the stream) and appends every completed frame to `out`.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<Frame>) {
        while !data.is_empty() {
            let newline = data.iter().position(|&b| b == b'\n');
            if self.discarding {
                match newline {
                    Some(i) => {
                        self.discarding = false;
                        data = &data[i + 1..];
                        continue;
                    }
                    None => return,
                }
            }
            match newline {
                Some(i) => {
                    if self.buf.len() + i > self.max {
                        self.buf.clear();
                        out.push(Frame::TooLong);
                    } else {
                        self.buf.extend_from_slice(&data[..i]);
                        let mut line = std::mem::take(&mut self.buf);
                        if line.last() == Some(&b'\r') {
                            line.pop();
                        }
                        out.push(Frame::Line(line));
                    }
                    data = &data[i + 1..];
                }
                None => {
                    if self.buf.len() + data.len() > self.max {
                        self.buf = Vec::new();
                        self.discarding = true;
                        out.push(Frame::TooLong);
                    } else {
                        self.buf.extend_from_slice(data);
                    }
                    return;
                }
            }
        }
    }
}

/// Serialises `msg` as one NDJSON line (JSON + `\n`). JSON never contains a raw newline, so the
/// result is always exactly one line.
///
/// Errors only if `msg`'s `Serialize` impl fails (never for this crate's types).
pub fn encode_line<T: Serialize>(msg: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut v = serde_json::to_vec(msg)?;
    v.push(b'\n');
    Ok(v)
}

/// A line that is not a valid request, with the `id` when it could be recovered (the line was a
/// JSON object with an `"id"` member), otherwise `null`.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// The error to answer with (`bad_request`).
    pub error: ProtocolError,
    /// The id to echo.
    pub id: Value,
}

/// Decodes one framed line into a request.
///
/// Returns `None` for an empty or all-whitespace line (ignored silently), `Some(Err(_))` for
/// invalid UTF-8, invalid JSON, a non-object, or a missing/non-string `cmd`.
pub fn decode_request(line: &[u8]) -> Option<Result<Request, BadLine>> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => t.trim(),
        Err(e) => {
            return Some(Err(bad(
                format!("request is not valid UTF-8 ({e}); send one UTF-8 JSON object per line"),
                Value::Null,
            )));
        }
    };
    if text.is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(bad(
                format!("request is not valid JSON ({e}); send one JSON object per line"),
                Value::Null,
            )));
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    if !value.is_object() {
        return Some(Err(bad(
            "request must be a JSON object like {\"cmd\":\"ping\",\"params\":{},\"id\":1}",
            id,
        )));
    }
    Some(serde_json::from_value::<Request>(value).map_err(|e| {
        bad(
            format!("invalid request: {e}; expected {{\"cmd\":NAME,\"params\":{{...}},\"id\":ID}}"),
            id,
        )
    }))
}

fn bad(msg: impl Into<String>, id: Value) -> BadLine {
    BadLine {
        error: ProtocolError::new(ErrorCode::BadRequest, msg),
        id,
    }
}

/// The error answered for a [`Frame::TooLong`] line.
pub fn line_too_long_error() -> ProtocolError {
    ProtocolError::new(
        ErrorCode::LineTooLong,
        format!(
            "request line longer than {MAX_LINE_BYTES} bytes (1 MiB) was discarded; send smaller requests"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(chunks: &[&[u8]], max: usize) -> Vec<Frame> {
        let mut f = LineFramer::new(max);
        let mut out = Vec::new();
        for c in chunks {
            f.push(c, &mut out);
        }
        out
    }

    #[test]
    fn splits_and_merges() {
        let out = frames(&[b"ab", b"c\nde\r\nf", b"\n"], 100);
        assert_eq!(
            out,
            vec![
                Frame::Line(b"abc".to_vec()),
                Frame::Line(b"de".to_vec()),
                Frame::Line(b"f".to_vec())
            ]
        );
    }

    #[test]
    fn too_long_resyncs_and_bounds_memory() {
        let mut f = LineFramer::new(4);
        let mut out = Vec::new();
        f.push(b"12345", &mut out);
        assert_eq!(out, vec![Frame::TooLong]);
        f.push(b"6789", &mut out);
        assert_eq!(f.buffered(), 0);
        f.push(b"0\nok\n", &mut out);
        assert_eq!(out, vec![Frame::TooLong, Frame::Line(b"ok".to_vec())]);
        // Exactly at the limit is accepted; one over is not.
        let out = frames(&[b"1234\n12345\n"], 4);
        assert_eq!(out, vec![Frame::Line(b"1234".to_vec()), Frame::TooLong]);
    }

    #[test]
    fn decode_rules() {
        assert!(decode_request(b"  ").is_none());
        let r = decode_request(br#"{"cmd":"ping"}"#).unwrap().unwrap();
        assert_eq!(r.params, serde_json::Map::new());
        assert_eq!(r.id, Value::Null);
        let r = decode_request(br#"{"cmd":"x","params":5,"id":"a"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(r.params.get("value"), Some(&Value::from(5)));
        let e = decode_request(br#"{"params":{},"id":7}"#)
            .unwrap()
            .unwrap_err();
        assert_eq!(e.id, Value::from(7));
        assert_eq!(e.error.code, ErrorCode::BadRequest);
        let e = decode_request(b"[1,2,3]").unwrap().unwrap_err();
        assert_eq!(e.id, Value::Null);
        let e = decode_request(b"{\"cmd\":").unwrap().unwrap_err();
        assert_eq!(e.id, Value::Null);
        let e = decode_request(b"\xff").unwrap().unwrap_err();
        assert_eq!(e.error.code, ErrorCode::BadRequest);
    }
}
