//! A loopback Telegram Bot API server for gateway tests: `POST /bot<token>/<method>` with the
//! documented JSON shapes, every call recorded.
//!
//! Methods: `getMe`, `getUpdates` (offsets confirm updates; long polling up to `timeout`
//! seconds; `allowed_updates`), `sendMessage` (plain text, `entities`, or `parse_mode`
//! `MarkdownV2` — other parse modes are refused as unsupported; text longer than 4096 UTF-16
//! units after entity parsing is refused as Telegram refuses it), `sendChatAction`,
//! `answerCallbackQuery`, `deleteWebhook`. A wrong token answers `401 Unauthorized`, an unknown
//! method `404 Not Found`. [`Faults`] make it misbehave on purpose (409 conflicts, 429 with
//! `retry_after`, refused messages).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use sayri_testkit::telegram::{BotApiServer, updates};
//! let api = BotApiServer::start("123:test-token").await?;
//! api.push_update(updates::private_message(1001, "Ada", "hello"));
//! // … point a gateway at api.base_url(), then:
//! let sent = api.messages();
//! # let _ = sent; Ok(()) }
//! ```

pub mod markdown_v2;
pub mod updates;

use crate::server::{RecordedRequest, read_request};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Telegram's longest message text, in UTF-16 code units.
pub const MAX_TEXT_UNITS: usize = 4096;

/// Ways to make the server misbehave.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The next this many `getUpdates` calls answer `409 Conflict`.
    pub conflicts: usize,
    /// The next this many `sendMessage` calls answer `429` with this `retry_after` (seconds).
    pub rate_limited: Option<(usize, u64)>,
    /// The next this many `sendMessage` calls answer `429` with no `parameters` and this
    /// description (as proxies and some Bot API servers do).
    pub rate_limited_plain: Option<(usize, String)>,
    /// `sendMessage` with more characters than this answers `400 message is too long`.
    pub max_text_chars: Option<usize>,
    /// Every `sendMessage` answers `400` with this description.
    pub refuse_all_sends: Option<String>,
    /// Every `sendMessage` with entities or a parse mode answers `400 can't parse entities`.
    pub refuse_formatting: bool,
}

/// One call as the server saw and answered it.
#[derive(Debug, Clone)]
pub struct ApiCall {
    /// The method (`sendMessage`, …).
    pub method: String,
    /// Its parameters.
    pub params: Value,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The answer's body.
    pub response: Value,
    /// When it arrived.
    pub at: Instant,
}

/// A message the server accepted, as Telegram stores it: plain text and entities.
#[derive(Debug, Clone, PartialEq)]
pub struct SentMessage {
    /// The chat it went to.
    pub chat_id: String,
    /// Its plain text (after entity parsing).
    pub text: String,
    /// Its entities (`MessageEntity` objects).
    pub entities: Vec<Value>,
    /// Its id.
    pub message_id: i64,
}

impl SentMessage {
    /// The text of each entity of kind `kind`.
    pub fn entity_texts(&self, kind: &str) -> Vec<String> {
        let units: Vec<u16> = self.text.encode_utf16().collect();
        self.entities
            .iter()
            .filter(|e| e["type"] == kind)
            .filter_map(|e| {
                let o = usize::try_from(e["offset"].as_u64()?).ok()?;
                let l = usize::try_from(e["length"].as_u64()?).ok()?;
                Some(String::from_utf16_lossy(units.get(o..o + l)?))
            })
            .collect()
    }
}

#[derive(Default)]
struct State {
    updates: VecDeque<Value>,
    next_update_id: i64,
    calls: Vec<ApiCall>,
    messages: Vec<SentMessage>,
    faults: Faults,
}

struct Shared {
    token: String,
    state: Mutex<State>,
    changed: Notify,
}

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    sayri_core::sync::lock(&s.state)
}

/// The running server on `127.0.0.1:<free port>`. Stops when dropped.
pub struct BotApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for BotApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The length of `s` in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

impl BotApiServer {
    /// Starts a server for the bot with `token`.
    pub async fn start(token: &str) -> std::io::Result<BotApiServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State {
                next_update_id: 1,
                ..State::default()
            }),
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
        Ok(BotApiServer { addr, shared, task })
    }

    /// The base URL a gateway is given (`http://127.0.0.1:PORT`, without `/bot…`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues an update (its `update_id` is set when absent); returns the id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut st = lock(&self.shared);
            let id = update["update_id"].as_i64().unwrap_or(st.next_update_id);
            st.next_update_id = st.next_update_id.max(id + 1);
            update["update_id"] = json!(id);
            st.updates.push_back(update);
            id
        };
        self.shared.changed.notify_waiters();
        id
    }

    /// Updates not yet confirmed by a `getUpdates` offset.
    pub fn pending_updates(&self) -> usize {
        lock(&self.shared).updates.len()
    }

    /// Replaces the faults.
    pub fn set_faults(&self, faults: Faults) {
        lock(&self.shared).faults = faults;
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<ApiCall> {
        lock(&self.shared).calls.clone()
    }

    /// The calls of `method` so far.
    pub fn calls_of(&self, method: &str) -> Vec<ApiCall> {
        lock(&self.shared)
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Every accepted message, in order.
    pub fn messages(&self) -> Vec<SentMessage> {
        lock(&self.shared).messages.clone()
    }

    /// The accepted messages to `chat_id`.
    pub fn messages_to(&self, chat_id: &str) -> Vec<SentMessage> {
        self.messages()
            .into_iter()
            .filter(|m| m.chat_id == chat_id)
            .collect()
    }

    /// Polls `check` (with the calls so far) every 20 ms until it holds or `limit` passes;
    /// returns whether it held. Usable from synchronous tests.
    pub fn wait_until(&self, limit: Duration, check: impl Fn(&[ApiCall]) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if check(&lock(&self.shared).calls) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn error(code: u16, description: &str) -> (u16, Value) {
    (
        code,
        json!({"ok": false, "error_code": code, "description": description}),
    )
}

fn ok(result: Value) -> (u16, Value) {
    (200, json!({"ok": true, "result": result}))
}

/// The call's parameters: a JSON body, or `key=value` pairs of a form body or query string.
fn params_of(req: &RecordedRequest) -> Value {
    if let Some(v) = req.json().filter(Value::is_object) {
        return v;
    }
    let form = String::from_utf8_lossy(&req.body).to_string();
    let query = req.path.split_once('?').map_or("", |(_, q)| q).to_string();
    let mut m = serde_json::Map::new();
    for pair in query
        .split('&')
        .chain(form.split('&'))
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode(v);
        let value = serde_json::from_str(&v).unwrap_or(Value::String(v));
        m.insert(percent_decode(k), value);
    }
    Value::Object(m)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(v) => {
                    out.push(v);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let Some(req) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let route = req.path.split('?').next().unwrap_or("").to_string();
    let params = params_of(&req);
    let (method, (status, body)) = match route.strip_prefix("/bot").and_then(|r| r.split_once('/'))
    {
        Some((token, method)) if token == shared.token => {
            (method.to_string(), answer(&shared, method, &params).await)
        }
        Some((_, method)) => (method.to_string(), error(401, "Unauthorized")),
        None => (route.clone(), error(404, "Not Found")),
    };
    {
        let mut st = lock(&shared);
        st.calls.push(ApiCall {
            method,
            params,
            status,
            response: body.clone(),
            at: Instant::now(),
        });
    }
    shared.changed.notify_waiters();
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Error" },
        text.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}

async fn answer(shared: &Arc<Shared>, method: &str, p: &Value) -> (u16, Value) {
    match method {
        "getMe" => ok(
            json!({"id": 4242, "is_bot": true, "first_name": "Sayri Test",
                             "username": "sayri_test_bot"}),
        ),
        "getUpdates" => get_updates(shared, p).await,
        "sendMessage" => send_message(shared, p),
        "sendChatAction" => {
            let actions = [
                "typing",
                "upload_photo",
                "record_video",
                "upload_video",
                "record_voice",
                "upload_voice",
                "upload_document",
                "choose_sticker",
                "find_location",
                "record_video_note",
                "upload_video_note",
            ];
            if p["chat_id"].is_null() {
                error(400, "Bad Request: chat_id is empty")
            } else if !p["action"].as_str().is_some_and(|a| actions.contains(&a)) {
                error(400, "Bad Request: wrong parameter action in request")
            } else {
                ok(json!(true))
            }
        }
        "answerCallbackQuery" | "deleteWebhook" => ok(json!(true)),
        _ => error(404, "Not Found"),
    }
}

fn kind_of(update: &Value) -> Option<&str> {
    update
        .as_object()?
        .keys()
        .find(|k| *k != "update_id")
        .map(String::as_str)
}

async fn get_updates(shared: &Arc<Shared>, p: &Value) -> (u16, Value) {
    {
        let mut st = lock(shared);
        if st.faults.conflicts > 0 {
            st.faults.conflicts -= 1;
            return error(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            );
        }
        if let Some(offset) = p["offset"].as_i64() {
            st.updates
                .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
        }
    }
    let timeout = Duration::from_secs(p["timeout"].as_u64().unwrap_or(0).min(60));
    let limit = usize::try_from(p["limit"].as_u64().unwrap_or(100).clamp(1, 100)).unwrap_or(100);
    let allowed: Vec<String> = p["allowed_updates"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = shared.changed.notified();
        let ready: Vec<Value> = lock(shared)
            .updates
            .iter()
            .filter(|u| {
                allowed.is_empty() || kind_of(u).is_some_and(|k| allowed.iter().any(|a| a == k))
            })
            .take(limit)
            .cloned()
            .collect();
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return ok(Value::Array(ready));
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// Checks a `MessageEntity` list against `text`: known types, inside the text, not splitting
/// a surrogate pair.
fn check_entities(text: &str, entities: &Value) -> Result<Vec<Value>, String> {
    let Some(list) = entities.as_array() else {
        return Err("entities must be an array".into());
    };
    let units: Vec<u16> = text.encode_utf16().collect();
    let known = [
        "mention",
        "hashtag",
        "cashtag",
        "bot_command",
        "url",
        "email",
        "phone_number",
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "blockquote",
        "expandable_blockquote",
        "code",
        "pre",
        "text_link",
        "text_mention",
        "custom_emoji",
    ];
    for e in list {
        let kind = e["type"].as_str().unwrap_or("");
        if !known.contains(&kind) {
            return Err(format!("Unsupported entity type \"{kind}\""));
        }
        let (Some(o), Some(l)) = (e["offset"].as_u64(), e["length"].as_u64()) else {
            return Err("entity offset and length must be integers".into());
        };
        let (o, l) = (o as usize, l as usize);
        if l == 0 || o + l > units.len() {
            return Err(format!(
                "entity beginning at UTF-16 offset {o} is out of the text"
            ));
        }
        let low = |i: usize| units.get(i).is_some_and(|u| (0xDC00..0xE000).contains(u));
        if low(o) || (o + l < units.len() && low(o + l)) {
            return Err(format!("entity at UTF-16 offset {o} splits a character"));
        }
        if kind == "text_link" && e["url"].as_str().is_none_or(str::is_empty) {
            return Err("text_link entity without url".into());
        }
    }
    Ok(list.clone())
}

fn send_message(shared: &Arc<Shared>, p: &Value) -> (u16, Value) {
    let mut st = lock(shared);
    if let Some((n, retry)) = st.faults.rate_limited
        && n > 0
    {
        st.faults.rate_limited = Some((n - 1, retry));
        return (
            429,
            json!({"ok": false, "error_code": 429,
                   "description": format!("Too Many Requests: retry after {retry}"),
                   "parameters": {"retry_after": retry}}),
        );
    }
    if let Some((n, description)) = st.faults.rate_limited_plain.clone()
        && n > 0
    {
        st.faults.rate_limited_plain = Some((n - 1, description.clone()));
        return (
            429,
            json!({"ok": false, "error_code": 429, "description": description}),
        );
    }
    if let Some(d) = &st.faults.refuse_all_sends {
        return error(400, d);
    }
    let chat_id = match &p["chat_id"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return error(400, "Bad Request: chat_id is empty"),
    };
    let Some(raw) = p["text"].as_str().filter(|t| !t.trim().is_empty()) else {
        return error(400, "Bad Request: message text is empty");
    };
    let formatted = !p["entities"].is_null() || p["parse_mode"].is_string();
    if formatted && st.faults.refuse_formatting {
        return error(
            400,
            "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0",
        );
    }
    let parsed = match p["parse_mode"].as_str() {
        None | Some("") => match &p["entities"] {
            Value::Null => Ok((raw.to_string(), Vec::new())),
            e => check_entities(raw, e).map(|e| (raw.to_string(), e)),
        },
        Some("MarkdownV2") => markdown_v2::parse(raw),
        Some(_) => return error(400, "Bad Request: unsupported parse_mode"),
    };
    let (text, entities) = match parsed {
        Ok(x) => x,
        Err(e) => return error(400, &format!("Bad Request: can't parse entities: {e}")),
    };
    if text.trim().is_empty() {
        return error(400, "Bad Request: message text is empty");
    }
    let too_long_fault = st
        .faults
        .max_text_chars
        .is_some_and(|m| text.chars().count() > m);
    if utf16_len(&text) > MAX_TEXT_UNITS || too_long_fault {
        return error(400, "Bad Request: message is too long");
    }
    let message_id = i64::try_from(st.messages.len()).unwrap_or(0) + 1;
    st.messages.push(SentMessage {
        chat_id: chat_id.clone(),
        text: text.clone(),
        entities: entities.clone(),
        message_id,
    });
    let mut m = json!({"message_id": message_id, "date": 0,
        "chat": {"id": chat_id.parse::<i64>().map_or(Value::String(chat_id.clone()), Value::from),
                 "type": "private"},
        "text": text});
    if !entities.is_empty() {
        m["entities"] = Value::Array(entities);
    }
    ok(m)
}
