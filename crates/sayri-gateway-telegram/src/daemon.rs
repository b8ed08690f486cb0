//! The gateway's side of the legacy socket: one connection per message, the request line out,
//! the NDJSON events back until the final one.
//!
//! The socket must be served by our own uid (`SO_PEERCRED`); otherwise nothing is sent — a
//! process of another user could be impersonating the daemon to read messages.

use sayri_protocol::legacy::{GatewayReport, IncomingMessage, ReplyEvent, ReportAnswer};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the daemon could not be asked.
#[derive(Debug)]
pub struct LinkError(pub String);

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The daemon's legacy socket.
#[derive(Debug, Clone)]
pub struct DaemonLink {
    /// `sayri.sock`.
    pub socket: PathBuf,
}

impl DaemonLink {
    async fn connect(&self) -> Result<UnixStream, LinkError> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(&self.socket))
            .await
            .map_err(|_| LinkError(format!("{} did not accept in time", self.socket.display())))?
            .map_err(|e| {
                LinkError(format!(
                    "cannot reach the Sayri daemon at {}: {e}",
                    self.socket.display()
                ))
            })?;
        let me = nix::unistd::geteuid().as_raw();
        match stream.peer_cred() {
            Ok(c) if c.uid() == me => Ok(stream),
            Ok(c) => Err(LinkError(format!(
                "{} is served by uid {}, not by us (uid {me}); nothing was sent",
                self.socket.display(),
                c.uid()
            ))),
            Err(e) => Err(LinkError(format!(
                "cannot check who serves {}: {e}; nothing was sent",
                self.socket.display()
            ))),
        }
    }

    /// Sends one request line and returns the reader of the answer.
    async fn request(&self, line: Value) -> Result<BufReader<UnixStream>, LinkError> {
        let mut stream = self.connect().await?;
        let mut bytes = serde_json::to_vec(&line).map_err(|e| LinkError(e.to_string()))?;
        bytes.push(b'\n');
        stream
            .write_all(&bytes)
            .await
            .map_err(|e| LinkError(format!("cannot send to the daemon: {e}")))?;
        Ok(BufReader::new(stream))
    }

    /// Sends `msg` and hands every event to `on_event` until the final one, which is returned.
    ///
    /// # Errors
    /// The daemon cannot be reached, or the connection ended before a final event.
    pub async fn send(
        &self,
        msg: &IncomingMessage,
        mut on_event: impl FnMut(&ReplyEvent),
    ) -> Result<ReplyEvent, LinkError> {
        let mut line = serde_json::to_value(msg).map_err(|e| LinkError(e.to_string()))?;
        line["type"] = "INCOMING_MSG".into();
        // The turn's events are wanted as they come (`typing…`), not only the final one.
        line["stream"] = true.into();
        let mut reader = self.request(line).await?;
        let mut buf = String::new();
        loop {
            buf.clear();
            let n = reader
                .read_line(&mut buf)
                .await
                .map_err(|e| LinkError(format!("lost the daemon's answer: {e}")))?;
            if n == 0 {
                return Err(LinkError(
                    "the daemon closed the connection before the answer ended".into(),
                ));
            }
            let Ok(ev) = serde_json::from_str::<ReplyEvent>(buf.trim_end()) else {
                continue; // an event this gateway does not know
            };
            if ev.is_final() {
                return Ok(ev);
            }
            on_event(&ev);
        }
    }

    /// Reports something the person at the desktop should know (e.g. a reply that could not
    /// be delivered).
    ///
    /// # Errors
    /// The daemon cannot be reached or refused it.
    pub async fn report(&self, report: &GatewayReport) -> Result<(), LinkError> {
        let mut line = serde_json::to_value(report).map_err(|e| LinkError(e.to_string()))?;
        line["type"] = "GATEWAY_REPORT".into();
        let mut reader = self.request(line).await?;
        let mut buf = String::new();
        reader
            .read_line(&mut buf)
            .await
            .map_err(|e| LinkError(format!("lost the daemon's answer: {e}")))?;
        match serde_json::from_str::<ReportAnswer>(buf.trim_end()) {
            Ok(ReportAnswer { ok: true, .. }) => Ok(()),
            _ => Err(LinkError(format!(
                "the daemon refused the report: {}",
                buf.trim_end()
            ))),
        }
    }
}
