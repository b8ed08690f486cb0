//! The loopback Bot API server answers as Telegram documents: offsets confirm updates, long
//! polls wait, messages over 4096 UTF-16 units and bad entities are refused, every call is
//! recorded.

use sayri_testkit::telegram::{BotApiServer, Faults, updates};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "123:loopback";

async fn call(api: &BotApiServer, token: &str, method: &str, body: Value) -> (u16, Value) {
    let addr = api.base_url().trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let req = format!(
        "POST /bot{token}/{method} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    let text = String::from_utf8(all).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

#[tokio::test]
async fn updates_are_delivered_until_confirmed_and_long_polls_wait() {
    let api = BotApiServer::start(TOKEN).await.unwrap();
    let first = api.push_update(updates::private_message(1001, "Ada", "one"));
    api.push_update(updates::channel_post(-200, "news"));
    let (st, v) = call(&api, TOKEN, "getUpdates", json!({})).await;
    assert_eq!((st, v["result"].as_array().unwrap().len()), (200, 2));
    let (_, v) = call(
        &api,
        TOKEN,
        "getUpdates",
        json!({"offset": first + 1, "allowed_updates": ["message"]}),
    )
    .await;
    assert_eq!(v["result"], json!([]), "channel posts were not asked for");
    let t0 = Instant::now();
    let (_, v) = call(
        &api,
        TOKEN,
        "getUpdates",
        json!({"offset": first + 2, "timeout": 1}),
    )
    .await;
    assert_eq!(v["result"], json!([]));
    assert!(t0.elapsed() >= Duration::from_millis(900));
    assert_eq!(api.pending_updates(), 0);
    let (st, v) = call(&api, "999:wrong", "getMe", json!({})).await;
    assert_eq!((st, v["description"].as_str()), (401, Some("Unauthorized")));
    assert_eq!(api.calls().len(), 4);
}

#[tokio::test]
async fn send_message_enforces_the_limit_entities_and_markdown_v2() {
    let api = BotApiServer::start(TOKEN).await.unwrap();
    let send = |text: String, extra: Value| {
        let mut b = json!({"chat_id": 1001, "text": text});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        send("a".repeat(4096), json!({})),
    )
    .await;
    assert_eq!(st, 200);
    let (st, v) = call(
        &api,
        TOKEN,
        "sendMessage",
        send(format!("{}🙂", "a".repeat(4095)), json!({})),
    )
    .await;
    assert_eq!(
        (st, v["description"].as_str()),
        (400, Some("Bad Request: message is too long"))
    );
    // The limit applies after parsing: 4096 units of text plus markup is fine.
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        send(
            format!("*{}*", "b".repeat(4096)),
            json!({"parse_mode": "MarkdownV2"}),
        ),
    )
    .await;
    assert_eq!(st, 200);
    let (st, v) = call(
        &api,
        TOKEN,
        "sendMessage",
        send("Done.".into(), json!({"parse_mode": "MarkdownV2"})),
    )
    .await;
    assert_eq!(st, 400);
    assert!(
        v["description"]
            .as_str()
            .unwrap()
            .contains("Character '.' is reserved"),
        "{v}"
    );
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        send(
            "🙂x".into(),
            json!({"entities": [{"type": "bold", "offset": 1, "length": 2}]}),
        ),
    )
    .await;
    assert_eq!(st, 400, "an entity may not start inside a surrogate pair");
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        send(
            "🙂x".into(),
            json!({"entities": [{"type": "bold", "offset": 2, "length": 1}]}),
        ),
    )
    .await;
    assert_eq!(st, 200);
    let sent = api.messages_to("1001");
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1].entity_texts("bold"), ["b".repeat(4096)]);
    assert_eq!(sent[2].entity_texts("bold"), ["x"]);
}

#[tokio::test]
async fn faults_conflict_rate_limit_and_refusals() {
    let api = BotApiServer::start(TOKEN).await.unwrap();
    api.set_faults(Faults {
        conflicts: 1,
        rate_limited: Some((1, 3)),
        ..Faults::default()
    });
    let (st, _) = call(&api, TOKEN, "getUpdates", json!({})).await;
    assert_eq!(st, 409);
    let (st, _) = call(&api, TOKEN, "getUpdates", json!({})).await;
    assert_eq!(st, 200);
    let (st, v) = call(
        &api,
        TOKEN,
        "sendMessage",
        json!({"chat_id": 1, "text": "x"}),
    )
    .await;
    assert_eq!(
        (st, v["parameters"]["retry_after"].as_u64()),
        (429, Some(3))
    );
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        json!({"chat_id": 1, "text": "x"}),
    )
    .await;
    assert_eq!(st, 200);
    api.set_faults(Faults {
        max_text_chars: Some(200),
        ..Faults::default()
    });
    let (st, _) = call(
        &api,
        TOKEN,
        "sendMessage",
        json!({"chat_id": 1, "text": "y".repeat(201)}),
    )
    .await;
    assert_eq!(st, 400);
    let (st, _) = call(
        &api,
        TOKEN,
        "sendChatAction",
        json!({"chat_id": 1, "action": "typing"}),
    )
    .await;
    assert_eq!(st, 200);
}
