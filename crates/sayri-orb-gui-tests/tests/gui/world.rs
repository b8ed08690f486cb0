//! A test world: private Sayri directories, the scripted model server (`sayri-testkit`), a real
//! daemon process (this test executable in the `sayri` role) and the orb under test.
//!
//! The scripted model: a request containing `<cmd>X</cmd>` gets one fenced bash block running
//! `X`; `case49-command` gets the command with hidden terminal controls from the control-chars
//! case; a request after a command's observation gets `Finished: the command ran.`; anything
//! else gets a markdown answer streamed in pieces 600 ms apart.

use super::harness::wait_until;
use gtk::prelude::*;
use sayri_orb::link::{DaemonStarter, LinkOptions};
use sayri_orb::ui::{OrbApp, Source};
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Environment variable that makes this executable act as `sayri` (value `sayri`) or as
/// `sayri-orb` (value `orb`).
pub const ROLE_VAR: &str = "SAYRI_ORB_TEST_ROLE";

/// The streamed answer's pieces and their concatenation.
pub const ANSWER_PIECES: [&str; 4] = [
    "Hello from the **scripted** model.",
    "\n\n- first point",
    "\n- second point",
    "\n\nThat is all.",
];
/// Plain text of the finished answer's last paragraph.
pub const ANSWER_END: &str = "That is all.";

const TITLE_PROMPT: &str = "Write an ultra-short title";

/// The command of the control-chars case: a harmless echo, a hidden `rm -rf`, and cursor
/// movements that would draw over it on a terminal.
pub fn case49_command() -> String {
    let hex = include_str!("fixtures/49-command.hex");
    let bytes = decode_hex(hex);
    String::from_utf8(bytes).expect("the fixture is UTF-8")
}

/// Bytes of a hex fixture (whitespace ignored).
pub fn decode_hex(hex: &str) -> Vec<u8> {
    let digits: Vec<u8> = hex.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("00"), 16).unwrap_or(0))
        .collect()
}

fn content(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn reply_for(req: &RecordedRequest) -> Reply {
    let body = req.json().unwrap_or(Value::Null);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages
        .first()
        .is_some_and(|m| content(m).starts_with(TITLE_PROMPT))
    {
        return Reply::sse(sse::content_stream(&["Orb test"]));
    }
    let last = messages.last().map(content).unwrap_or_default();
    if last.contains("[Command") {
        return Reply::sse(sse::content_stream(&["Finished: the command ran."]));
    }
    let command = if last.contains("case49-command") {
        Some(case49_command())
    } else {
        last.split_once("<cmd>")
            .and_then(|(_, rest)| rest.split_once("</cmd>"))
            .map(|(c, _)| c.to_string())
    };
    match command {
        Some(c) => Reply::sse(sse::content_stream(&[
            "I will run it.\n```bash\n",
            &c,
            "\n```\n",
        ])),
        None => Reply::sse(sse::content_stream(&ANSWER_PIECES))
            .with_event_writes()
            .with_write_delay(Duration::from_millis(600)),
    }
}

/// The scripted model server with the runtime that drives it.
pub struct Model {
    pub llm: FakeLlm,
    _rt: tokio::runtime::Runtime,
}

impl Model {
    fn start() -> Model {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let llm = rt
            .block_on(FakeLlm::start(Script::from_fn(reply_for)))
            .expect("scripted model server");
        Model { llm, _rt: rt }
    }
}

/// Private directories, the model, and at most one daemon.
pub struct World {
    pub dir: tempfile::TempDir,
    pub model: Model,
    pub daemon: Option<Child>,
}

impl World {
    /// A new world with config for agent `orb` (level 3, `echo *` allowed, `touch *` and
    /// `rm *` ask) and the scripted model; no daemon yet.
    pub fn new() -> World {
        let dir = tempfile::Builder::new()
            .prefix("syorb")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let world = World {
            dir,
            model: Model::start(),
            daemon: None,
        };
        world.write_config();
        world
    }

    fn write_config(&self) {
        let config = self.config_dir();
        std::fs::create_dir_all(config.join("agents")).expect("config dir");
        std::fs::write(
            config.join("sayri.toml"),
            format!(
                "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
                 [permissions]\nask_timeout = 60\npolicy_files = []\n\n\
                 [agent]\ndefault_agent = \"orb\"\n",
                self.model.llm.base_url()
            ),
        )
        .expect("sayri.toml");
        let profile = json!({
            "id": "orb",
            "name": "Orb Tester",
            "sandbox": {
                "level": "LEVEL_3_HOST_USER",
                "ask_before_run": true,
                "timeout_seconds": 10,
                "blocked_binaries": [],
                "permission_rules": [
                    {"action": "shell", "resource": "echo *", "effect": "allow"},
                    {"action": "shell", "resource": "touch *", "effect": "ask"},
                    {"action": "shell", "resource": "rm *", "effect": "ask"}
                ]
            }
        });
        std::fs::write(
            config.join("agents/orb.json"),
            serde_json::to_string_pretty(&profile).expect("json"),
        )
        .expect("agent profile");
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().join("config")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    pub fn socket(&self) -> PathBuf {
        self.state_dir().join("sayri-daemon.sock")
    }

    /// This executable as `sayri`, with the world's directories.
    pub fn sayri(&self) -> Command {
        let mut c = Command::new(std::env::current_exe().expect("test executable"));
        for (k, v) in self.sayri_env() {
            c.env(k, v);
        }
        c.env_remove("XDG_RUNTIME_DIR").stdin(Stdio::null());
        c
    }

    fn sayri_env(&self) -> Vec<(String, String)> {
        vec![
            (ROLE_VAR.into(), "sayri".into()),
            (
                "SAYRI_CONFIG_DIR".into(),
                self.config_dir().display().to_string(),
            ),
            (
                "SAYRI_STATE_DIR".into(),
                self.state_dir().display().to_string(),
            ),
            ("HOME".into(), self.home().display().to_string()),
            ("RUST_LOG".into(), "info".into()),
        ]
    }

    /// Runs `sayri ARGS` to completion.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.sayri().args(args).output().expect("run sayri")
    }

    /// Starts `sayri daemon` (foreground child) and waits until its socket greets.
    pub fn start_daemon(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))
            .expect("daemon log");
        let child = self
            .sayri()
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start daemon");
        self.daemon = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if greets(&self.socket()) {
                return;
            }
            if let Some(Ok(Some(st))) = self.daemon.as_mut().map(Child::try_wait) {
                panic!("daemon exited early ({st}): {}", self.daemon_log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("daemon did not start: {}", self.daemon_log());
    }

    /// Stops the daemon with SIGTERM (SIGKILL after 10 s) and waits for it.
    pub fn stop_daemon(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// The `sayri-orb` program (this executable in the `orb` role) on X display `display`,
    /// with the world's directories, not starting the daemon and without a tray icon; its
    /// log goes to `orb.log` in the world's directory.
    pub fn orb_program(&self, display: &str) -> Command {
        use std::os::unix::process::CommandExt as _;
        let mut c = Command::new(std::env::current_exe().expect("test executable"));
        // Named as the installed program, so its windows carry the program's `WM_CLASS`.
        c.arg0("sayri-orb");
        for (k, v) in self.sayri_env() {
            c.env(k, v);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("orb.log"))
            .expect("orb log");
        c.env(ROLE_VAR, "orb")
            .env("DISPLAY", display)
            .env("GDK_BACKEND", "x11")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("XDG_RUNTIME_DIR")
            .args(["--no-start", "--no-tray"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        c
    }

    /// What the orb program logged (see [`World::orb_program`]).
    pub fn orb_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("orb.log")).unwrap_or_default()
    }

    /// The orb under test, connected to this world's socket and shown. With `start`, it may
    /// start the daemon itself (by running `sayri ping`, as the real binary does).
    pub fn orb(&self, start: bool) -> Rc<OrbApp> {
        let starter = start.then(|| DaemonStarter {
            program: std::env::current_exe().expect("test executable"),
            args: vec!["ping".into()],
            envs: self
                .sayri_env()
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        });
        let app = OrbApp::new(
            None,
            Source::Daemon(LinkOptions {
                socket: self.socket(),
                starter,
            }),
        );
        app.window.present();
        app
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.stop_daemon();
        // A daemon started by the orb's autostart is detached: stop it through the CLI.
        if greets(&self.socket()) {
            let _ = self.cli(&["quit"]);
        }
    }
}

/// True when a daemon greets on `socket`.
pub fn greets(socket: &Path) -> bool {
    use std::io::{BufRead, BufReader};
    let Ok(s) = std::os::unix::net::UnixStream::connect(socket) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).is_ok() && line.contains("\"ready\"")
}

/// Waits until the orb shows it is connected (no banner, entry usable).
pub fn wait_connected(app: &OrbApp) {
    let ok = wait_until(Duration::from_secs(20), || {
        app.model().link == sayri_orb::view::LinkState::Connected
            && super::harness::one::<gtk::Entry>(&app.window, "talk-entry").is_sensitive()
    });
    assert!(ok, "the orb did not connect: {:?}", app.model().link);
}

/// Types `text` into the request entry and presses Enter.
pub fn type_request(app: &OrbApp, text: &str) {
    let entry: gtk::Entry = super::harness::one(&app.window, "talk-entry");
    entry.grab_focus();
    entry.set_text(text);
    entry.emit_activate();
    assert_eq!(
        entry.text(),
        "",
        "Enter sends the text and clears the entry"
    );
}
