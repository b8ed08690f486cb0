//! The gateway's delivery and polling against the loopback Bot API server over real HTTP:
//! formatting refused (sent again as plain text), `429` with `retry_after`, a reply Telegram
//! refuses (a short notice instead), and `409 Conflict` while polling (growing pauses).

use sayri_gateway_telegram::bot_api::BotApi;
use sayri_gateway_telegram::deliver::deliver;
use sayri_gateway_telegram::run::{Settings, run};
use sayri_testkit::telegram::{BotApiServer, Faults};
use std::time::Duration;

const TOKEN: &str = "4242:delivery-test";

async fn server(faults: Faults) -> (BotApiServer, BotApi) {
    let server = BotApiServer::start(TOKEN).await.unwrap();
    server.set_faults(faults);
    let api = BotApi::new(&server.base_url(), TOKEN).unwrap();
    (server, api)
}

#[tokio::test]
async fn a_part_refused_for_its_formatting_is_sent_once_more_as_plain_text() {
    let (server, api) = server(Faults {
        refuse_formatting: true,
        ..Faults::default()
    })
    .await;
    let parts = deliver(&api, "1001", "Backups are **done** at _noon_.")
        .await
        .unwrap();
    assert_eq!(parts, 1);
    let calls = server.calls_of("sendMessage");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].status, 400);
    assert!(calls[0].params.get("entities").is_some());
    assert_eq!(calls[1].status, 200);
    assert!(calls[1].params.get("entities").is_none(), "{:?}", calls[1]);
    let sent = server.messages_to("1001");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "Backups are done at noon.");
}

#[tokio::test]
async fn a_rate_limited_send_waits_retry_after_and_then_arrives() {
    let (server, api) = server(Faults {
        rate_limited: Some((1, 1)),
        ..Faults::default()
    })
    .await;
    deliver(&api, "1001", "hello").await.unwrap();
    let calls = server.calls_of("sendMessage");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].status, 429);
    assert_eq!(calls[1].status, 200);
    assert!(calls[1].at - calls[0].at >= Duration::from_millis(950));
    assert_eq!(server.messages_to("1001")[0].text, "hello");
}

#[tokio::test]
async fn a_reply_telegram_refuses_becomes_a_short_notice_and_an_error() {
    let (server, api) = server(Faults {
        max_text_chars: Some(200),
        ..Faults::default()
    })
    .await;
    let long = "word ".repeat(120);
    let e = deliver(&api, "1001", &long).await.unwrap_err();
    assert_eq!((e.delivered, e.parts), (0, 1), "{e:?}");
    assert!(
        e.error.contains("400") || e.error.contains("too long"),
        "{e:?}"
    );
    let sent = server.messages_to("1001");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].text.chars().count() < 200, "{:?}", sent[0].text);
    assert!(
        sent[0].text.contains("could not be delivered"),
        "{:?}",
        sent[0].text
    );
}

#[tokio::test]
async fn polling_pauses_longer_after_each_conflict() {
    let server = BotApiServer::start(TOKEN).await.unwrap();
    server.set_faults(Faults {
        conflicts: 3,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let gateway = tokio::spawn(run(Settings {
        api_base: server.base_url(),
        token: TOKEN.into(),
        socket: dir.path().join("sayri.sock"),
        instance_id: "tg".into(),
        poll_timeout: 1,
        typing_every: Duration::from_secs(4),
    }));
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
