//! The WebSocket bridge: one daemon connection per open page, carrying the daemon's protocol
//! as JSON text frames.
//!
//! * On upgrade the bridge connects to the daemon ([`DaemonConnector`]) and limits that
//!   connection with `client_hello` ([`HELLO_ACCESS`] + [`HELLO_ALLOW`]) before anything else;
//!   a daemon that refuses the limit is not bridged (fail closed). The page then gets a
//!   `ready` event with the daemon's status, as a socket client does.
//! * A page frame is a request `{"cmd", "params", "id"}`. Only [`ALLOWED_COMMANDS`] are
//!   forwarded; anything else is answered `denied` by the bridge itself. Ids are the page's own:
//!   the bridge sends its own numeric ids to the daemon and puts the page's id back on the
//!   response.
//! * Every daemon event is forwarded unchanged.
//! * When the daemon goes away (restart, `quit`) the bridge closes the WebSocket with code
//!   [`CLOSE_DAEMON_GONE`]; the page reconnects, which connects to the daemon anew.

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures::{SinkExt, StreamExt};
use sayri_protocol::event::{self, turns, window::Ready};
use sayri_protocol::params::{self, AccessClass, ClientHelloParams, StatusParams};
use sayri_protocol::reply::{self, runtime::ClientHelloReply};
use sayri_protocol::{ErrorCode, ProtocolError, Request, Response, ServerMessage, names};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The commands the page may send: conversation, sessions, agents list and switch, permission
/// cards, settings and status reading, adding a fact to memory. No settings, secret or skill writes, no deletion, no
/// `quit`: those stay with the command line.
pub const ALLOWED_COMMANDS: &[&str] = &[
    names::cmd::PING,
    names::cmd::VERSION,
    names::cmd::STATUS,
    names::cmd::TALK,
    names::cmd::INTERRUPT,
    names::cmd::NEW_CONVERSATION,
    names::cmd::SWITCH_SESSION,
    names::cmd::SESSIONS_LIST,
    names::cmd::SESSION_GET,
    names::cmd::SESSION_RENAME,
    names::cmd::AGENTS_LIST,
    names::cmd::AGENT_SWITCH,
    names::cmd::PERMISSION_LIST,
    names::cmd::PERMISSION_ANSWER,
    names::cmd::CONFIG_GET,
    names::cmd::CONFIG_LIST,
    names::cmd::MEMORY_ADD,
];

/// The access class the bridge's daemon connection keeps.
pub const HELLO_ACCESS: AccessClass = AccessClass::Assistant;

/// The management commands the bridge's daemon connection keeps besides [`HELLO_ACCESS`]:
/// answering permission cards, switching agents and "Remember this" on a message, all things
/// the person at the page does.
pub const HELLO_ALLOW: &[&str] = &[
    names::cmd::PERMISSION_ANSWER,
    names::cmd::AGENT_SWITCH,
    names::cmd::MEMORY_ADD,
];

/// WebSocket close code when the daemon connection ended (the page reconnects).
pub const CLOSE_DAEMON_GONE: u16 = 4001;
/// WebSocket close code when the daemon could not be reached or refused the bridge's limits.
pub const CLOSE_NO_DAEMON: u16 = 4002;
/// WebSocket close code when `sayri web` stops.
pub const CLOSE_SHUTDOWN: u16 = 1001;

/// Connects to the daemon; one connection per open page.
pub trait DaemonConnector: Send + Sync + 'static {
    /// A connection.
    type Link: DaemonLink;
    /// Connects and waits for the daemon's greeting.
    ///
    /// # Errors
    /// A sentence for the user (the daemon is not running, the socket is not ours, …).
    fn connect(&self) -> impl Future<Output = Result<Self::Link, String>> + Send;
}

/// One connection to the daemon.
pub trait DaemonLink: Send + 'static {
    /// The `info` of the daemon's `ready` greeting (its status object).
    fn ready_info(&self) -> Value;
    /// Sends a request and waits for its result (events meanwhile are dropped).
    ///
    /// # Errors
    /// The daemon's error, or a connection failure.
    fn call(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> impl Future<Output = Result<Value, ProtocolError>> + Send;
    /// Sends a request without waiting; returns the numeric id it was sent with.
    ///
    /// # Errors
    /// A connection failure, as a sentence.
    fn send(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> impl Future<Output = Result<u64, String>> + Send;
    /// The next response or event. Must be cancel-safe (the bridge selects on it).
    ///
    /// # Errors
    /// The connection ended or broke, as a sentence.
    fn next_message(&mut self) -> impl Future<Output = Result<ServerMessage, String>> + Send;
}

/// The `client_hello` params the bridge sends.
pub fn hello() -> ClientHelloParams {
    ClientHelloParams {
        access: HELLO_ACCESS,
        allow: HELLO_ALLOW.iter().map(|c| c.to_string()).collect(),
    }
}

/// Serves one page's WebSocket until either side goes away or `shutdown` is cancelled.
pub async fn run<C: DaemonConnector>(
    socket: WebSocket,
    connector: Arc<C>,
    shutdown: CancellationToken,
) {
    let (mut ws_tx, mut ws_rx) = socket.split();
    let mut link = match open_link(connector.as_ref()).await {
        Ok(link) => link,
        Err(why) => {
            tracing::info!(%why, "web bubble: no daemon connection");
            let _ = ws_tx.send(text(&error_event(&why))).await;
            let _ = ws_tx.send(close(CLOSE_NO_DAEMON, "no daemon")).await;
            return;
        }
    };
    let ready = match ready_frame(link.ready_info()) {
        Ok(frame) => frame,
        Err(why) => {
            tracing::info!(%why, "web bubble: the daemon's greeting is not understood");
            let _ = ws_tx.send(text(&error_event(&why))).await;
            let _ = ws_tx.send(close(CLOSE_NO_DAEMON, "no daemon")).await;
            return;
        }
    };
    if ws_tx.send(text(&ready)).await.is_err() {
        return;
    }
    let mut ids: HashMap<u64, Value> = HashMap::new();
    let code = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break CLOSE_SHUTDOWN,
            msg = link.next_message() => {
                let frame = match msg {
                    Ok(ServerMessage::Event(ev)) => serde_json::to_value(&ev).ok(),
                    Ok(ServerMessage::Response(resp)) => page_response(resp, &mut ids),
                    Err(why) => {
                        tracing::info!(%why, "web bubble: the daemon connection ended");
                        break CLOSE_DAEMON_GONE;
                    }
                };
                if let Some(frame) = frame
                    && ws_tx.send(text(&frame)).await.is_err()
                {
                    return;
                }
            }
            incoming = ws_rx.next() => {
                let raw = match incoming {
                    Some(Ok(Message::Text(t))) => t,
                    // Not JSON text: answered `bad_request` like any frame that is no request.
                    Some(Ok(Message::Binary(_))) => Utf8Bytes::from_static(""),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                };
                match forward(raw.as_str(), &mut link, &mut ids).await {
                    Ok(None) => {}
                    Ok(Some(answer)) => {
                        if ws_tx.send(text(&answer)).await.is_err() {
                            return;
                        }
                    }
                    Err(why) => {
                        tracing::info!(%why, "web bubble: writing to the daemon failed");
                        break CLOSE_DAEMON_GONE;
                    }
                }
            }
        }
    };
    let _ = ws_tx.send(close(code, "daemon connection ended")).await;
}

/// Connects and limits the connection; the daemon must accept the limit, and answer that it
/// keeps exactly the limit asked for.
async fn open_link<C: DaemonConnector>(connector: &C) -> Result<C::Link, String> {
    let mut link = connector.connect().await?;
    let refused = |why: String| {
        format!(
            "the daemon did not accept the web bubble's access limits ({why}); update Sayri so the daemon and `sayri web` are the same version"
        )
    };
    let asked = hello();
    let map = params::to_map(&asked).map_err(|e| refused(e.to_string()))?;
    let answer = link
        .call(names::cmd::CLIENT_HELLO, map)
        .await
        .map_err(|e| refused(e.message))?;
    let kept = reply::decode::<ClientHelloParams>(answer).map_err(|e| refused(e.to_string()))?;
    let mut allow = asked.allow.clone();
    allow.sort();
    if kept
        != (ClientHelloReply {
            access: asked.access,
            allow,
        })
    {
        return Err(refused(format!(
            "it kept {:?} and {:?}",
            kept.access, kept.allow
        )));
    }
    Ok(link)
}

/// The page's `ready` event: the daemon's greeting, read as its status type.
fn ready_frame(info: Value) -> Result<Value, String> {
    let info = reply::decode::<StatusParams>(info).map_err(|e| e.to_string())?;
    event::frame(&Ready { info })
        .and_then(|f| serde_json::to_value(&f))
        .map_err(|e| e.to_string())
}

/// The page's response: the daemon's, with the page's id put back. `None` for a response the
/// page did not ask for.
fn page_response(resp: Response, ids: &mut HashMap<u64, Value>) -> Option<Value> {
    let page_id = ids.remove(&resp.id().as_u64()?)?;
    let mut value = serde_json::to_value(&resp).ok()?;
    value["id"] = page_id;
    Some(value)
}

/// Handles one page frame: forwards an allowed request (`Ok(None)`), or answers it here
/// (`Ok(Some(answer))`). `Err` when writing to the daemon failed.
async fn forward<L: DaemonLink>(
    raw: &str,
    link: &mut L,
    ids: &mut HashMap<u64, Value>,
) -> Result<Option<Value>, String> {
    let req = match parse_page_request(raw) {
        Ok(req) => req,
        Err(answer) => return Ok(Some(answer)),
    };
    if !ALLOWED_COMMANDS.contains(&req.cmd.as_str()) {
        tracing::warn!(cmd = %req.cmd, "web bubble: refused a command outside the allow-list");
        let err = ProtocolError::new(
            ErrorCode::Denied,
            format!(
                "{} is not available in the web bubble; use the `sayri` command line for it",
                req.cmd
            ),
        );
        return Ok(Some(response_value(Response::err(err, req.id))));
    }
    let daemon_id = link.send(&req.cmd, req.params).await?;
    ids.insert(daemon_id, req.id);
    Ok(None)
}

/// Parses a page frame as a request, or gives the `bad_request` answer.
fn parse_page_request(raw: &str) -> Result<Request, Value> {
    let bad = |why: &str, id: Value| {
        response_value(Response::err(
            ProtocolError::new(ErrorCode::BadRequest, why.to_string()),
            id,
        ))
    };
    let value: Value = serde_json::from_str(raw)
        .map_err(|_| bad("a frame must be one JSON request object", Value::Null))?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let Some(obj) = value.as_object() else {
        return Err(bad("a frame must be one JSON request object", id));
    };
    let Some(cmd) = obj.get("cmd").and_then(Value::as_str) else {
        return Err(bad("the request has no string `cmd`", id));
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            let mut m = Map::new();
            m.insert("value".into(), other.clone());
            m
        }
    };
    Ok(Request::new(cmd, params, id))
}

fn response_value(resp: Response) -> Value {
    serde_json::to_value(&resp).unwrap_or(Value::Null)
}

fn error_event(why: &str) -> Value {
    event::frame(&turns::Error::new(why))
        .and_then(|f| serde_json::to_value(&f))
        .unwrap_or(Value::Null)
}

fn text(v: &Value) -> Message {
    Message::Text(Utf8Bytes::from(v.to_string()))
}

fn close(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_has_no_settings_secret_skill_or_stop_command() {
        for cmd in [
            names::cmd::CONFIG_SET,
            names::cmd::VAULT_SET,
            names::cmd::VAULT_DELETE,
            names::cmd::VAULT_LIST,
            names::cmd::SKILLS_INSTALL,
            names::cmd::PERMISSION_FORGET,
            names::cmd::AGENT_SAVE,
            names::cmd::AGENT_DELETE,
            names::cmd::SESSION_DELETE,
            names::cmd::QUIT,
            names::cmd::CLIENT_HELLO,
            names::cmd::ASK,
        ] {
            assert!(!ALLOWED_COMMANDS.contains(&cmd), "{cmd}");
        }
        for cmd in HELLO_ALLOW {
            assert!(ALLOWED_COMMANDS.contains(cmd));
        }
    }

    #[test]
    fn page_frames_that_are_not_requests_are_answered_bad_request() {
        for raw in ["", "[1]", "{\"id\": 3}", "{\"cmd\": 1, \"id\": 3}"] {
            let answer = parse_page_request(raw).unwrap_err();
            assert_eq!(answer["code"], "bad_request", "{raw}");
        }
        let answer = parse_page_request("{\"cmd\": 1, \"id\": 3}").unwrap_err();
        assert_eq!(answer["id"], 3);
        let req = parse_page_request("{\"cmd\": \"ping\", \"id\": \"a\"}").unwrap();
        assert_eq!((req.cmd.as_str(), &req.id), ("ping", &Value::from("a")));
    }
}
