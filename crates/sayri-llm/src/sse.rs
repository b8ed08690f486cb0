//! Incremental Server-Sent Events (SSE) parser, per the WHATWG "event stream" grammar.
//!
//! Bytes go in as they arrive from the socket, in reads of any size; complete events come out.
//! Line terminators are `\r\n`, `\n` or a lone `\r` — a `\r` at the end of one read followed by
//! `\n` at the start of the next is one terminator. Lines are decoded as UTF-8 only once they are
//! complete, so a multi-byte character split across reads is never turned into U+FFFD. Lines
//! starting with `:` are comments (keep-alives) and are dropped. `data:` with or without one space
//! is accepted; several `data:` lines join with `\n`; a blank line dispatches the event, and a
//! blank line with no data dispatches nothing. `event:`, `id:` and `retry:` are kept.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, empty when absent (such an event has the type `message`).
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
    /// The last `id:` seen in the stream so far.
    pub id: String,
    /// A `retry:` value in milliseconds, when this event carried one.
    pub retry: Option<u64>,
}

/// Streaming SSE parser state. Feed bytes with [`SseParser::feed`], call
/// [`SseParser::finish`] at end of stream.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous read ended with `\r`: a leading `\n` in the next read belongs to it.
    after_cr: bool,
    /// Still at the very start of the stream (a UTF-8 BOM is skipped there).
    at_start: bool,
    data: String,
    has_data: bool,
    event: String,
    last_id: String,
    retry: Option<u64>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser {
            at_start: true,
            ..Default::default()
        }
    }

    /// Feeds one read of bytes and returns the events it completed, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut rest = bytes;
        if self.at_start {
            // Hold bytes until we know whether the stream begins with a BOM.
            self.line.extend_from_slice(rest);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return out;
            }
            self.at_start = false;
            let mut pending = std::mem::take(&mut self.line);
            if pending.starts_with(BOM) {
                pending.drain(..BOM.len());
            }
            return self.feed_owned(pending, out);
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(b'\n') = rest.first() {
                rest = &rest[1..];
            }
        }
        self.scan(rest, &mut out);
        out
    }

    fn feed_owned(&mut self, bytes: Vec<u8>, mut out: Vec<SseEvent>) -> Vec<SseEvent> {
        self.scan(&bytes, &mut out);
        out
    }

    fn scan(&mut self, mut rest: &[u8], out: &mut Vec<SseEvent>) {
        while let Some(pos) = rest.iter().position(|&b| b == b'\r' || b == b'\n') {
            self.line.extend_from_slice(&rest[..pos]);
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.process_line(&line) {
                out.push(event);
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// Ends the stream. An event not closed by a blank line is discarded (as every SSE client
    /// does); returns `true` when such an incomplete event (or a partial line) was pending, which
    /// callers use to tell a cut-off stream from a clean end.
    pub fn finish(&mut self) -> bool {
        let pending = !self.line.is_empty() || self.has_data;
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.event.clear();
        self.retry = None;
        pending
    }

    fn process_line(&mut self, raw: &[u8]) -> Option<SseEvent> {
        if raw.is_empty() {
            return self.dispatch();
        }
        if raw[0] == b':' {
            return None; // comment / keep-alive
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            "id" if !value.contains('\0') => self.last_id = value.to_string(),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {} // unknown fields are ignored
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let retry = self.retry.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` split at the given byte offsets and returns all events.
    fn feed_split(input: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            events.extend(parser.feed(&input[start..cut]));
            start = cut;
        }
        events
    }

    fn datas(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn data_with_and_without_space() {
        let ev = feed_split(b"data:a\n\ndata: b\n\ndata:  c\n\n", &[]);
        assert_eq!(datas(&ev), ["a", "b", " c"]);
    }

    #[test]
    fn lf_crlf_and_lone_cr_terminators() {
        let ev = feed_split(
            b"data: lf\n\ndata: crlf\r\n\r\ndata: cr\r\rdata: mix\r\n\n",
            &[],
        );
        assert_eq!(datas(&ev), ["lf", "crlf", "cr", "mix"]);
    }

    #[test]
    fn crlf_split_across_reads_is_one_terminator() {
        let input = b"data: a\r\n\r\ndata: b\r\n\r\n";
        for cut in 0..=input.len() {
            let ev = feed_split(input, &[cut]);
            assert_eq!(datas(&ev), ["a", "b"], "cut at {cut}");
        }
    }

    #[test]
    fn cr_at_end_of_read_then_data_is_not_swallowed() {
        // "\r" ends the read; the next read starts a new line that is not "\n".
        let ev = feed_split(b"data: a\r\rdata: b\r\r", &[8]);
        assert_eq!(datas(&ev), ["a", "b"]);
    }

    #[test]
    fn every_single_byte_boundary() {
        let input = b": hi\r\nevent: x\r\nid: 7\r\nretry: 1500\r\ndata: one\r\ndata: two\r\n\r\ndata: \xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80\n\n";
        let cuts: Vec<usize> = (1..input.len()).collect();
        let ev = feed_split(input, &cuts);
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].event, "x");
        assert_eq!(ev[0].id, "7");
        assert_eq!(ev[0].retry, Some(1500));
        assert_eq!(ev[0].data, "one\ntwo");
        assert_eq!(ev[1].data, "été 😀");
        assert_eq!(ev[1].id, "7", "last event id persists");
        assert_eq!(ev[1].retry, None);
        assert!(!ev[1].data.contains('\u{FFFD}'));
    }

    #[test]
    fn multibyte_char_split_inside_a_read_pair() {
        let input = "data: {\"c\":\"日本\"}\n\n".as_bytes();
        // Split inside the 3-byte sequence of 日.
        let pos = input.iter().position(|&b| b == 0xE6).unwrap() + 1;
        let ev = feed_split(input, &[pos]);
        assert_eq!(datas(&ev), ["{\"c\":\"日本\"}"]);
    }

    #[test]
    fn comments_never_dispatch_and_do_not_end_events() {
        let ev = feed_split(
            b": ping\n\n:keepalive\ndata: a\n: in between\ndata: b\n\n",
            &[],
        );
        assert_eq!(datas(&ev), ["a\nb"]);
    }

    #[test]
    fn blank_data_lines_are_kept_as_empty_lines() {
        let ev = feed_split(b"data:\n\ndata\n\ndata: x\ndata:\n\n", &[]);
        assert_eq!(datas(&ev), ["", "", "x\n"]);
    }

    #[test]
    fn several_events_in_one_read_and_one_event_across_many() {
        let ev = feed_split(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", &[]);
        assert_eq!(datas(&ev), ["1", "2", "3"]);
        let input = b"data: {\"long\": \"value\"}\n\n";
        let ev = feed_split(input, &[1, 3, 5, 9, 14, 20]);
        assert_eq!(datas(&ev), ["{\"long\": \"value\"}"]);
    }

    #[test]
    fn bom_at_start_is_skipped_even_when_split() {
        let input = b"\xEF\xBB\xBFdata: a\n\n";
        for cut in 0..4 {
            assert_eq!(datas(&feed_split(input, &[cut])), ["a"], "cut {cut}");
        }
    }

    #[test]
    fn finish_reports_an_unterminated_event() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: a\n").is_empty());
        assert!(p.finish());
        let mut p = SseParser::new();
        assert_eq!(p.feed(b"data: a\n\n").len(), 1);
        assert!(!p.finish());
    }

    #[test]
    fn comments_crlf_fixture_parses_at_its_recorded_read_boundaries() {
        let hex = include_str!("../tests/fixtures/sse-comments-crlf.chunks.hex");
        let reads: Vec<Vec<u8>> = hex.lines().map(|l| decode_hex(l.trim())).collect();
        assert_eq!(reads.len(), 2);
        assert_eq!(*reads[0].last().unwrap(), b'\r');
        let mut p = SseParser::new();
        let mut ev = p.feed(&reads[0]);
        assert!(
            ev.is_empty(),
            "event 2 completes only with its blank line in read 2"
        );
        ev.extend(p.feed(&reads[1]));
        assert_eq!(ev.len(), 4);
        assert!(ev[0].data.contains("\"Hel\""));
        assert!(ev[1].data.contains("\"lo\""));
        assert!(ev[2].data.contains("\"stop\""));
        assert_eq!(ev[3].data, "[DONE]");
    }

    fn decode_hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn line_end() -> impl Strategy<Value = &'static str> {
            prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
        }

        proptest! {
            /// Any stream of events, any line endings, any read boundaries: the same events.
            #[test]
            fn read_boundaries_never_change_the_events(
                datas in proptest::collection::vec("[a-zé日😀 :{}\"]{0,12}", 1..6),
                ends in proptest::collection::vec(line_end(), 12),
                comment in any::<bool>(),
                cuts in proptest::collection::vec(0usize..400, 0..8),
            ) {
                let mut text = String::new();
                for (k, d) in datas.iter().enumerate() {
                    let e1 = ends[(2 * k) % ends.len()];
                    let mut e2 = ends[(2 * k + 1) % ends.len()];
                    if e1 == "\r" && e2 == "\n" {
                        e2 = "\r"; // "\r" + "\n" would be one terminator, not two
                    }
                    if comment {
                        text.push_str(": ping");
                        text.push_str(e1);
                    }
                    text.push_str("data:");
                    text.push_str(d);
                    text.push_str(e1);
                    text.push_str(e2);
                }
                let bytes = text.as_bytes();
                let whole = feed_split(bytes, &[]);
                let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= bytes.len()).collect();
                cuts.sort_unstable();
                let split = feed_split(bytes, &cuts);
                prop_assert_eq!(&whole, &split);
                let got: Vec<String> = whole.iter().map(|e| e.data.clone()).collect();
                // "data:x" strips no space; "data: x" strips one.
                let want: Vec<String> = datas.iter().map(|d| d.strip_prefix(' ').unwrap_or(d).to_string()).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
