//! The server replays bytes exactly, records requests and notices disconnects.

use std::time::Duration;

use sayri_testkit::{FakeLlm, Framing, Reply, Script, sse};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn post(server: &FakeLlm, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s
}

/// Reads until EOF, returning each read separately.
async fn reads(s: &mut TcpStream) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            return out;
        }
        out.push(buf[..n].to_vec());
    }
}

fn split_head(all: &[u8]) -> (String, Vec<u8>) {
    let p = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&all[..p]).to_string(),
        all[p + 4..].to_vec(),
    )
}

#[tokio::test]
async fn chunked_replay_is_byte_exact_with_the_chosen_writes() {
    let body = b"data: a\r\n\r\ndata: b\n\n".to_vec();
    let reply = Reply::sse(body.clone())
        .with_boundaries(&[10, 11])
        .with_write_delay(Duration::from_millis(60));
    let server = FakeLlm::start(Script::queue([reply])).await.unwrap();
    let mut s = post(&server, r#"{"model":"m"}"#).await;
    let got = reads(&mut s).await;
    let all = got.concat();
    let (head, wire) = split_head(&all);
    assert!(head.starts_with("HTTP/1.1 200 OK"));
    assert!(head.contains("Transfer-Encoding: chunked"));
    let want = [
        b"a\r\ndata: a\r\n\r\r\n".to_vec(),
        b"1\r\n\n\r\n".to_vec(),
        b"9\r\ndata: b\n\n\r\n".to_vec(),
        b"0\r\n\r\n".to_vec(),
    ]
    .concat();
    assert_eq!(wire, want);
    // With 60 ms between writes the client sees them as separate reads.
    assert!(got.len() >= 3, "{} reads", got.len());
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer k"));
    assert_eq!(req.json().unwrap(), json!({"model": "m"}));
}

#[tokio::test]
async fn close_delimited_cut_and_length_framing() {
    let server = FakeLlm::start(Script::queue([
        Reply::sse(b"data: 12345\n\n".to_vec())
            .with_framing(Framing::CloseDelimited)
            .cut_after(8),
        Reply::text(429, "slow").with_header("Retry-After", "2"),
    ]))
    .await
    .unwrap();
    let mut s = post(&server, "{}").await;
    let (head, body) = split_head(&reads(&mut s).await.concat());
    assert!(!head.contains("chunked") && !head.contains("Content-Length"));
    assert_eq!(body, b"data: 12");
    let mut s = post(&server, "{}").await;
    let (head, body) = split_head(&reads(&mut s).await.concat());
    assert!(head.starts_with("HTTP/1.1 429"));
    assert!(head.contains("Retry-After: 2") && head.contains("Content-Length: 4"));
    assert_eq!(body, b"slow");
    // Exhausted queue: a 500 that says so.
    let mut s = post(&server, "{}").await;
    let (head, body) = split_head(&reads(&mut s).await.concat());
    assert!(head.starts_with("HTTP/1.1 500"));
    assert!(String::from_utf8_lossy(&body).contains("script exhausted"));
}

#[tokio::test]
async fn closure_scripts_see_the_request() {
    let server = FakeLlm::start(Script::from_fn(|req| {
        let n = req.json().unwrap()["messages"]
            .as_array()
            .map_or(0, Vec::len);
        Reply::sse(sse::content_stream(&[&format!("{n} messages")]))
    }))
    .await
    .unwrap();
    let mut s = post(&server, r#"{"messages":[1,2,3]}"#).await;
    let (_, body) = split_head(&reads(&mut s).await.concat());
    assert!(String::from_utf8_lossy(&body).contains("3 messages"));
    assert_eq!(server.chat_bodies().len(), 1);
}

#[tokio::test]
async fn a_client_leaving_during_a_stall_is_reported() {
    let reply =
        Reply::sse(sse::content_stream(&["a", "b"])).stall_after(5, Duration::from_secs(30));
    let server = FakeLlm::start(Script::repeat(reply)).await.unwrap();
    let mut s = post(&server, "{}").await;
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).await.unwrap();
    assert!(n > 0);
    assert!(server.disconnects().is_empty());
    drop(s);
    let d = server
        .wait_for_disconnect(Duration::from_secs(2))
        .await
        .expect("disconnect seen");
    assert_eq!((d.request, d.body_bytes_sent), (0, 5));
}

#[tokio::test]
async fn models_health_and_unknown_routes() {
    let server = FakeLlm::start(Script::queue([])).await.unwrap();
    for (path, status) in [
        ("/v1/models", "200"),
        ("/health", "200"),
        ("/v1/nope", "404"),
    ] {
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let (head, body) = split_head(&reads(&mut s).await.concat());
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {head}"
        );
        if path == "/v1/models" {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["data"][0]["id"], "fake-model");
        }
    }
}
