//! First-byte and idle timeouts; SSE comments keep a slow stream alive.

use std::time::Duration;

use sayri_core::ports::ChatError;
use sayri_llm::{ClientConfig, OpenAiClient};
use sayri_testkit::{FakeLlm, Reply, Script, sse};

use super::common::{ask, config, error_of, run};

fn quick(url: &str) -> OpenAiClient {
    OpenAiClient::new(ClientConfig {
        first_byte_timeout: Duration::from_millis(600),
        idle_timeout: Duration::from_millis(600),
        ..config(url)
    })
    .unwrap()
}

#[tokio::test]
async fn first_byte_timeout() {
    let reply = Reply::sse(sse::content_stream(&["late"])).with_head_delay(Duration::from_secs(3));
    let server = FakeLlm::start(Script::repeat(reply)).await.unwrap();
    let err = error_of(&quick(&server.base_url())).await;
    assert!(
        matches!(err, ChatError::Timeout(ref m) if m.contains("provider.timeout")),
        "{err}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a slow model is not asked twice"
    );
}

#[tokio::test]
async fn idle_timeout_between_chunks() {
    let body = sse::content_stream(&["a", "b"]);
    let reply = Reply::sse(body)
        .with_event_writes()
        .stall_after(20, Duration::from_secs(3));
    let server = FakeLlm::start(Script::repeat(reply)).await.unwrap();
    let err = error_of(&quick(&server.base_url())).await;
    assert!(
        matches!(err, ChatError::Timeout(ref m) if m.contains("provider.idle_timeout")),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn keep_alive_comments_reset_the_idle_timer() {
    // 2.5 s of model silence broken by ": ping" every 250 ms; idle limit 1 s.
    let mut body = String::from(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"slow \"}}]}\r\n\r\n",
    );
    let mut bounds = vec![body.len()];
    for _ in 0..10 {
        body.push_str(": ping\r\n");
        bounds.push(body.len());
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n");
    let reply = Reply::sse(body.into_bytes())
        .with_boundaries(&bounds)
        .with_write_delay(Duration::from_millis(250));
    let server = FakeLlm::start(Script::repeat(reply)).await.unwrap();
    let c = OpenAiClient::new(ClientConfig {
        idle_timeout: Duration::from_secs(1),
        ..config(&server.base_url())
    })
    .unwrap();
    let t = std::time::Instant::now();
    let out = run(&c, ask("x")).await;
    assert!(
        t.elapsed() > Duration::from_secs(2),
        "the silence really lasted longer than the idle limit"
    );
    assert_eq!(out.error, None);
    assert_eq!(out.content, "slow answer");
}
