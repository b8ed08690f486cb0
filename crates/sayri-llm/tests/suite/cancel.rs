//! Dropping the stream closes the connection at once.

use std::time::{Duration, Instant};

use futures::StreamExt;
use sayri_core::ports::{ChatEvent, ChatModel};
use sayri_llm::{ClientConfig, InlineThink, OpenAiClient};
use sayri_testkit::{FakeLlm, Reply, Script, sse};

use super::common::{ask, config};

#[tokio::test]
async fn dropping_the_stream_disconnects_the_server() {
    let deltas: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let reply = Reply::sse(sse::content_stream(&refs))
        .with_event_writes()
        .with_write_delay(Duration::from_millis(50));
    let server = FakeLlm::start(Script::repeat(reply)).await.unwrap();
    let c = OpenAiClient::new(ClientConfig {
        inline_think: InlineThink::Explicit,
        ..config(&server.base_url())
    })
    .unwrap();
    let mut stream = c.stream_chat(ask("x"));
    let mut got = 0;
    while let Some(ev) = stream.next().await {
        if let ChatEvent::Content(_) = ev.unwrap() {
            got += 1;
            if got == 3 {
                break;
            }
        }
    }
    assert!(server.disconnects().is_empty(), "still streaming");
    let dropped = Instant::now();
    drop(stream);
    let d = server
        .wait_for_disconnect(Duration::from_secs(2))
        .await
        .expect("server saw no disconnect");
    // Far less than the 10 s the full stream would take.
    assert!(dropped.elapsed() < Duration::from_secs(2));
    assert_eq!(d.request, 0);
    let total = sse::content_stream(&refs).len();
    assert!(
        d.body_bytes_sent < total / 2,
        "{} of {total} bytes sent",
        d.body_bytes_sent
    );
}
