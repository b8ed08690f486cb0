//! `sayri web [--port N] [--open]`: the web bubble (`sayri-web`) as a client of the daemon.
//!
//! The server listens on `127.0.0.1` only. Its login address holds this launch's secret; it is
//! printed on stdout and written to `sayri-web.url` (mode 0600) in the runtime directory, so a
//! service started by systemd can be opened with `xdg-open "$(cat …/sayri-web.url)"`.
//! `--open` never puts the secret on a command line (other users can read those in `/proc`):
//! it writes a 0600 page holding a one-time ticket next to the socket and opens that file.

use sayri_client::autostart::connect_or_start;
use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_protocol::{ProtocolError, ServerMessage};
use sayri_web::{DaemonConnector, DaemonLink, WebServer};
use serde_json::{Map, Value};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Options of `sayri web`.
#[derive(Debug, clap::Args)]
pub(crate) struct WebArgs {
    /// Port on 127.0.0.1 to listen on (0 = any free port).
    #[arg(long, default_value_t = sayri_web::DEFAULT_PORT)]
    pub port: u16,
    /// Open the bubble in the default browser (`xdg-open`).
    #[arg(long)]
    pub open: bool,
}

/// Connects the bridge to the daemon's socket with the CLI's client (same checks: the
/// listener must be our own uid, the daemon must greet).
pub(crate) struct SocketConnector {
    socket: PathBuf,
}

impl DaemonConnector for SocketConnector {
    type Link = Link;

    async fn connect(&self) -> Result<Link, String> {
        Client::connect(&self.socket, CONNECT_TIMEOUT)
            .await
            .map(Link)
            .map_err(|e| e.to_string())
    }
}

fn protocol_error(e: ClientError) -> ProtocolError {
    match e {
        ClientError::Remote(p) => p,
        other => ProtocolError::internal(other.to_string()),
    }
}

/// The bridge's connection to the daemon: a [`Client`].
pub struct Link(Client);

impl DaemonLink for Link {
    fn ready_info(&self) -> Value {
        self.0.ready_info.clone()
    }

    async fn call(
        &mut self,
        cmd: &str,
        params: Map<String, Value>,
    ) -> Result<Value, ProtocolError> {
        Client::call(
            &mut self.0,
            cmd,
            params,
            sayri_client::client::REQUEST_TIMEOUT,
            |_| {},
        )
        .await
        .map_err(protocol_error)
    }

    async fn send(&mut self, cmd: &str, params: Map<String, Value>) -> Result<u64, String> {
        Client::send(&mut self.0, cmd, params)
            .await
            .map_err(|e| e.to_string())
    }

    async fn next_message(&mut self) -> Result<ServerMessage, String> {
        Client::next_message(&mut self.0)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Runs `sayri web` until SIGINT or SIGTERM.
pub(crate) async fn run(paths: &Paths, allow_start: bool, args: &WebArgs) -> anyhow::Result<()> {
    // The daemon is started (or found) first, like every client command; later reconnections
    // of the bridge never start one.
    drop(connect_or_start(paths, allow_start).await?);
    let server = WebServer::bind(args.port).await?;
    let url = server.login_url();
    let url_file = paths.runtime_dir.join("sayri-web.url");
    write_private(&url_file, &format!("{url}\n"))?;
    println!("Sayri web bubble on http://{}/", server.local_addr());
    println!("Open this address once to log in (it holds this launch's secret):");
    println!("{url}");
    let _ = std::io::stdout().flush();
    if args.open {
        open_in_browser(paths, &server)?;
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    let connector = SocketConnector {
        socket: paths.socket(),
    };
    let served = server.serve(connector, shutdown).await;
    let _ = std::fs::remove_file(&url_file);
    let _ = std::fs::remove_file(open_page(paths));
    served?;
    Ok(())
}

async fn stop_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM/SIGINT; stop `sayri web` with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    shutdown.cancel();
}

/// Writes `text` to `path`, readable by the user only (replacing an older file).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

fn open_page(paths: &Paths) -> PathBuf {
    paths.runtime_dir.join("sayri-web-open.html")
}

/// Opens the bubble through a 0600 page that forwards to a one-time login address.
fn open_in_browser(paths: &Paths, server: &WebServer) -> anyhow::Result<()> {
    let page = open_page(paths);
    let ticket = server.open_ticket();
    write_private(
        &page,
        &format!(
            "<!doctype html><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
             <meta http-equiv=\"refresh\" content=\"0; url={ticket}\"><title>Sayri</title>\
             <p>Opening Sayri… If nothing happens, run <code>sayri web</code> again and open the address it prints.</p>\n"
        ),
    )?;
    match std::process::Command::new("xdg-open")
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reaped in the background so it never lingers as a zombie.
            std::thread::spawn(move || child.wait());
            Ok(())
        }
        Err(e) => {
            eprintln!("sayri: cannot run xdg-open ({e}); open the address above in your browser");
            Ok(())
        }
    }
}
