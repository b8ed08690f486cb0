//! NDJSON framing over the real socket: split/merged writes, UTF-8 split, CRLF, bad lines,
//! over-long lines (the recorded byte stream in `fixtures/ipc-partial-coalesced.*` and the 1 MiB
//! limit).

use super::support::*;
use serde_json::{Value, json};
use std::time::Duration;

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn partial_and_coalesced_writes_give_whole_ordered_responses() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let writes: Vec<Vec<u8>> = include_str!("../fixtures/ipc-partial-coalesced.writes.hex")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| hex_decode(l.trim()))
        .collect();
    assert_eq!(writes.len(), 7);
    assert_eq!(
        writes.concat(),
        include_bytes!("../fixtures/ipc-partial-coalesced.bin").to_vec()
    );
    for w in &writes {
        c.write(w);
        std::thread::sleep(Duration::from_millis(50));
    }
    let pong = |id: u64| format!("{{\"ok\":true,\"result\":\"pong\",\"id\":{id}}}\n");
    assert_eq!(c.read_response_raw(), pong(1));
    assert_eq!(c.read_response_raw(), pong(2), "UTF-8 split across writes");
    assert_eq!(c.read_response_raw(), pong(3), "CRLF tolerated");
    // The id-4 line lacks its closing brace: an error, not silence, and not a lost id 5.
    let broken = c.read_response();
    assert_eq!(broken["ok"], false);
    assert_eq!(broken["code"], "bad_request");
    assert_eq!(broken["id"], Value::Null);
    assert_eq!(c.read_response_raw(), pong(5));
    // The empty line gets nothing; `[1,2,3]` is not an object.
    let arr = c.read_response();
    assert_eq!(
        (arr["ok"].clone(), arr["code"].clone()),
        (json!(false), json!("bad_request"))
    );
    assert_eq!(c.read_response_raw(), pong(6));
    // The connection is still usable.
    assert_eq!(c.call("ping", json!({}), 7)["result"], "pong");
}

#[test]
fn one_byte_writes_still_frame() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    for b in "{\"cmd\":\"ping\",\"params\":{\"t\":\"żółć 🦀\"},\"id\":\"x\"}\n".bytes() {
        c.write(&[b]);
    }
    assert_eq!(
        c.read_response_raw(),
        "{\"ok\":true,\"result\":\"pong\",\"id\":\"x\"}\n"
    );
}

#[test]
fn bad_requests_are_answered_with_codes_and_recovered_ids() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.write(b"{\"cmd\":\n");
    let r = c.read_response();
    assert_eq!(
        (r["ok"].clone(), r["code"].clone(), r["id"].clone()),
        (json!(false), json!("bad_request"), Value::Null)
    );
    assert!(
        r["error"].as_str().unwrap().contains("not valid JSON"),
        "{r}"
    );
    c.write(b"{\"params\":{},\"id\":5}\n");
    let r = c.read_response();
    assert_eq!(
        (r["code"].clone(), r["id"].clone()),
        (json!("bad_request"), json!(5))
    );
    c.write(b"{\"cmd\":42,\"id\":\"s\"}\n");
    assert_eq!(c.read_response()["id"], "s");
    c.write(b"\xff\xfe\n");
    assert_eq!(c.read_response()["code"], "bad_request");
    let r = c.call("no_such_command", json!({}), 6);
    assert_eq!(r["code"], "unknown_command");
    assert!(r["error"].as_str().unwrap().contains("no_such_command"));
    // Every protocol command without a handler answers not_implemented, never crashes.
    let implemented: Vec<&str> = sayri_daemon::daemon::default_dispatcher()
        .commands()
        .map(|(c, ..)| c)
        .collect();
    for (i, name) in sayri_protocol::names::cmd::ALL.iter().enumerate() {
        if implemented.contains(name) {
            continue;
        }
        let r = c.call(name, json!({}), 100 + i as u64);
        assert_eq!(r["code"], "not_implemented", "{name}: {r}");
        assert_eq!(r["ok"], false);
    }
    let r = c.call("version", json!(null), 7);
    assert_eq!(
        r["result"]["protocol_version"],
        sayri_protocol::PROTOCOL_VERSION
    );
}

#[test]
fn line_over_one_mib_is_refused_and_the_stream_resynchronises() {
    let env = Env::new();
    let d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    // Exactly 1 MiB + 1 bytes before the newline.
    let head = "{\"cmd\":\"ping\",\"params\":{\"pad\":\"";
    let tail = "\"},\"id\":9}";
    let pad = 1024 * 1024 + 1 - head.len() - tail.len();
    let mut line = format!("{head}{}{tail}", "x".repeat(pad)).into_bytes();
    assert_eq!(line.len(), 1024 * 1024 + 1);
    line.extend_from_slice(b"\n{\"cmd\":\"ping\",\"id\":10}\n");
    c.write(&line);
    let r = c.read_response();
    assert_eq!(
        (r["ok"].clone(), r["code"].clone(), r["id"].clone()),
        (json!(false), json!("line_too_long"), Value::Null)
    );
    assert_eq!(
        c.read_response(),
        json!({"ok": true, "result": "pong", "id": 10})
    );

    // A line exactly at the limit is accepted.
    let tail = "\"},\"id\":11}";
    let pad = 1024 * 1024 - head.len() - tail.len();
    let line = format!("{head}{}{tail}\n", "y".repeat(pad));
    assert_eq!(line.len(), 1024 * 1024 + 1);
    c.write(line.as_bytes());
    assert_eq!(c.read_response()["id"], 11);

    // 64 MiB without a newline: one error, and memory does not follow the input.
    let before = d.rss_kib();
    let chunk = vec![b'z'; 1024 * 1024];
    for _ in 0..64 {
        c.write(&chunk);
    }
    c.write(b"\n");
    let r = c.read_response();
    assert_eq!(r["code"], "line_too_long");
    assert_eq!(c.call("ping", json!({}), 12)["result"], "pong");
    let after = d.rss_kib();
    assert!(
        after < before + 16 * 1024,
        "daemon RSS grew from {before} KiB to {after} KiB while receiving an unterminated 64 MiB line"
    );
}
