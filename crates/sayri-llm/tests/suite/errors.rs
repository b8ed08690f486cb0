//! HTTP errors, retries, unreachable servers, and the API key redacted from every error text.

use std::time::Duration;

use sayri_core::ports::ChatError;
use sayri_llm::{ClientConfig, OpenAiClient};
use sayri_testkit::{FakeLlm, Reply, Script, sse};
use serde_json::json;

use super::common::{ask, client, config, error_of, run};

const KEY: &str = "sk-local-7Hq2Zr9Wm4Xa1Pb6";

#[tokio::test]
async fn key_echoed_in_401_body_never_leaves_the_client() {
    let reply = Reply::json(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error"}}),
    );
    let server = FakeLlm::start(Script::repeat(reply.clone())).await.unwrap();
    server.set_models_reply(reply);
    let c = OpenAiClient::new(ClientConfig {
        api_key: Some(KEY.into()),
        ..config(&server.base_url())
    })
    .unwrap();
    let out = run(&c, ask("x")).await;
    let err = out.error.expect("error");
    let shown = format!("{err} {err:?} {c:?}");
    assert!(!shown.contains("7Hq2Zr9Wm4Xa1Pb6"), "{shown}");
    assert!(shown.contains("$SECRET:PROVIDER_API_KEY"), "{shown}");
    assert!(matches!(err, ChatError::Http { status: 401, .. }));
    assert!(err.to_string().contains("provider.api_key"), "{err}");
    // The key did go to the server, as a Bearer token, and 401 is not retried.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // list_models redacts the same way.
    let err = c.list_models().await.unwrap_err();
    assert!(matches!(err, ChatError::Http { status: 401, .. }));
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains("7Hq2Zr9Wm4Xa1Pb6") && shown.contains("$SECRET:PROVIDER_API_KEY"),
        "{shown}"
    );
}

#[tokio::test]
async fn not_found_names_the_endpoint_and_the_fix() {
    let server = FakeLlm::start(Script::repeat(Reply::json(
        404,
        &json!({"error": "model 'nope' not found"}),
    )))
    .await
    .unwrap();
    let err = error_of(&client(&server.base_url())).await;
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP 404") && msg.contains("model 'nope' not found"),
        "{msg}"
    );
    assert!(msg.contains(&server.base_url()), "{msg}");
    assert_eq!(server.requests().len(), 1, "404 is not retried");
}

#[tokio::test]
async fn rate_limit_retries_after_retry_after_then_reports_it() {
    let limited = || Reply::text(429, "slow down").with_header("Retry-After", "1");
    let server = FakeLlm::start(Script::queue([limited(), limited(), limited()]))
        .await
        .unwrap();
    let c = OpenAiClient::new(ClientConfig {
        retries: 1,
        ..config(&server.base_url())
    })
    .unwrap();
    let t = std::time::Instant::now();
    let err = error_of(&c).await;
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "waited for Retry-After"
    );
    assert_eq!(server.requests().len(), 2, "1 try + 1 retry");
    match err {
        ChatError::Http {
            status: 429,
            retry_after: Some(1),
            ref message,
        } => {
            assert!(
                message.contains("retry after 1 s") && message.contains("slow down"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn long_retry_after_is_returned_not_waited() {
    let server = FakeLlm::start(Script::repeat(
        Reply::text(429, "quota").with_header("Retry-After", "3600"),
    ))
    .await
    .unwrap();
    let err = error_of(&client(&server.base_url())).await;
    assert!(matches!(
        err,
        ChatError::Http {
            status: 429,
            retry_after: Some(3600),
            ..
        }
    ));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_before_the_first_byte() {
    let server = FakeLlm::start(Script::queue([
        Reply::text(503, "loading model"),
        Reply::json(502, &json!({"message": "bad gateway"})),
        Reply::sse(sse::content_stream(&["ok"])),
    ]))
    .await
    .unwrap();
    let out = run(&client(&server.base_url()), ask("x")).await;
    assert_eq!((out.content.as_str(), out.error), ("ok", None));
    assert_eq!(server.requests().len(), 3);
    let bodies = server.chat_bodies();
    assert_eq!(bodies[0], bodies[2], "the same request is resent");
}

#[tokio::test]
async fn server_error_after_retries_is_short_and_useful() {
    let server = FakeLlm::start(Script::repeat(Reply::text(
        500,
        "<html>\n<h1>boom</h1></html>",
    )))
    .await
    .unwrap();
    let err = error_of(&client(&server.base_url())).await;
    assert_eq!(server.requests().len(), 3, "default: 2 retries");
    let msg = err.to_string();
    assert!(
        msg.starts_with("the model server failed (HTTP 500)") && !msg.contains('\n'),
        "{msg}"
    );
}

#[tokio::test]
async fn connection_refused_is_unreachable() {
    // Bind then drop to get a port with no listener.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let err = error_of(&client(&url)).await;
    assert_eq!(err, ChatError::Unreachable { url: url.clone() });
    // The engine appends what to do (which setting to change); the error itself states the fact.
    assert_eq!(err.to_string(), format!("no model server at {url}"));
    let err = client(&url).list_models().await.unwrap_err();
    assert!(matches!(err, ChatError::Unreachable { .. }));
}

#[tokio::test]
async fn no_retry_once_bytes_were_streamed() {
    // First reply streams a byte then breaks; a second reply would succeed if (wrongly) retried.
    let body = sse::content_stream(&["partial"]);
    let server = FakeLlm::start(Script::queue([
        Reply::sse(body.clone()).with_write_size(10).cut_after(12),
        Reply::sse(body),
    ]))
    .await
    .unwrap();
    let out = run(&client(&server.base_url()), ask("x")).await;
    assert_eq!(out.error, Some(ChatError::CutOff));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn empty_base_url_is_a_config_error() {
    let err = OpenAiClient::new(ClientConfig::new("  ")).unwrap_err();
    assert!(
        matches!(err, ChatError::Config(ref m) if m.contains("provider.base_url")),
        "{err}"
    );
}

#[tokio::test]
async fn tls_failure_is_not_blamed_on_a_stopped_server() {
    // A plain-TCP peer that answers a TLS ClientHello with HTTP text.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
        }
    });
    let url = format!("https://127.0.0.1:{port}/v1");
    let err = error_of(&client(&url)).await;
    assert!(
        matches!(err, ChatError::Other(ref m) if m.contains("could not connect") && m.contains("https")),
        "{err:?}"
    );
}

#[tokio::test]
async fn unknown_host_is_unreachable() {
    let err = error_of(&client("http://sayri-no-such-host.invalid/v1")).await;
    assert!(matches!(err, ChatError::Unreachable { .. }), "{err:?}");
}

/// Collects everything written by the tracing subscriber.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_never_reaches_the_logs() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let echo = format!("upstream said: bad key {KEY}; header was Authorization: Bearer {KEY}");
    let server = FakeLlm::start(Script::queue([
        Reply::text(503, echo.clone()),
        Reply::json(401, &json!({"error": {"message": echo}})),
    ]))
    .await
    .unwrap();
    let c = OpenAiClient::new(ClientConfig {
        api_key: Some(KEY.into()),
        ..config(&server.base_url())
    })
    .unwrap();
    let out = run(&c, ask("x")).await;
    assert!(matches!(
        out.error,
        Some(ChatError::Http { status: 401, .. })
    ));
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("retrying the model request"),
        "logs were captured: {logs}"
    );
    assert!(logs.contains("$SECRET:PROVIDER_API_KEY"), "{logs}");
    assert!(!logs.contains("7Hq2Zr9Wm4Xa1Pb6"), "{logs}");
}
