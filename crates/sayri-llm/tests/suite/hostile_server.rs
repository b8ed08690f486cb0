//! A hostile model server on loopback: endless bodies must not fill the daemon's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::common::{ask, client, run};

/// The server gives up after this much per connection (far above any cap the client may use).
const SERVER_LIMIT: usize = 1 << 30;

/// Serves every connection with `head` and then `filler` bytes until the client goes away or
/// [`SERVER_LIMIT`] is reached. Returns the base URL and the largest body sent on one connection.
async fn endless(head: &'static str, filler: u8) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let most = Arc::new(AtomicUsize::new(0));
    let seen = most.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![filler; 64 * 1024];
                let mut sent = 0;
                while sent < SERVER_LIMIT {
                    if sock.write_all(&chunk).await.is_err() {
                        break;
                    }
                    sent += chunk.len();
                    seen.fetch_max(sent, Ordering::SeqCst);
                }
            });
        }
    });
    (format!("http://{addr}/v1"), most)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_sse_line_is_cut_at_the_stream_cap() {
    let (url, most) = endless(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ",
        b'a',
    )
    .await;
    let out = run(&client(&url), ask("x")).await;
    let err = out
        .error
        .expect("an endless line must end the answer with an error");
    let sent = most.load(Ordering::SeqCst);
    assert!(
        sent < SERVER_LIMIT / 2,
        "the client read {sent} bytes of one endless line"
    );
    assert!(err.to_string().contains("MiB"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_body_is_not_read_to_the_end() {
    let (url, most) = endless(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
        b'e',
    )
    .await;
    let out = run(&client(&url), ask("x")).await;
    assert!(out.error.is_some(), "a 400 must be an error");
    let sent = most.load(Ordering::SeqCst);
    assert!(
        sent < 64 << 20,
        "the client read {sent} bytes of an error body"
    );
}
