//! The web bubble: a small chat page served on loopback, bridged to the Sayri daemon.
//!
//! [`WebServer::bind`] listens on `127.0.0.1:PORT` and `[::1]:PORT`, both or none
//! ([`loopback`]), and [`WebServer::serve`] answers:
//!
//! * `GET /?s=SECRET` — trades the per-launch secret, once, for a separate random session
//!   cookie and redirects to `/` (so the secret leaves the address bar; the address left in the
//!   browser's history logs no one in again); `GET /?open=TICKET` does the same with a one-time
//!   ticket from [`WebServer::open_ticket`] (what `--open` hands to the browser through a 0600
//!   file, so the secret itself never appears in a command line);
//! * `GET /`, `/app.js`, `/style.css`, `/icon.svg` — the page, embedded in the binary;
//! * `GET /ws` — a WebSocket carrying the daemon's protocol as JSON text frames: requests
//!   `{"cmd", "params", "id"}` from the page, responses and events from the daemon
//!   ([`bridge`]).
//!
//! Every request passes [`guard`] first: the `Host` header must name this server on loopback
//! (DNS-rebinding defence), the cookie must hold a session this server issued, and the
//! WebSocket upgrade must come from this server's own origin. Every response carries a strict Content-Security-Policy and no
//! CORS header.
//!
//! The bridge is a client of the daemon like any other: the binary passes a
//! [`bridge::DaemonConnector`] (the `sayri` client over the Unix socket). Only the commands of
//! [`bridge::ALLOWED_COMMANDS`] are forwarded, and the bridge first limits its daemon
//! connection with `client_hello` ([`bridge::HELLO_ALLOW`]), so the daemon refuses the rest too.

pub mod assets;
pub mod bridge;
pub mod guard;
pub mod loopback;
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
    listeners: Vec<TcpListener>,
    gate: Arc<Gate>,
}

impl WebServer {
    /// Binds `127.0.0.1:port` and `[::1]:port` (port 0 = a port free on both) with a fresh
    /// random secret (see [`loopback`]). Must be called inside a Tokio runtime.
    ///
    /// # Errors
    /// The port, or one of its two addresses, is taken or cannot be bound; the message names
    /// the address and what to do.
    pub async fn bind(port: u16) -> Result<WebServer, BindError> {
        let bound = loopback::bind_both(port)?;
        let mut listeners = Vec::with_capacity(2);
        for l in std::iter::once(bound.v4).chain(bound.v6) {
            let l = l
                .set_nonblocking(true)
                .and_then(|()| TcpListener::from_std(l))
                .map_err(|e| BindError(format!("cannot serve on port {}: {e}", bound.port)))?;
            listeners.push(l);
        }
        Ok(WebServer {
            listeners,
            gate: Arc::new(Gate::new(bound.port, Secret::random())),
        })
    }

    /// The address to open: always `127.0.0.1`, a literal, never `localhost`.
    pub fn local_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.gate.port()))
    }

    /// Every address the server listens on (`127.0.0.1:PORT`, and `[::1]:PORT` unless the
    /// loopback interface has no IPv6).
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
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
        let serving = self.listeners.into_iter().map(|l| {
            let (app, shutdown) = (app.clone(), shutdown.clone());
            async move {
                axum::serve(l, app)
                    .with_graceful_shutdown(async move { shutdown.cancelled().await })
                    .await
            }
        });
        futures::future::try_join_all(serving).await.map(|_| ())
    }
}
