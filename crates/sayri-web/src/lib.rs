//! The web bubble: a small chat page served on loopback, bridged to the Sayri daemon.
//!
//! [`WebServer::bind`] listens on `127.0.0.1:PORT` only and [`WebServer::serve`] answers:
//!
//! * `GET /?s=SECRET` — exchanges the per-launch secret for a cookie and redirects to `/`
//!   (so the secret leaves the address bar); `GET /?open=TICKET` does the same with a one-time
//!   ticket from [`WebServer::open_ticket`] (what `--open` hands to the browser through a 0600
//!   file, so the secret itself never appears in a command line);
//! * `GET /`, `/app.js`, `/style.css`, `/icon.svg` — the page, embedded in the binary;
//! * `GET /ws` — a WebSocket carrying the daemon's protocol as JSON text frames: requests
//!   `{"cmd", "params", "id"}` from the page, responses and events from the daemon
//!   ([`bridge`]).
//!
//! Every request passes [`guard`] first: the `Host` header must name this server on loopback
//! (DNS-rebinding defence), the cookie must hold the secret, and the WebSocket upgrade must come
//! from this server's own origin. Every response carries a strict Content-Security-Policy and no
//! CORS header.
//!
//! The bridge is a client of the daemon like any other: the binary passes a
//! [`bridge::DaemonConnector`] (the `sayri` client over the Unix socket). Only the commands of
//! [`bridge::ALLOWED_COMMANDS`] are forwarded, and the bridge first limits its daemon
//! connection with `client_hello` ([`bridge::HELLO_ALLOW`]), so the daemon refuses the rest too.

pub mod assets;
pub mod bridge;
pub mod guard;
pub mod secret;

use crate::guard::Gate;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use bridge::{DaemonConnector, DaemonLink};
pub use secret::Secret;

/// The port `sayri web` uses when none is given.
pub const DEFAULT_PORT: u16 = 8765;

/// Why the server could not start, phrased for the user.
#[derive(Debug)]
pub struct BindError(pub String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BindError {}

/// A bound, not yet serving web bubble.
pub struct WebServer {
    listener: TcpListener,
    gate: Arc<Gate>,
}

impl WebServer {
    /// Binds `127.0.0.1:port` (port 0 = any free port) with a fresh random secret.
    ///
    /// # Errors
    /// The port is taken or cannot be bound; the message names it and what to do.
    pub async fn bind(port: u16) -> Result<WebServer, BindError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            BindError(format!(
                "cannot listen on {addr}: {e}; choose another port with `sayri web --port N` (is another `sayri web` running?)"
            ))
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| BindError(format!("cannot read the bound address: {e}")))?;
        Ok(WebServer {
            listener,
            gate: Arc::new(Gate::new(bound.port(), Secret::random())),
        })
    }

    /// The address the server listens on (always on `127.0.0.1`).
    pub fn local_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.gate.port()))
    }

    /// The login address to hand the user once: `http://127.0.0.1:PORT/?s=SECRET`.
    pub fn login_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?s={}",
            self.gate.port(),
            self.gate.secret().expose()
        )
    }

    /// A one-time login address for `--open`: `http://127.0.0.1:PORT/?open=TICKET`, valid for
    /// one use within [`guard::OPEN_TICKET_TTL`]. Unlike [`WebServer::login_url`] it is accepted
    /// from any navigation (a local file that redirects, as `--open` uses), because it dies at
    /// its first use. Each call replaces the previous ticket.
    pub fn open_ticket(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?open={}",
            self.gate.port(),
            self.gate.new_open_ticket().expose()
        )
    }

    /// Serves until `shutdown` is cancelled; open WebSockets are closed then too.
    ///
    /// # Errors
    /// Only an I/O failure of the listener.
    pub async fn serve<C: DaemonConnector>(
        self,
        connector: C,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let app = guard::router(self.gate, Arc::new(connector), shutdown.clone());
        axum::serve(self.listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
    }
}
