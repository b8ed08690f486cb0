//! Continuing a partial download against a loopback HTTP/1.1 server that serves ranges — or
//! ignores them, changes the file, answers another range, refuses it — and that can cut a
//! transfer short: what arrives is the whole file, in order, or a restart from zero that says
//! why; never a file spliced from two versions.

use sayri_http::{LimitError, Limits, Partial, Restart, Sink, Start, Validators, fetch_resumable};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the server answers a request with a `Range` header.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ranges {
    /// A `206` of the range asked for (when `If-Range` matches the ETag, else the whole file).
    Honour,
    /// A `200` with the whole file, as a server without range support does.
    Ignore,
    /// A `206` that starts 5 bytes before the offset asked for.
    Misplaced,
    /// A `206` of the range asked for, with another ETag (a server that ignores `If-Range`).
    OtherVersion,
    /// A `416`.
    Refuse,
}

/// The server's file and behaviour. The file's ETag is `"v1"` unless `etag` says otherwise.
#[derive(Clone)]
struct Script {
    body: Vec<u8>,
    etag: Option<&'static str>,
    last_modified: Option<&'static str>,
    ranges: Ranges,
    /// Close the first answer after this many bytes of its body.
    cut_first_at: Option<usize>,
}

impl Script {
    fn new(body: Vec<u8>) -> Script {
        Script {
            body,
            etag: Some("\"v1\""),
            last_modified: None,
            ranges: Ranges::Honour,
            cut_first_at: None,
        }
    }
}

struct Server {
    url: String,
    /// The request heads received, in order.
    requests: Arc<Mutex<Vec<String>>>,
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

async fn serve(script: Script) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/model.bin", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = requests.clone();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut s, _)) = listener.accept().await {
            n += 1;
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).await.is_ok_and(|r| r == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            log.lock().unwrap().push(head.clone());
            let (status, range, etag) = answer(&script, &head);
            let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
            if let Some(e) = etag {
                out.push_str(&format!("ETag: {e}\r\n"));
            }
            if let Some(lm) = script.last_modified {
                out.push_str(&format!("Last-Modified: {lm}\r\n"));
            }
            let total = script.body.len();
            let body: &[u8] = match range {
                Some(first) if status.starts_with("206") => {
                    out.push_str(&format!(
                        "Content-Range: bytes {first}-{}/{total}\r\n",
                        total - 1
                    ));
                    &script.body[first..]
                }
                _ if status.starts_with("416") => {
                    out.push_str(&format!("Content-Range: bytes */{total}\r\n"));
                    &[]
                }
                _ => &script.body,
            };
            out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let _ = s.write_all(out.as_bytes()).await;
            let send = match script.cut_first_at {
                Some(cut) if n == 1 => &body[..cut],
                _ => body,
            };
            let _ = s.write_all(send).await;
            let _ = s.shutdown().await;
        }
    });
    Server { url, requests }
}

/// The status line, the first byte of a `206` and the ETag sent, for one request head.
fn answer(script: &Script, head: &str) -> (&'static str, Option<usize>, Option<&'static str>) {
    let asked = header(head, "Range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|r| r.parse::<usize>().ok());
    let Some(first) = asked else {
        return ("200 OK", None, script.etag);
    };
    let same =
        header(head, "If-Range").is_none_or(|v| Some(v) == script.etag.or(script.last_modified));
    match script.ranges {
        Ranges::Ignore => ("200 OK", None, script.etag),
        Ranges::Honour if !same => ("200 OK", None, script.etag),
        Ranges::Honour => ("206 Partial Content", Some(first), script.etag),
        Ranges::Misplaced => ("206 Partial Content", Some(first - 5), script.etag),
        Ranges::OtherVersion => ("206 Partial Content", Some(first), Some("\"v2\"")),
        Ranges::Refuse => ("416 Range Not Satisfiable", None, script.etag),
    }
}

/// A sink keeping the file as a `.part` file would: truncated at `offset` by each start.
#[derive(Default)]
struct File {
    data: Vec<u8>,
    starts: Vec<Start>,
}

impl Sink for File {
    type Error = Infallible;

    fn start(&mut self, start: &Start) -> Result<(), Infallible> {
        self.data.truncate(usize::try_from(start.offset).unwrap());
        self.starts.push(start.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), Infallible> {
        self.data.extend_from_slice(chunk);
        Ok(())
    }
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn client() -> reqwest::Client {
    sayri_http::client_builder(false).unwrap().build().unwrap()
}

/// A first attempt cut short after `cut` bytes, and what it leaves to continue from.
async fn first_attempt(server: &Server) -> (File, Partial) {
    let mut file = File::default();
    let got = fetch_resumable(&client(), &server.url, None, Limits::default(), &mut file).await;
    assert!(
        matches!(
            got,
            Err(LimitError::Broken { .. } | LimitError::Truncated { .. })
        ),
        "{got:?}"
    );
    let start = file.starts[0].clone();
    let partial = Partial {
        bytes: file.data.len() as u64,
        total: start.total,
        validators: start.validators,
    };
    (file, partial)
}

#[tokio::test]
async fn a_transfer_cut_short_continues_with_a_range_and_the_whole_file_arrives() {
    let whole = body(100_000);
    let server = serve(Script {
        cut_first_at: Some(40_000),
        ..Script::new(whole.clone())
    })
    .await;
    let (mut file, partial) = first_attempt(&server).await;
    assert_eq!(partial.bytes, 40_000);
    let got = fetch_resumable(
        &client(),
        &server.url,
        Some(&partial),
        Limits::default(),
        &mut file,
    )
    .await
    .unwrap();
    assert_eq!(
        (got.bytes, got.total, got.resumed_from),
        (100_000, Some(100_000), 40_000)
    );
    assert_eq!(file.starts[1].restarted, None);
    assert!(
        file.data == whole,
        "the continued file is the server's file"
    );
    let second = server.requests.lock().unwrap()[1].clone();
    assert_eq!(header(&second, "Range"), Some("bytes=40000-"));
    assert_eq!(header(&second, "If-Range"), Some("\"v1\""));
}

#[tokio::test]
async fn a_continuation_is_checked_against_the_date_when_the_server_gives_no_etag() {
    let whole = body(10_000);
    let server = serve(Script {
        etag: None,
        last_modified: Some("Tue, 01 Apr 2025 10:00:00 GMT"),
        cut_first_at: Some(3_000),
        ..Script::new(whole.clone())
    })
    .await;
    let (mut file, partial) = first_attempt(&server).await;
    let got = fetch_resumable(
        &client(),
        &server.url,
        Some(&partial),
        Limits::default(),
        &mut file,
    )
    .await
    .unwrap();
    assert_eq!(got.resumed_from, 3_000);
    assert!(file.data == whole);
    let second = server.requests.lock().unwrap()[1].clone();
    assert_eq!(
        header(&second, "If-Range"),
        Some("Tue, 01 Apr 2025 10:00:00 GMT")
    );
}

/// Continues a cut first attempt against a server answering ranges with `ranges`; returns the
/// sink, the second start and the requests seen.
async fn restart_case(ranges: Ranges) -> (File, Start, Vec<String>, Vec<u8>) {
    let whole = body(20_000);
    let server = serve(Script {
        ranges,
        cut_first_at: Some(8_000),
        ..Script::new(whole.clone())
    })
    .await;
    let (mut file, partial) = first_attempt(&server).await;
    let got = fetch_resumable(
        &client(),
        &server.url,
        Some(&partial),
        Limits::default(),
        &mut file,
    )
    .await
    .unwrap();
    assert_eq!((got.bytes, got.resumed_from), (20_000, 0));
    let start = file.starts.last().unwrap().clone();
    let requests = server.requests.lock().unwrap().clone();
    (file, start, requests, whole)
}

#[tokio::test]
async fn a_server_that_answers_a_range_with_the_whole_file_restarts_from_zero() {
    let (file, start, requests, whole) = restart_case(Ranges::Ignore).await;
    assert_eq!(start.offset, 0);
    assert_eq!(start.restarted, Some(Restart::NoRanges));
    assert!(
        file.data == whole,
        "the whole file, not the first part twice"
    );
    assert_eq!(requests.len(), 2, "the 200 itself is the new download");
}

#[tokio::test]
async fn a_range_that_starts_elsewhere_is_not_spliced_in_and_the_file_is_fetched_again() {
    let (file, start, requests, whole) = restart_case(Ranges::Misplaced).await;
    assert_eq!(start.offset, 0);
    assert!(
        matches!(&start.restarted, Some(Restart::BadRange(r)) if r == "bytes 7995-19999/20000"),
        "{:?}",
        start.restarted
    );
    assert!(file.data == whole);
    assert_eq!(
        header(&requests[2], "Range"),
        None,
        "the new request is a plain GET"
    );
}

#[tokio::test]
async fn a_range_of_another_version_of_the_file_restarts_from_zero() {
    let (file, start, requests, whole) = restart_case(Ranges::OtherVersion).await;
    assert_eq!(start.restarted, Some(Restart::Changed));
    assert!(file.data == whole);
    assert_eq!(requests.len(), 3);
}

#[tokio::test]
async fn a_refused_range_restarts_from_zero() {
    let (file, start, requests, whole) = restart_case(Ranges::Refuse).await;
    assert_eq!(start.restarted, Some(Restart::NotSatisfiable));
    assert!(file.data == whole);
    assert_eq!(requests.len(), 3);
}

#[tokio::test]
async fn a_file_changed_on_the_server_since_the_first_part_is_fetched_whole() {
    let whole = body(20_000);
    let server = serve(Script {
        etag: Some("\"v2\""),
        ..Script::new(whole.clone())
    })
    .await;
    let mut file = File {
        data: body(6_000).into_iter().map(|b| b ^ 0xff).collect(),
        starts: Vec::new(),
    };
    let partial = Partial {
        bytes: 6_000,
        total: Some(20_000),
        validators: Validators {
            etag: Some("\"v1\"".into()),
            last_modified: None,
        },
    };
    fetch_resumable(
        &client(),
        &server.url,
        Some(&partial),
        Limits::default(),
        &mut file,
    )
    .await
    .unwrap();
    assert_eq!(file.starts[0].restarted, Some(Restart::Changed));
    assert_eq!(file.starts[0].validators.etag.as_deref(), Some("\"v2\""));
    assert!(file.data == whole, "nothing of the old version is kept");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(header(&requests[0], "If-Range"), Some("\"v1\""));
}

#[tokio::test]
async fn a_partial_copy_without_a_validator_is_not_continued() {
    let whole = body(5_000);
    let server = serve(Script {
        etag: None,
        ..Script::new(whole.clone())
    })
    .await;
    let mut file = File {
        data: whole[..1_000].to_vec(),
        starts: Vec::new(),
    };
    let partial = Partial {
        bytes: 1_000,
        total: Some(5_000),
        validators: Validators::default(),
    };
    fetch_resumable(
        &client(),
        &server.url,
        Some(&partial),
        Limits::default(),
        &mut file,
    )
    .await
    .unwrap();
    assert_eq!(file.starts[0].restarted, Some(Restart::NoValidator));
    assert!(file.data == whole);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(header(&requests[0], "Range"), None);
}

#[tokio::test]
async fn the_cap_bounds_the_whole_file_also_when_a_range_is_continued() {
    let server = serve(Script::new(body(50_000))).await;
    let mut file = File::default();
    let partial = Partial {
        bytes: 45_000,
        total: Some(50_000),
        validators: Validators {
            etag: Some("\"v1\"".into()),
            last_modified: None,
        },
    };
    let limits = Limits {
        max_bytes: Some(48_000),
        ..Limits::default()
    };
    let got = fetch_resumable(&client(), &server.url, Some(&partial), limits, &mut file).await;
    assert!(
        matches!(
            got,
            Err(LimitError::Announced {
                announced: 50_000,
                max: 48_000
            })
        ),
        "the 5000 remaining bytes are within the cap, the file is not: {got:?}"
    );
    assert!(
        file.starts.is_empty(),
        "refused before the sink heard of it"
    );
}

#[tokio::test]
async fn a_transfer_cut_short_says_how_many_bytes_of_how_many_arrived() {
    let server = serve(Script {
        cut_first_at: Some(12_345),
        ..Script::new(body(100_000))
    })
    .await;
    let mut file = File::default();
    let e = fetch_resumable(&client(), &server.url, None, Limits::default(), &mut file)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("12345 of 100000 bytes (12%)"), "{text}");
    assert!(!text.contains("error decoding response body"), "{text}");
}

#[tokio::test]
async fn a_stall_after_part_of_the_file_says_how_much_of_it_arrived() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/m", listener.local_addr().unwrap());
    tokio::spawn(async move {
        if let Ok((mut s, _)) = listener.accept().await {
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 400\r\nETag: \"s\"\r\n\r\n")
                .await;
            let _ = s.write_all(&[1u8; 100]).await;
            tokio::time::sleep(Duration::from_secs(20)).await;
        }
    });
    let limits = Limits {
        stall: Some(Duration::from_millis(300)),
        ..Limits::default()
    };
    let mut file = File::default();
    let e = fetch_resumable(&client(), &url, None, limits, &mut file)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            LimitError::Stalled {
                done: 100,
                total: Some(400),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("after 100 of 400 bytes (25%)"),
        "{e}"
    );
    assert_eq!(
        file.data.len(),
        100,
        "what arrived is kept for the next attempt"
    );
}
