//! The gateway's delivery and polling against the loopback Bot API server over real HTTP, with
//! a loopback daemon on a Unix socket speaking the legacy wire (it answers every message and
//! records every report): formatting refused (sent again as plain text), `429` with and without
//! `retry_after` (waits from the parameters, else doubling; the limited chat never gets a
//! notice), a reply Telegram refuses (a short notice and a report), a reply pending when the
//! gateway stops (delivered once by the next run from its outbox), and `409 Conflict` while
//! polling (growing pauses).

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sayri_gateway_telegram::bot_api::BotApi;
use sayri_gateway_telegram::deliver::deliver_from;
use sayri_gateway_telegram::run::{Settings, run};
use sayri_protocol::legacy::ReplyEvent;
use sayri_testkit::telegram::{BotApiServer, Faults, updates};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const TOKEN: &str = "4242:delivery-test";
const CHAT: &str = "1001";

async fn server(faults: Faults) -> (BotApiServer, BotApi) {
    let server = BotApiServer::start(TOKEN).await.unwrap();
    server.set_faults(faults);
    let api = BotApi::new(&server.base_url(), TOKEN).unwrap();
    (server, api)
}

/// A loopback daemon: answers every `INCOMING_MSG` with `reply` (counting them) and records
/// every `GATEWAY_REPORT`.
#[derive(Clone, Default)]
struct FakeDaemon {
    asked: Arc<Mutex<Vec<Value>>>,
    reports: Arc<Mutex<Vec<Value>>>,
}

impl FakeDaemon {
    fn serve(socket: &Path, reply: &str) -> FakeDaemon {
        let listener = tokio::net::UnixListener::bind(socket).unwrap();
        let d = FakeDaemon::default();
        let (me, reply) = (d.clone(), reply.to_string());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (me, reply) = (me.clone(), reply.clone());
                tokio::spawn(async move {
                    let mut s = BufReader::new(stream);
                    let mut line = String::new();
                    if s.read_line(&mut line).await.is_err() {
                        return;
                    }
                    let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    let answer = if v["type"] == "GATEWAY_REPORT" {
                        me.reports.lock().unwrap().push(v);
                        b"{\"ok\":true}\n".to_vec()
                    } else {
                        me.asked.lock().unwrap().push(v);
                        ReplyEvent::done(reply).to_line()
                    };
                    let _ = s.get_mut().write_all(&answer).await;
                });
            }
        });
        d
    }

    fn reports(&self, kind: &str) -> Vec<Value> {
        self.reports
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r["report"] == kind)
            .cloned()
            .collect()
    }
}

fn settings(server: &BotApiServer, dir: &Path) -> Settings {
    Settings {
        api_base: server.base_url(),
        token: TOKEN.into(),
        socket: dir.join("sayri.sock"),
        instance_id: "tg".into(),
        poll_timeout: 1,
        typing_every: Duration::from_secs(4),
        state_dir: Some(dir.join("outbox")),
    }
}

async fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f()
}

fn outbox_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("outbox"))
        .map(|r| r.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_part_refused_for_its_formatting_is_sent_once_more_as_plain_text() {
    let (server, api) = server(Faults {
        refuse_formatting: true,
        ..Faults::default()
    })
    .await;
    let parts = deliver_from(&api, CHAT, "Backups are **done** at _noon_.", 0, |_| {})
        .await
        .unwrap();
    assert_eq!(parts, 1);
    let calls = server.calls_of("sendMessage");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].status, 400);
    assert!(calls[0].params.get("entities").is_some());
    assert_eq!(calls[1].status, 200);
    assert!(calls[1].params.get("entities").is_none(), "{:?}", calls[1]);
    let sent = server.messages_to(CHAT);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "Backups are done at noon.");
}

#[tokio::test]
async fn a_429_without_retry_after_waits_doubling_pauses_shown_in_the_outbox_and_no_notice() {
    let (server, _) = server(Faults {
        rate_limited_plain: Some((2, "Too Many Requests".into())),
        ..Faults::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let daemon = FakeDaemon::serve(&dir.path().join("sayri.sock"), "It is noon.");
    let gateway = tokio::spawn(run(settings(&server, dir.path())));
    server.push_update(updates::private_message(1001, "Ada", "what time is it?"));
    let arrived = wait_for(Duration::from_secs(20), || {
        !server.messages_to(CHAT).is_empty()
    })
    .await;
    assert!(arrived, "{:?}", server.calls_of("sendMessage"));
    let calls = server.calls_of("sendMessage");
    assert_eq!(
        calls.iter().map(|c| c.status).collect::<Vec<_>>(),
        [429, 429, 200]
    );
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[0] >= Duration::from_millis(1950), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(3950), "{gaps:?}");
    let sent = server.messages_to(CHAT);
    assert_eq!(
        sent.len(),
        1,
        "a notice went into the limited chat: {sent:?}"
    );
    assert_eq!(sent[0].text, "It is noon.");
    // The wait was visible: a report with the reply pending and its next attempt.
    let pending: Vec<Value> = daemon
        .reports("outbox")
        .into_iter()
        .filter(|r| r["pending"] == 1 && r["next_retry_at"].is_number())
        .collect();
    assert!(!pending.is_empty(), "{:?}", daemon.reports("outbox"));
    assert!(
        wait_for(Duration::from_secs(5), || daemon
            .reports("outbox")
            .last()
            .is_some_and(|r| r["pending"] == 0))
        .await
    );
    assert!(outbox_files(dir.path()).is_empty());
    gateway.abort();
}

#[tokio::test]
async fn a_reply_given_up_in_a_rate_limited_chat_gets_no_notice_and_the_daemon_is_told() {
    let (server, _) = server(Faults {
        // A flood wait of a day: not honoured.
        rate_limited: Some((5, 86_400)),
        ..Faults::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let daemon = FakeDaemon::serve(&dir.path().join("sayri.sock"), "It is noon.");
    let gateway = tokio::spawn(run(settings(&server, dir.path())));
    server.push_update(updates::private_message(1001, "Ada", "what time is it?"));
    let told = wait_for(Duration::from_secs(20), || {
        !daemon.reports("delivery_failed").is_empty()
    })
    .await;
    assert!(told);
    let report = daemon.reports("delivery_failed")[0].clone();
    assert_eq!(report["chat_id"], CHAT);
    assert!(
        report["error"].as_str().unwrap().contains("429"),
        "{report}"
    );
    assert_eq!(
        server.calls_of("sendMessage").len(),
        1,
        "retried or noticed"
    );
    assert!(server.messages_to(CHAT).is_empty());
    gateway.abort();
}

#[tokio::test]
async fn a_reply_telegram_refuses_becomes_a_short_notice_and_a_report() {
    let (server, _) = server(Faults {
        max_text_chars: Some(200),
        ..Faults::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let daemon = FakeDaemon::serve(&dir.path().join("sayri.sock"), &"word ".repeat(120));
    let gateway = tokio::spawn(run(settings(&server, dir.path())));
    server.push_update(updates::private_message(1001, "Ada", "write a lot"));
    assert!(
        wait_for(Duration::from_secs(20), || !daemon
            .reports("delivery_failed")
            .is_empty())
        .await
    );
    let e = daemon.reports("delivery_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.contains("too long") && e.contains("stopped after 0"),
        "{e}"
    );
    let sent = server.messages_to(CHAT);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].text.chars().count() < 200, "{:?}", sent[0].text);
    assert!(
        sent[0].text.contains("could not be delivered"),
        "{:?}",
        sent[0].text
    );
    gateway.abort();
}

fn wait_sync(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// The gateway in a runtime of its own, so that dropping it stops every task it started at
/// once, as a killed process would.
fn gateway_runtime(s: Settings) -> tokio::runtime::Runtime {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.spawn(run(s));
    rt
}

#[test]
fn a_reply_pending_when_the_gateway_stops_is_delivered_once_by_the_next_run() {
    let main = tokio::runtime::Runtime::new().unwrap();
    let (server, _) = main.block_on(server(Faults {
        rate_limited: Some((1, 3)),
        ..Faults::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let daemon =
        main.block_on(async { FakeDaemon::serve(&dir.path().join("sayri.sock"), "It is sunny.") });
    let first = gateway_runtime(settings(&server, dir.path()));
    server.push_update(updates::private_message(1001, "Ada", "weather?"));
    assert!(wait_sync(Duration::from_secs(20), || server
        .calls_of("sendMessage")
        .iter()
        .any(|c| c.status == 429)));
    // Stopped the hard way: no task of it runs after this (no acknowledgement, no clean-up).
    first.shutdown_background();
    assert_eq!(
        outbox_files(dir.path()).len(),
        1,
        "the pending reply is on disk"
    );
    let second = gateway_runtime(settings(&server, dir.path()));
    assert!(wait_sync(Duration::from_secs(20), || !server
        .messages_to(CHAT)
        .is_empty()));
    std::thread::sleep(Duration::from_secs(2));
    let sent = server.messages_to(CHAT);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "It is sunny.");
    // The reply was known: the daemon was asked once, not again after the restart.
    assert_eq!(daemon.asked.lock().unwrap().len(), 1);
    let asked = daemon.asked.lock().unwrap()[0].clone();
    assert!(asked["update_id"].is_string(), "{asked}");
    assert!(outbox_files(dir.path()).is_empty());
    second.shutdown_background();
}

#[tokio::test]
async fn polling_pauses_longer_after_each_conflict() {
    let server = BotApiServer::start(TOKEN).await.unwrap();
    server.set_faults(Faults {
        conflicts: 3,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let gateway = tokio::spawn(run(settings(&server, dir.path())));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while server.calls_of("getUpdates").len() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gateway.abort();
    let calls = server.calls_of("getUpdates");
    assert!(calls.len() >= 4, "{calls:?}");
    assert!(calls[..3].iter().all(|c| c.status == 409), "{calls:?}");
    let gaps: Vec<Duration> = calls
        .windows(2)
        .take(3)
        .map(|w| w[1].at - w[0].at)
        .collect();
    assert!(gaps[0] >= Duration::from_millis(950), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(1950), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(3950), "{gaps:?}");
}

#[tokio::test]
async fn a_bot_api_answer_that_never_ends_is_refused_at_its_cap_not_read_into_memory() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(Mutex::new(0usize));
    let counted = sent.clone();
    tokio::spawn(async move {
        let Ok((s, _)) = listener.accept().await else {
            return;
        };
        let mut s = BufReader::new(s);
        let mut line = String::new();
        while s.read_line(&mut line).await.is_ok_and(|n| n > 0) && line != "\r\n" {
            line.clear();
        }
        let mut s = s.into_inner();
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        let chunk = [b' '; 0x10000];
        loop {
            let ok = s.write_all(b"10000\r\n").await.is_ok()
                && s.write_all(&chunk).await.is_ok()
                && s.write_all(b"\r\n").await.is_ok();
            if !ok {
                return;
            }
            *counted.lock().unwrap() += chunk.len();
        }
    });
    let api = BotApi::new(&base, "123:abc").unwrap();
    let e = api
        .call(
            "getUpdates",
            &serde_json::json!({}),
            Duration::from_secs(60),
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("getUpdates: the answer is longer than 16 MiB; refused"),
        "{e}"
    );
    let written = *sent.lock().unwrap();
    assert!(
        written < 64 << 20,
        "stopped reading soon after the cap ({written} bytes sent)"
    );
}
