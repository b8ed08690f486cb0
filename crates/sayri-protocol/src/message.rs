//! The three message shapes of the wire protocol: requests, responses and events.
//!
//! * Request (client → daemon): `{"cmd": NAME, "params": {...}, "id": ANY}`.
//! * Response (daemon → the requesting client): `{"ok": true, "result": JSON, "id": ID}` or
//!   `{"ok": false, "error": "human sentence", "code": "machine_code", "id": ID}`.
//! * Event (daemon → every client): `{"event": NAME, ...payload}`.
//!
//! Clients tell responses from events by the presence of `"event"`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A request from a client.
///
/// `params` is always an object after decoding: a missing or `null` `params` becomes `{}`, and a
/// non-object value `v` becomes `{"value": v}` (the original Sayri's rule). `id` is echoed verbatim
/// in the response; a missing `id` is `null`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// Command name, one of [`crate::names::cmd::ALL`] (others get `unknown_command`).
    pub cmd: String,
    /// Parameters (always an object).
    pub params: Map<String, Value>,
    /// Correlation id chosen by the client, any JSON value.
    pub id: Value,
}

impl Request {
    /// A request with the given command, parameters and id.
    pub fn new(cmd: impl Into<String>, params: Map<String, Value>, id: impl Into<Value>) -> Self {
        Request {
            cmd: cmd.into(),
            params,
            id: id.into(),
        }
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut obj = Map::<String, Value>::deserialize(d)?;
        let id = obj.remove("id").unwrap_or(Value::Null);
        let cmd = match obj.remove("cmd") {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(_) => return Err(D::Error::custom("\"cmd\" must be a non-empty string")),
            None => return Err(D::Error::custom("missing \"cmd\"")),
        };
        let params = match obj.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                m
            }
        };
        Ok(Request { cmd, params, id })
    }
}

/// Machine-readable error class carried in `code` of an error response.
///
/// Serialised in snake_case (`"not_implemented"`). Unknown codes from a newer daemon deserialise
/// as [`ErrorCode::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The command is part of the protocol but this daemon does not implement it yet.
    NotImplemented,
    /// The command name is not part of the protocol.
    UnknownCommand,
    /// The line was not a JSON object with a string `cmd`.
    BadRequest,
    /// The line exceeded the 1 MiB limit and was discarded.
    LineTooLong,
    /// A parameter is missing or has the wrong type or value.
    InvalidParams,
    /// A configuration key does not exist.
    UnknownSetting,
    /// `sayri.toml` on disk is not valid (the message names the file and line); nothing was
    /// changed.
    ConfigInvalid,
    /// The daemon is busy (e.g. a turn is already running).
    Busy,
    /// The request did not finish in time.
    Timeout,
    /// Something referenced by id does not exist.
    NotFound,
    /// Refused by policy (permissions, sandbox).
    Denied,
    /// The command is implemented, but a part it needs is switched off or not installed on
    /// this machine (speech input without its models); the message says what to install or
    /// switch on.
    Unavailable,
    /// A bug or an I/O failure inside the daemon.
    Internal,
    /// A code this version does not know.
    #[serde(other)]
    Other,
}

impl ErrorCode {
    /// The wire spelling, e.g. `"not_implemented"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotImplemented => "not_implemented",
            ErrorCode::UnknownCommand => "unknown_command",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::InvalidParams => "invalid_params",
            ErrorCode::UnknownSetting => "unknown_setting",
            ErrorCode::ConfigInvalid => "config_invalid",
            ErrorCode::Busy => "busy",
            ErrorCode::Timeout => "timeout",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Denied => "denied",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Internal => "internal",
            ErrorCode::Other => "other",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error a command handler returns: a class and a human sentence that says what happened and
/// what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// Machine class.
    pub code: ErrorCode,
    /// Human-readable message (shown to users as is).
    pub message: String,
}

impl ProtocolError {
    /// An error of class `code` with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProtocolError {
            code,
            message: message.into(),
        }
    }
    /// `invalid_params` with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }
    /// `internal` with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ProtocolError {}

/// A response to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// `{"ok": true, "result": ..., "id": ...}`.
    Ok {
        /// The command's result.
        result: Value,
        /// The request's id.
        id: Value,
    },
    /// `{"ok": false, "error": ..., "code": ..., "id": ...}`.
    Err {
        /// What went wrong, for humans.
        error: ProtocolError,
        /// The request's id (`null` when it could not be recovered).
        id: Value,
    },
}

impl Response {
    /// A success response.
    pub fn ok(result: Value, id: Value) -> Self {
        Response::Ok { result, id }
    }
    /// An error response.
    pub fn err(error: ProtocolError, id: Value) -> Self {
        Response::Err { error, id }
    }
    /// The echoed id.
    pub fn id(&self) -> &Value {
        match self {
            Response::Ok { id, .. } | Response::Err { id, .. } => id,
        }
    }
    /// `Ok(result)` or `Err(error)`.
    pub fn into_result(self) -> Result<Value, ProtocolError> {
        match self {
            Response::Ok { result, .. } => Ok(result),
            Response::Err { error, .. } => Err(error),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct ResponseWire {
    ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<ErrorCode>,
    #[serde(default)]
    id: Value,
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Response::Ok { result, id } => ResponseWire {
                ok: true,
                result: Some(result.clone()),
                error: None,
                code: None,
                id: id.clone(),
            },
            Response::Err { error, id } => ResponseWire {
                ok: false,
                result: None,
                error: Some(error.message.clone()),
                code: Some(error.code),
                id: id.clone(),
            },
        };
        wire.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Response {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ResponseWire::deserialize(d)?;
        Ok(if w.ok {
            Response::Ok {
                result: w.result.unwrap_or(Value::Null),
                id: w.id,
            }
        } else {
            Response::Err {
                error: ProtocolError::new(
                    w.code.unwrap_or(ErrorCode::Other),
                    w.error.unwrap_or_else(|| "unknown error".into()),
                ),
                id: w.id,
            }
        })
    }
}

/// A broadcast event: `{"event": NAME, ...payload}`. Payload keys must not include `"event"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Event name, one of [`crate::names::event::ALL`].
    pub event: String,
    /// The other top-level fields.
    pub payload: Map<String, Value>,
}

impl Event {
    /// An event with a payload.
    pub fn new(event: impl Into<String>, payload: Map<String, Value>) -> Self {
        Event {
            event: event.into(),
            payload,
        }
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.payload.len() + 1))?;
        m.serialize_entry("event", &self.event)?;
        for (k, v) in &self.payload {
            if k != "event" {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut payload = Map::<String, Value>::deserialize(d)?;
        match payload.remove("event") {
            Some(Value::String(event)) => Ok(Event { event, payload }),
            _ => Err(D::Error::custom("missing string \"event\"")),
        }
    }
}

/// What a daemon sends: a response or an event.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    /// A response (has `ok`/`id`).
    Response(Response),
    /// A broadcast event (has `event`).
    Event(Event),
}

impl<'de> Deserialize<'de> for ServerMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("event").is_some() {
            Event::deserialize(v)
                .map(ServerMessage::Event)
                .map_err(D::Error::custom)
        } else {
            Response::deserialize(v)
                .map(ServerMessage::Response)
                .map_err(D::Error::custom)
        }
    }
}
