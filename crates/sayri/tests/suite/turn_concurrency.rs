//! Many clients around one running turn: one turn at a time (the others are told `busy`), and a
//! client that connects while a turn streams still gets `ready` first.

use super::scripted_turns::*;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// 100 clients ask at once: exactly one turn runs, every other client gets a prompt answer
/// (busy), nobody hangs.
#[test]
fn a_hundred_concurrent_asks_get_one_turn_and_ninety_nine_busy_answers() {
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["slow"])).with_head_delay(Duration::from_secs(2)),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let d = env.start_daemon();
    let sock = env.socket();
    // Connected first: a client that connects while a turn runs may see a broadcast event
    // before its `ready` greeting (reported separately), which `RawClient` treats as an error.
    let barrier = Arc::new(std::sync::Barrier::new(100));
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let sock = sock.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = RawClient::connect(&sock);
                barrier.wait();
                c.writer
                    .set_read_timeout(Some(Duration::from_secs(20)))
                    .ok();
                c.call("ask", json!({"text": format!("q{i}"), "timeout": 10}), 1)
            })
        })
        .collect();
    let rs: Vec<Value> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let ok: Vec<_> = rs.iter().filter(|r| r["ok"] == true).collect();
    assert_eq!(ok.len(), 1, "{ok:?}");
    assert_eq!(ok[0]["result"]["text"], "slow");
    for r in rs.iter().filter(|r| r["ok"] != true) {
        assert!(r.to_string().to_lowercase().contains("busy"), "{r}");
    }
    eprintln!("RSS {} KiB, {} fds", d.rss_kib(), d.fd_count());
}

/// Clients that connect while a turn streams events still get `ready` as their first line
/// (before the fix a broadcast such as a delta or a `hint` could come first).
#[test]
fn ready_is_the_first_line_even_while_a_turn_streams() {
    let deltas: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&refs))
            .with_event_writes()
            .with_write_delay(Duration::from_millis(5)),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    send_ask(&mut c, "stream", 1);
    wait_event(&mut c, "assistant_delta", Duration::from_secs(10)).unwrap();
    // A second client keeps asking: each refused ask broadcasts a `hint` to every client.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spam = {
        let stop = stop.clone();
        let socket = env.socket();
        std::thread::spawn(move || {
            let mut b = RawClient::connect(&socket);
            let mut id = 100;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                id += 1;
                b.call("ask", json!({"text": "again"}), id);
            }
        })
    };
    // The asking client keeps reading, so it is never dropped as a slow consumer.
    let asker = std::thread::spawn(move || wait_response(&mut c, 1).0);
    let mut firsts = Vec::new();
    for _ in 0..150 {
        let s = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(s), &mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        firsts.push(v["event"].as_str().unwrap_or("").to_string());
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spam.join().unwrap();
    let resp = asker.join().unwrap();
    assert_eq!(resp["ok"], true, "{resp}");
    let wrong: Vec<_> = firsts.iter().filter(|e| *e != "ready").collect();
    assert!(
        wrong.is_empty(),
        "first lines that were not `ready`: {wrong:?}"
    );
}
