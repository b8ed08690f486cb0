//! A real daemon with gateway instances, shared by the gateway tests: the scripted model, an
//! agent profile, the legacy socket `sayri.sock` spoken to by a plain Unix-socket client, the
//! control socket for `gateway_*` requests, and the loopback Telegram Bot API server.

use super::scripted_turns::{Model, write_config};
use super::support::*;
use sayri_testkit::telegram::{ApiCall, BotApiServer, SentMessage};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The bot token the loopback server accepts.
pub const TOKEN: &str = "777001:AAH-gateway-test-token-Zx9";

/// `$STATE/sayri.sock` (the runtime directory is the state directory when
/// `XDG_RUNTIME_DIR` is unset).
pub fn legacy_socket(env: &Env) -> PathBuf {
    env.state_dir().join("sayri.sock")
}

/// The log of instance `id`'s gateway program.
pub fn gateway_log(env: &Env, id: &str) -> String {
    std::fs::read_to_string(env.state_dir().join(format!("logs/gateway-{id}.log")))
        .unwrap_or_default()
}

/// Writes agent `id` at `level`, running commands without asking unless `rules` say otherwise;
/// commands time out after 30 s.
pub fn write_agent(env: &Env, id: &str, level: &str, rules: Value) {
    let profile = json!({
        "id": id,
        "name": format!("Agent {id}"),
        "sandbox": {
            "level": level,
            "ask_before_run": false,
            "timeout_seconds": 30,
            "blocked_binaries": [],
            "permission_rules": rules,
        },
    });
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), profile.to_string()).unwrap();
}

/// Writes the config for `model` with agent `helper` (at `level`, allowed to run anything)
/// active.
pub fn setup(env: &Env, model: &Model, level: &str) {
    write_config(env, model, 30, "helper");
    write_agent(
        env,
        "helper",
        level,
        json!([{"action": "shell", "resource": "*", "effect": "allow"}]),
    );
}

/// One request on the control socket; returns its response.
pub fn ipc(env: &Env, cmd: &str, params: Value) -> Value {
    let mut c = RawClient::connect(&env.socket());
    c.call(cmd, params, 1)
}

/// `gateway_save` of `instance`; panics unless it was saved.
pub fn save_instance(env: &Env, instance: Value) -> Value {
    let r = ipc(env, "gateway_save", json!({"instance": instance}));
    assert_eq!(r["result"]["saved"], true, "{r}");
    r["result"].clone()
}

/// `gateway_list`'s row of instance `id`.
pub fn listed(env: &Env, id: &str) -> Value {
    let r = ipc(env, "gateway_list", json!({}));
    r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("gateway_list: {r}"))
        .iter()
        .find(|i| i["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {r}"))
}

/// A connection to `sayri.sock` after sending one request line.
pub struct Legacy {
    reader: BufReader<UnixStream>,
}

impl Legacy {
    /// Connects and writes `line` (a `\n` is added).
    pub fn send(env: &Env, line: &str) -> Legacy {
        let mut s = UnixStream::connect(legacy_socket(env)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
        s.write_all(line.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        Legacy {
            reader: BufReader::new(s),
        }
    }

    /// Sends a JSON request.
    pub fn json(env: &Env, v: &Value) -> Legacy {
        Self::send(env, &v.to_string())
    }

    /// The next line without its `\n`, `None` at the end of the answer.
    pub fn line(&mut self) -> Option<String> {
        let mut l = String::new();
        match self.reader.read_line(&mut l).unwrap() {
            0 => None,
            _ => Some(l.trim_end_matches('\n').to_string()),
        }
    }

    /// The next event, `None` at the end of the answer.
    pub fn event(&mut self) -> Option<Value> {
        self.line()
            .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
    }

    /// Every event until the daemon closes the connection.
    pub fn events(mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.event()).collect()
    }
}

/// An `INCOMING_MSG` of a private chat from `sender` to instance `id`, asking for the turn's
/// events as they come (`stream`).
pub fn private_msg(id: &str, sender: i64, text: &str) -> Value {
    json!({"type": "INCOMING_MSG", "instance_id": id, "text": text, "author": "Ada",
           "sender_id": sender, "chat_id": sender, "chat_type": "private", "stream": true})
}

/// The final event (`done`, `error` or `ignored`) of `events`.
pub fn last(events: &[Value]) -> &Value {
    events.last().expect("no event at all")
}

/// The loopback Bot API server with the runtime that drives it (dropped after the server).
pub struct Bot {
    pub api: BotApiServer,
    _rt: tokio::runtime::Runtime,
}

impl Bot {
    /// A server accepting [`TOKEN`].
    pub fn start() -> Bot {
        Self::accepting(TOKEN)
    }

    /// A server accepting only `token`.
    pub fn accepting(token: &str) -> Bot {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let api = rt.block_on(BotApiServer::start(token)).unwrap();
        Bot { api, _rt: rt }
    }

    /// Messages the bot sent to `chat`.
    pub fn sent_to(&self, chat: i64) -> Vec<SentMessage> {
        self.api
            .messages()
            .into_iter()
            .filter(|m| m.chat_id == chat.to_string())
            .collect()
    }

    /// Waits until the bot has sent `n` messages to `chat`; returns them.
    pub fn wait_sent(&self, chat: i64, n: usize, limit: Duration) -> Vec<SentMessage> {
        let ok = eventually(limit, || self.sent_to(chat).len() >= n);
        let sent = self.sent_to(chat);
        assert!(ok, "expected {n} message(s) to chat {chat}, got {sent:?}");
        sent
    }

    /// Calls of `method`.
    pub fn calls(&self, method: &str) -> Vec<ApiCall> {
        self.api.calls_of(method)
    }
}

/// `sayri gateway create telegram --name ID --agent AGENT --level-cap LEVEL --api-base URL`
/// with the token on stdin; panics unless it succeeded. Returns its standard output.
pub fn create_telegram(
    env: &Env,
    id: &str,
    level_cap: &str,
    api_base: &str,
    extra: &[&str],
) -> String {
    let mut child = env
        .cmd()
        .args([
            "gateway", "create", "telegram", "--name", id, "--agent", "helper",
        ])
        .args(["--level-cap", level_cap, "--api-base", api_base])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{TOKEN}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "create failed: {}", stderr(&out));
    stdout(&out)
}

/// Waits until instance `id` runs and polls the Bot API (its long poll is answered only when
/// an update comes or it times out, so it is seen in its log); returns its pid.
pub fn wait_polling(env: &Env, bot: &Bot, id: &str) -> u32 {
    let polled = eventually(Duration::from_secs(20), || {
        bot.calls("getMe").iter().any(|c| c.status == 200)
            && gateway_log(env, id).contains("polling Telegram as")
            && listed(env, id)["state"] == "running"
    });
    assert!(
        polled,
        "gateway {id} did not start polling: {}\n{}",
        listed(env, id),
        gateway_log(env, id)
    );
    listed(env, id)["pid"].as_u64().unwrap() as u32
}

/// How often `text` occurs in `hay`.
pub fn count(hay: &str, text: &str) -> usize {
    hay.matches(text).count()
}

/// Waits until `f` holds; panics with `what` otherwise.
pub fn wait_for(what: &str, limit: Duration, f: impl FnMut() -> bool) {
    let start = Instant::now();
    assert!(
        eventually(limit, f),
        "{what} (waited {:?})",
        start.elapsed()
    );
}
