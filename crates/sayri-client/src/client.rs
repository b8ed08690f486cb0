//! A small IPC client for `sayri-daemon.sock`, reused by every CLI command.
//!
//! [`Client::connect`] connects and waits for the daemon's `ready` greeting (which also proves
//! the daemon accepted us: a refused peer is closed before any byte). [`Client::call`] sends one
//! request with a fresh numeric id and reads frames until the matching response, handing every
//! event to a callback on the way (the `ask`/`chat` commands stream `assistant_delta` this way).
//!
//! [`Client::call_with`] and [`Client::request_with`] are the typed face: they send a command's
//! params struct and read its `result` into the command's reply type (`P::Reply`), and hand
//! events over as [`AnyEvent`]; a reply or event that does not fit its type is
//! [`ClientError::Reply`] or [`ClientError::Event`]. [`Client::call`] and [`Client::request`]
//! keep the raw JSON for a client that forwards frames without reading them (the web bridge).

use sayri_protocol::event::{AnyEvent, EventError};
use sayri_protocol::ndjson::{self, Frame, LineFramer};
use sayri_protocol::reply::{self, ReplyError, runtime::StatusReply};
use sayri_protocol::{Event, Params, ProtocolError, Request, ServerMessage, names, params};
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Default time to wait for the `ready` greeting.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Default time to wait for a response.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Client-side failures, each phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens on the socket.
    #[error("Sayri daemon is not running (no listener on {socket}); start it with `sayri daemon`")]
    NotRunning {
        /// Socket path.
        socket: PathBuf,
    },
    /// Connecting failed for another reason.
    #[error("cannot connect to {socket}: {source}")]
    Connect {
        /// Socket path.
        socket: PathBuf,
        /// OS error.
        source: io::Error,
    },
    /// The socket is served by a process of another user: not our daemon (fail closed).
    #[error(
        "the socket {socket} is served by uid {uid}, not by you (uid {me}); another user may be impersonating the Sayri daemon, so nothing was sent — check who owns its directory"
    )]
    Impostor {
        /// Socket path.
        socket: PathBuf,
        /// The serving process's uid (`SO_PEERCRED`).
        uid: u32,
        /// Our effective uid.
        me: u32,
    },
    /// The daemon closed the connection before greeting us.
    #[error(
        "the daemon at {socket} closed the connection without greeting; it only accepts its own user (is it running as someone else?)"
    )]
    Refused {
        /// Socket path.
        socket: PathBuf,
    },
    /// Nothing arrived in time.
    #[error("timed out after {secs:.1} s waiting for {what}; check `{log}`")]
    Timeout {
        /// What we waited for.
        what: String,
        /// Seconds waited.
        secs: f64,
        /// Where to look.
        log: String,
    },
    /// The connection ended while waiting.
    #[error("the daemon closed the connection while waiting for {what}")]
    Closed {
        /// What we waited for.
        what: String,
    },
    /// Reading or writing failed.
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    /// The request would be a line longer than the daemon reads: it is not sent (the daemon
    /// would discard it unanswered, and the caller would wait for nothing).
    #[error(
        "the {cmd} request is {bytes} bytes, more than the {max} (1 MiB) the daemon reads; send less text",
        max = ndjson::MAX_LINE_BYTES
    )]
    TooLong {
        /// The command.
        cmd: String,
        /// The request's size in bytes, without its line break.
        bytes: usize,
    },
    /// The daemon sent something that is not protocol.
    #[error("the daemon sent an invalid frame: {0}")]
    BadFrame(String),
    /// The daemon answered `ok:false`.
    #[error("{}", .0.message)]
    Remote(ProtocolError),
    /// A `result` that is not the reply type of its command (another version of the daemon).
    #[error("{0}")]
    Reply(#[from] ReplyError),
    /// An event whose payload is not its event type (another version of the daemon).
    #[error("{0}")]
    Event(#[from] EventError),
}

/// Longest line accepted from the daemon, in bytes. The 1 MiB limit binds requests; the
/// daemon's own lines carry model text (an answer, a proposed command) that is bounded only by
/// the model stream cap (128 MiB in `sayri-llm`) and JSON escaping, and the peer was checked
/// to be our own uid.
pub(crate) const MAX_DAEMON_LINE_BYTES: usize = 512 << 20;

/// A connected client.
pub struct Client {
    rd: OwnedReadHalf,
    wr: OwnedWriteHalf,
    framer: LineFramer,
    pending: VecDeque<Frame>,
    buf: Vec<u8>,
    next_id: u64,
    socket: PathBuf,
    /// The `info` of the `ready` greeting (the daemon's status at connect time), as sent: a
    /// client that forwards it keeps members this client does not know. Read it with
    /// [`Client::ready_status`].
    pub ready_info: Value,
}

impl Client {
    /// Connects to `socket` and waits up to `timeout` for the `ready` greeting.
    pub async fn connect(socket: &Path, timeout: Duration) -> Result<Client, ClientError> {
        let stream = match UnixStream::connect(socket).await {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Err(ClientError::NotRunning {
                    socket: socket.to_path_buf(),
                });
            }
            Err(source) => {
                return Err(ClientError::Connect {
                    socket: socket.to_path_buf(),
                    source,
                });
            }
        };
        // Read before sending anything: the listener must be our own user (`SO_PEERCRED` of a
        // listening socket names whoever created it). Checked after the greeting, so a daemon
        // of another user that refuses *us* is still reported as such.
        let peer = stream.peer_cred().map_err(|source| ClientError::Connect {
            socket: socket.to_path_buf(),
            source,
        })?;
        let (rd, wr) = stream.into_split();
        let mut client = Client {
            rd,
            wr,
            framer: LineFramer::new(MAX_DAEMON_LINE_BYTES),
            pending: VecDeque::new(),
            buf: vec![0; 64 * 1024],
            next_id: 1,
            socket: socket.to_path_buf(),
            ready_info: Value::Null,
        };
        let wait = async {
            loop {
                match client.next_message().await {
                    Ok(ServerMessage::Event(ev)) if ev.event == names::event::READY => {
                        return Ok(ev.payload.get("info").cloned().unwrap_or(Value::Null));
                    }
                    Ok(_) => continue,
                    Err(ClientError::Closed { .. }) | Err(ClientError::Io(_)) => {
                        return Err(ClientError::Refused {
                            socket: socket.to_path_buf(),
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        client.ready_info =
            tokio::time::timeout(timeout, wait)
                .await
                .map_err(|_| ClientError::Timeout {
                    what: "the daemon's ready greeting".into(),
                    secs: timeout.as_secs_f64(),
                    log: socket.display().to_string(),
                })??;
        let me = crate::paths::euid();
        if peer.uid() != me {
            return Err(ClientError::Impostor {
                socket: socket.to_path_buf(),
                uid: peer.uid(),
                me,
            });
        }
        Ok(client)
    }

    /// Reads the next response or event (waits as long as needed).
    pub async fn next_message(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            while let Some(frame) = self.pending.pop_front() {
                match frame {
                    Frame::TooLong => {
                        return Err(ClientError::BadFrame("a line longer than 512 MiB".into()));
                    }
                    Frame::Line(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
                    Frame::Line(line) => {
                        return serde_json::from_slice(&line)
                            .map_err(|e| ClientError::BadFrame(e.to_string()));
                    }
                }
            }
            let n = self.rd.read(&mut self.buf).await?;
            if n == 0 {
                return Err(ClientError::Closed {
                    what: "a message".into(),
                });
            }
            let mut frames = Vec::new();
            self.framer.push(&self.buf[..n], &mut frames);
            self.pending.extend(frames);
        }
    }

    /// Sends a request without waiting; returns its id.
    pub async fn send(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let line = ndjson::encode_line(&Request::new(cmd, params, id))
            .map_err(|e| ClientError::BadFrame(e.to_string()))?;
        let bytes = line.len().saturating_sub(1);
        if bytes > ndjson::MAX_LINE_BYTES {
            return Err(ClientError::TooLong {
                cmd: cmd.to_string(),
                bytes,
            });
        }
        self.wr.write_all(&line).await?;
        Ok(id)
    }

    /// Sends `cmd` and returns its result, passing events to `on_event` meanwhile.
    /// Errors: [`ClientError::Remote`] for `ok:false`, [`ClientError::Timeout`] after `timeout`.
    pub async fn call(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
        timeout: Duration,
        mut on_event: impl FnMut(&Event),
    ) -> Result<Value, ClientError> {
        let id = self.send(cmd, params).await?;
        let want = Value::from(id);
        let socket = self.socket.display().to_string();
        let wait = async {
            loop {
                match self.next_message().await {
                    Ok(ServerMessage::Event(ev)) => on_event(&ev),
                    Ok(ServerMessage::Response(r)) if r.id() == &want => {
                        return r.into_result().map_err(ClientError::Remote);
                    }
                    Ok(ServerMessage::Response(_)) => continue,
                    Err(ClientError::Closed { .. }) => {
                        return Err(ClientError::Closed {
                            what: format!("the reply to '{cmd}'"),
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| ClientError::Timeout {
                what: format!("the reply to '{cmd}'"),
                secs: timeout.as_secs_f64(),
                log: socket,
            })?
    }

    /// [`Client::call`] ignoring events, with [`REQUEST_TIMEOUT`].
    pub async fn request(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.call(cmd, params, REQUEST_TIMEOUT, |_| {}).await
    }

    /// The `ready` greeting's `info` as the status type.
    ///
    /// # Errors
    /// The greeting does not fit [`StatusReply`] (another version of the daemon).
    pub fn ready_status(&self) -> Result<StatusReply, ReplyError> {
        reply::decode::<params::StatusParams>(self.ready_info.clone())
    }

    /// Sends command `P` with `params` and reads its reply type, passing every event to
    /// `on_event` meanwhile.
    ///
    /// # Errors
    /// As [`Client::call`]; [`ClientError::Reply`] when the result does not fit `P::Reply`,
    /// [`ClientError::Event`] when an event does not fit its type (the call is given up: the
    /// daemon is another version).
    pub async fn call_with<P: Params>(
        &mut self,
        params: &P,
        timeout: Duration,
        mut on_event: impl FnMut(&AnyEvent),
    ) -> Result<P::Reply, ClientError> {
        let map = params::to_map(params).map_err(|e| ClientError::BadFrame(e.to_string()))?;
        let mut bad_event = None;
        let result = self
            .call(P::CMD, map, timeout, |ev| match AnyEvent::read(ev) {
                Ok(e) => on_event(&e),
                Err(e) => {
                    bad_event.get_or_insert(e);
                }
            })
            .await?;
        if let Some(e) = bad_event {
            return Err(ClientError::Event(e));
        }
        Ok(reply::decode::<P>(result)?)
    }

    /// [`Client::call_with`] ignoring events, with [`REQUEST_TIMEOUT`].
    ///
    /// # Errors
    /// As [`Client::call_with`].
    pub async fn request_with<P: Params>(&mut self, params: &P) -> Result<P::Reply, ClientError> {
        self.call_with(params, REQUEST_TIMEOUT, |_| {}).await
    }

    /// Waits until the daemon closes the connection (e.g. after `quit`), up to `timeout`.
    pub async fn wait_closed(&mut self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, async {
            loop {
                if self.next_message().await.is_err() {
                    return;
                }
            }
        })
        .await
        .is_ok()
    }
}
