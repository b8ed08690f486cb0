//! A hostile model against the real daemon: floods of code blocks or tool calls, an endless
//! keep-alive stream, NUL bytes and invalid UTF-8, and an answer over 1 MiB. Nothing runs that
//! should not, `interrupt` always ends the turn, and the daemon keeps answering.

use super::scripted_turns::*;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::json;
use std::time::Duration;

/// A reply of 1 MiB of prose, a first block holding a 15 KiB command (just under the 16 KiB a
/// card may show) and 10 000 more blocks: one card (for the first block only), `interrupt`
/// settles it, nothing runs, and a late answer to the settled card is not delivered.
#[test]
fn a_flood_reply_raises_one_card_and_interrupt_settles_it_without_running() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let mut text = "Sure. ".repeat((1 << 20) / 6);
    text.push_str(&format!("\n```bash\ntouch {} # ", marker.display()));
    text.push_str(&"A".repeat(15 * 1024));
    text.push_str("\n```\n~~~bash\ntouch x\n~~~\r\n```bash\r\ntouch y\r\n```\r\n");
    for i in 0..10_000 {
        text.push_str(&format!("```bash\necho {i}\n```\n"));
    }
    text.push_str("```bash\nunterminated");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&text]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let d = env.start_daemon();
    let (mut c, id) = ask_until_card(&env, "go", 20, "a card for the first block");
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("interrupt", json!({}), 9);
    assert_eq!(r["result"]["interrupted"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert!(resp["result"]["error"].is_string(), "{resp}");
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true}),
        10,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    let r = o.call("permission_list", json!({}), 11);
    assert_eq!(r["result"]["pending"], json!([]), "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "nothing may run after an interrupt");
    eprintln!("daemon RSS after the flood: {} KiB", d.rss_kib());
}

/// A model that sends nothing but SSE comments (keep-alives) forever: `interrupt` still ends
/// the turn, and the daemon drops the model connection.
#[test]
fn interrupt_ends_an_endless_keep_alive_stream() {
    let body = ": keep-alive\n\n".repeat(100_000);
    let model = start_model(vec![
        Reply::sse(body)
            .with_write_size(14)
            .with_write_delay(Duration::from_millis(5)),
    ]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    send_ask(&mut c, "go", 1);
    wait_event(&mut c, "user", Duration::from_secs(10)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("interrupt", json!({}), 9);
    assert_eq!(r["result"]["interrupted"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert!(resp["result"]["error"].is_string(), "{resp}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let gone = rt.block_on(model.llm.wait_for_disconnect(Duration::from_secs(5)));
    assert!(gone.is_some(), "the model connection was left open");
}

/// A `tool_calls` flood, a command with a NUL byte, and invalid UTF-8 in content: nothing
/// runs, the daemon keeps answering.
#[test]
fn tool_call_flood_nul_command_and_invalid_utf8_run_nothing() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let mut flood = Vec::new();
    for i in 0..20_000 {
        let c = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("c{i}"),"type":"function","function":{"name":"bash","arguments":format!("{{\"cmd\":\"touch {}\"}}", marker.display())}}]},"finish_reason":null}]});
        flood.extend_from_slice(sse::data_event(&c).as_bytes());
    }
    flood.extend_from_slice(&sse::content_stream(&["flooded"]));
    let nul = format!("```bash\ntouch {}\u{0}\n```\n", marker.display());
    let mut bad =
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe bad\"}}]}\n\n"
            .to_vec();
    bad.extend_from_slice(&sse::content_stream(&[" end"]));
    let model = start_model(vec![
        Reply::sse(flood),
        Reply::sse(sse::content_stream(&[&nul])),
        Reply::sse(bad),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let r = c.call("ask", json!({"text": "one", "timeout": 20}), 1);
    assert_eq!(r["result"]["text"], "flooded", "{r}");
    let r = c.call("ask", json!({"text": "two", "timeout": 20}), 2);
    assert_eq!(r["ok"], true, "{r}");
    assert!(!ran(&marker), "no tool call and no NUL-cut command may run");
    let r = c.call("ping", json!({}), 3);
    assert_eq!(r["ok"], true, "{r}");
}

/// A model answer larger than the 1 MiB request-line limit still reaches `sayri ask`: the
/// daemon's own lines to its client are not bound by the limit on requests.
#[test]
fn sayri_ask_prints_an_answer_larger_than_one_mib() {
    let big = "word ".repeat(300_000);
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&big]))]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let o = env.run(&["ask", "--timeout", "30", "talk a lot"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).trim_end().len() >= big.trim_end().len(),
        "{} bytes",
        stdout(&o).len()
    );
}
