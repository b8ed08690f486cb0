//! The scripted OpenAI-compatible server: raw HTTP/1.1 over tokio `TcpStream`, one request
//! per connection (`Connection: close`), so every byte and every write boundary is the
//! script's choice.

use sayri_core::sync::lock;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::reply::{Framing, Reply};

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in arrival order, names as sent.
    pub headers: Vec<(String, String)>,
    /// Raw body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// First header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`None` when it is not JSON).
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A client that went away before the reply was fully written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnect {
    /// Index of the request (in [`FakeLlm::requests`]) whose reply was interrupted.
    pub request: usize,
    /// Body bytes written before the client closed.
    pub body_bytes_sent: usize,
}

type ReplyFn = Box<dyn FnMut(&RecordedRequest) -> Reply + Send>;

/// How chat requests are answered.
pub enum Script {
    /// Replies in order; when empty, `500 {"error":{"message":"script exhausted"}}`.
    Queue(VecDeque<Reply>),
    /// The same reply every time.
    Repeat(Reply),
    /// A closure decides from the request (multi-step conversations, agent tests).
    Func(ReplyFn),
}

impl Script {
    /// A queue of replies.
    pub fn queue(replies: impl IntoIterator<Item = Reply>) -> Script {
        Script::Queue(replies.into_iter().collect())
    }

    /// The same reply for every request.
    pub fn repeat(reply: Reply) -> Script {
        Script::Repeat(reply)
    }

    /// A closure deciding each reply.
    pub fn from_fn(f: impl FnMut(&RecordedRequest) -> Reply + Send + 'static) -> Script {
        Script::Func(Box::new(f))
    }

    fn next(&mut self, req: &RecordedRequest) -> Reply {
        match self {
            Script::Queue(q) => q.pop_front().unwrap_or_else(|| {
                Reply::json(
                    500,
                    &json!({"error": {"message": "fake LLM script exhausted"}}),
                )
            }),
            Script::Repeat(r) => r.clone(),
            Script::Func(f) => f(req),
        }
    }
}

struct Shared {
    script: Mutex<Script>,
    models: Mutex<Reply>,
    requests: Mutex<Vec<RecordedRequest>>,
    disconnects: Mutex<Vec<Disconnect>>,
    changed: Notify,
}

/// A running scripted server on `127.0.0.1:<free port>`. Stops when dropped.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeLlm {
    /// Binds `127.0.0.1:0` and serves `script` for `POST …/chat/completions`,
    /// a model list (`fake-model`) for `GET …/models`, `200` for `GET /health`, `404` else.
    pub async fn start(script: Script) -> std::io::Result<FakeLlm> {
        FakeLlm::start_on(0, script).await
    }

    /// Like [`FakeLlm::start`] on a chosen loopback port (0 = any free port).
    pub async fn start_on(port: u16, script: Script) -> std::io::Result<FakeLlm> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            models: Mutex::new(Reply::json(
                200,
                &json!({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "sayri-testkit"}]}),
            )),
            requests: Mutex::new(Vec::new()),
            disconnects: Mutex::new(Vec::new()),
            changed: Notify::new(),
        });
        let s = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, s).await;
                });
            }
        });
        Ok(FakeLlm { addr, shared, task })
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL to configure a client with: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Replaces the reply to `GET …/models`.
    pub fn set_models_reply(&self, reply: Reply) {
        *lock(&self.shared.models) = reply;
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// JSON bodies of the chat requests so far.
    pub fn chat_bodies(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .filter_map(RecordedRequest::json)
            .collect()
    }

    /// Client disconnects seen so far.
    pub fn disconnects(&self) -> Vec<Disconnect> {
        lock(&self.shared.disconnects).clone()
    }

    /// Waits until at least one client disconnect was seen, up to `timeout`.
    pub async fn wait_for_disconnect(&self, timeout: Duration) -> Option<Disconnect> {
        let wait = async {
            loop {
                let notified = self.shared.changed.notified();
                if let Some(d) = lock(&self.shared.disconnects).first().cloned() {
                    return d;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.ok()
    }
}

pub(crate) async fn read_request(
    stream: &mut TcpStream,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 64 * 1024 {
            return Ok(None);
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let len = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(len);
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let Some(req) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let index = {
        let mut reqs = lock(&shared.requests);
        reqs.push(req.clone());
        reqs.len() - 1
    };
    shared.changed.notify_waiters();
    let route = req.path.split('?').next().unwrap_or("");
    let reply = if req.method == "POST" && route.ends_with("/chat/completions") {
        lock(&shared.script).next(&req)
    } else if req.method == "GET" && route.ends_with("/models") {
        lock(&shared.models).clone()
    } else if req.method == "GET" && route == "/health" {
        Reply::json(200, &json!({"status": "ok"}))
    } else {
        Reply::json(
            404,
            &json!({"error": {"message": format!("no route {} {}", req.method, route)}}),
        )
    };
    let (mut rd, mut wr) = stream.into_split();
    let sent = AtomicUsize::new(0);
    let writer = write_reply(&mut wr, &reply, &sent);
    // Watch the read side: EOF (or an error) while we still write means the client left.
    let watcher = async {
        let mut b = [0u8; 512];
        loop {
            match rd.read(&mut b).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let completed = tokio::select! {
        r = writer => r.is_ok(),
        () = watcher => false,
    };
    if completed {
        let _ = wr.shutdown().await;
    } else {
        lock(&shared.disconnects).push(Disconnect {
            request: index,
            body_bytes_sent: sent.load(Ordering::SeqCst),
        });
        shared.changed.notify_waiters();
    }
    Ok(())
}

/// Writes status line, headers and the body as scripted. `Err` means the client went away.
async fn write_reply(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    reply: &Reply,
    sent: &AtomicUsize,
) -> std::io::Result<()> {
    if !reply.head_delay.is_zero() {
        tokio::time::sleep(reply.head_delay).await;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    match reply.framing {
        Framing::Chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
        Framing::Length => head.push_str(&format!("Content-Length: {}\r\n", reply.body.len())),
        Framing::CloseDelimited => {}
    }
    head.push_str("Connection: close\r\n\r\n");
    wr.write_all(head.as_bytes()).await?;
    wr.flush().await?;
    let writes = reply.writes();
    for (k, (start, end)) in writes.iter().copied().enumerate() {
        if k > 0 && !reply.write_delay.is_zero() {
            tokio::time::sleep(reply.write_delay).await;
        }
        let part = &reply.body[start..end];
        if !part.is_empty() {
            if reply.framing == Framing::Chunked {
                let mut framed = format!("{:x}\r\n", part.len()).into_bytes();
                framed.extend_from_slice(part);
                framed.extend_from_slice(b"\r\n");
                wr.write_all(&framed).await?;
            } else {
                wr.write_all(part).await?;
            }
            wr.flush().await?;
        }
        sent.store(end, Ordering::SeqCst);
        if let Some((at, d)) = reply.stall
            && at == end
        {
            tokio::time::sleep(d).await;
        }
    }
    if reply.cut_after.is_some() {
        return Ok(()); // abrupt end: no chunked terminator, short body
    }
    if reply.framing == Framing::Chunked {
        wr.write_all(b"0\r\n\r\n").await?;
    }
    wr.flush().await
}
