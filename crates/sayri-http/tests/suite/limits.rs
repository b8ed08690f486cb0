//! The bounded download against a loopback HTTP/1.1 server that misbehaves on purpose: each
//! bound of `Limits` stops the download, and what arrived before is all the sink saw.

use sayri_http::{LimitError, Limits, fetch};
use std::convert::Infallible;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Serves one connection with `answer`, then returns its address.
async fn serve<F, Fut>(answer: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        if let Ok((mut s, _)) = listener.accept().await {
            // Read the request head; the tests only send GETs.
            let mut buf = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
            answer(s).await;
        }
    });
    format!("http://{addr}/file")
}

async fn get(
    url: &str,
    limits: Limits,
) -> (
    Result<sayri_http::Fetched, LimitError<Infallible>>,
    Vec<u8>,
    u64,
) {
    let client = sayri_http::client_builder(false).unwrap().build().unwrap();
    let mut body = Vec::new();
    let mut last = 0;
    let mut sink = |c: &[u8]| {
        body.extend_from_slice(c);
        Ok(())
    };
    let got = fetch(client.get(url), limits, &mut sink, &mut |done, _| {
        last = done
    })
    .await;
    (got, body, last)
}

#[tokio::test]
async fn a_whole_answer_reaches_the_sink_and_progress_ends_at_its_length() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world",
            )
            .await;
    })
    .await;
    let (got, body, last) = get(
        &url,
        Limits {
            max_bytes: Some(11),
            ..Limits::default()
        },
    )
    .await;
    let got = got.unwrap();
    assert_eq!((got.bytes, got.total), (11, Some(11)));
    assert_eq!(body, b"hello world");
    assert_eq!(last, 11);
}

#[tokio::test]
async fn an_announced_length_over_the_cap_is_refused_before_any_byte_is_handed_on() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n")
            .await;
        let _ = s.write_all(&[b'x'; 5000]).await;
    })
    .await;
    let (got, body, _) = get(
        &url,
        Limits {
            max_bytes: Some(100),
            ..Limits::default()
        },
    )
    .await;
    assert!(
        matches!(
            got,
            Err(LimitError::Announced {
                announced: 5000,
                max: 100
            })
        ),
        "{got:?}"
    );
    assert!(body.is_empty());
}

#[tokio::test]
async fn bytes_sent_past_the_announced_length_never_reach_the_sink() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n")
            .await;
        let _ = s.write_all(b"0123456789").await;
        let _ = s.write_all(&[b'x'; 5000]).await;
    })
    .await;
    let (got, body, last) = get(
        &url,
        Limits {
            max_bytes: Some(1 << 20),
            ..Limits::default()
        },
    )
    .await;
    let got = got.unwrap();
    assert_eq!((got.bytes, got.total), (10, Some(10)));
    assert_eq!(body, b"0123456789", "the surplus is not part of the file");
    assert_eq!(last, 10);
}

#[tokio::test]
async fn an_endless_chunked_answer_stops_at_the_cap() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        loop {
            if s.write_all(b"400\r\n").await.is_err()
                || s.write_all(&[b'y'; 0x400]).await.is_err()
                || s.write_all(b"\r\n").await.is_err()
            {
                return;
            }
        }
    })
    .await;
    let (got, body, _) = get(
        &url,
        Limits {
            max_bytes: Some(10_000),
            ..Limits::default()
        },
    )
    .await;
    assert!(
        matches!(got, Err(LimitError::TooLong { limit: 10_000 })),
        "{got:?}"
    );
    assert!(
        body.len() <= 10_000,
        "{} bytes reached the sink",
        body.len()
    );
}

#[tokio::test]
async fn a_stalled_answer_is_given_up_after_the_stall_timeout() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            .await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let limits = Limits {
        stall: Some(Duration::from_millis(300)),
        ..Limits::default()
    };
    let (got, body, _) = get(&url, limits).await;
    assert!(
        matches!(got, Err(LimitError::Stalled { done: 10, .. })),
        "{got:?}"
    );
    assert_eq!(body, b"0123456789");
}

#[tokio::test]
async fn a_trickling_answer_is_given_up_at_the_deadline_although_it_never_stalls() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        loop {
            if s.write_all(b"1\r\nz\r\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let limits = Limits {
        deadline: Some(Duration::from_millis(600)),
        stall: Some(Duration::from_secs(5)),
        ..Limits::default()
    };
    let started = std::time::Instant::now();
    let (got, _, _) = get(&url, limits).await;
    assert!(matches!(got, Err(LimitError::Deadline { .. })), "{got:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_answer_cut_before_its_length_is_an_error_not_a_short_file() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly-half")
            .await;
    })
    .await;
    let (got, _, _) = get(&url, Limits::default()).await;
    assert!(
        matches!(
            got,
            Err(LimitError::Broken {
                done: 9,
                total: Some(100),
                ..
            } | LimitError::Truncated {
                done: 9,
                total: 100
            })
        ),
        "{got:?}"
    );
    let e = got.unwrap_err().to_string();
    assert!(e.contains("after 9 of 100 bytes"), "{e}");
}

#[tokio::test]
async fn an_error_status_is_named_and_its_body_never_reaches_the_sink() {
    let url = serve(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\ngone")
            .await;
    })
    .await;
    let (got, body, _) = get(&url, Limits::default()).await;
    let e = got.unwrap_err();
    assert_eq!(e.to_string(), "HTTP 404 Not Found");
    assert!(body.is_empty());
}

#[tokio::test]
async fn a_transport_error_names_no_url_and_so_no_credentials() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://user:hunter2@127.0.0.1:{port}/m.bin");
    let (got, _, _) = get(&url, Limits::default()).await;
    let e = got.unwrap_err();
    assert!(matches!(e, LimitError::Transport(_)), "{e:?}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert_eq!(
        sayri_http::without_credentials(&url),
        format!("http://127.0.0.1:{port}/m.bin")
    );
}
