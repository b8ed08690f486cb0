//! Exact wire shapes of responses and events, and the framer against arbitrary splits.

use sayri_protocol::ndjson::{Frame, LineFramer, decode_request, encode_line};
use sayri_protocol::{ErrorCode, Event, ProtocolError, Response, ServerMessage};
use serde_json::{Map, Value, json};

#[test]
fn responses_and_events_have_the_documented_shapes() {
    let ok = encode_line(&Response::ok(json!("pong"), json!(1))).unwrap();
    assert_eq!(ok, b"{\"ok\":true,\"result\":\"pong\",\"id\":1}\n");
    let err = Response::err(
        ProtocolError::new(ErrorCode::NotImplemented, "later"),
        json!("a"),
    );
    assert_eq!(
        encode_line(&err).unwrap(),
        b"{\"ok\":false,\"error\":\"later\",\"code\":\"not_implemented\",\"id\":\"a\"}\n"
    );
    let mut p = Map::new();
    p.insert("delta".into(), json!("line1\nline2"));
    let ev = encode_line(&Event::new("assistant_delta", p)).unwrap();
    assert_eq!(
        ev,
        b"{\"event\":\"assistant_delta\",\"delta\":\"line1\\nline2\"}\n"
    );
    // Round trips through the client-side decoder.
    for line in [&ok[..], &encode_line(&err).unwrap(), &ev] {
        let m: ServerMessage = serde_json::from_slice(line).unwrap();
        match m {
            ServerMessage::Event(e) => assert_eq!(e.event, "assistant_delta"),
            ServerMessage::Response(r) => assert!(r.id() != &Value::Null),
        }
    }
    let unknown: Response =
        serde_json::from_str(r#"{"ok":false,"error":"x","code":"from_the_future","id":1}"#)
            .unwrap();
    assert_eq!(unknown.into_result().unwrap_err().code, ErrorCode::Other);
}

#[test]
fn every_split_of_a_stream_yields_the_same_lines() {
    let stream = "{\"cmd\":\"ping\",\"id\":1}\n{\"cmd\":\"ping\",\"params\":{\"t\":\"café ☕\"},\"id\":2}\r\n\n[1]\n".as_bytes();
    let mut expected = Vec::new();
    LineFramer::default().push(stream, &mut expected);
    assert_eq!(expected.len(), 4);
    for a in 0..stream.len() {
        for b in a..stream.len() {
            let mut f = LineFramer::default();
            let mut out = Vec::new();
            f.push(&stream[..a], &mut out);
            f.push(&stream[a..b], &mut out);
            f.push(&stream[b..], &mut out);
            assert_eq!(out, expected, "split at {a},{b}");
        }
    }
    let lines: Vec<_> = expected
        .iter()
        .map(|f| match f {
            Frame::Line(l) => decode_request(l),
            Frame::TooLong => unreachable!(),
        })
        .collect();
    assert_eq!(lines[1].clone().unwrap().unwrap().params["t"], "café ☕");
    assert!(lines[2].is_none());
    assert!(lines[3].clone().unwrap().is_err());
}
