//! Token economy and the daemon's memory over real conversations: one daemon, the scripted
//! model, and `sayri ask` turns exactly as a user would run them.
//!
//! Sessions: `Say hi` twice; `Say hi, memory check` before and after 1,000 facts are imported
//! into long-term memory (the requests must be equal: no fact is in the fixed prompt and the
//! turn recalls none); `Say hi 1` … `Say hi 20`; 20 turns of `Turn N: how much disk
//! space is free?` (one `df -h /` per turn); one turn that `cat`s a 1.38 MB log; last, `Say hi`
//! again with three real MCP servers added and approved (`mcp-server-time`, `mcp-server-git`,
//! `@modelcontextprotocol/server-filesystem`, as `./scripts/setup --tests` installs them under
//! `~/.cache/sayri/mcp`; the row says so when they are missing). Request sizes
//! and provider-style token counts come from the request bodies the server received; the token
//! totals of a session come from the daemon itself (`sayri sessions show --json` → `usage`,
//! what the server reported and the daemon stored).

use crate::model::Model;
use crate::procs::{Daemon, Install};
use crate::report::Row;
use crate::stats::Stat;
use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_testkit::tokens::prompt_tokens;
use serde_json::Value;

/// What a conversation run measured.
pub struct Conversations {
    /// Token economy rows.
    pub economy: Vec<Row>,
    /// Footprint rows (RSS after 20 turns, peak during a turn).
    pub footprint: Vec<Row>,
    /// `smaps_rollup` of the daemon: idle, and after the 20-turn chat.
    pub smaps: Vec<(String, String)>,
}

/// One request as the server received it.
struct Request {
    bytes: usize,
    tokens: usize,
}

struct Runner<'a> {
    install: &'a Install,
    model: &'a Model,
    tokenizer: &'a ExactTokenizer,
    seen: usize,
}

impl Runner<'_> {
    /// Runs one `sayri ask` turn (in `session`, or a new one) and returns the session id.
    fn ask(&self, session: Option<&str>, text: &str) -> Result<String, String> {
        let mut c = self.install.cmd();
        c.args(["ask", "--json"]);
        match session {
            Some(s) => c.args(["--session", s]),
            None => c.arg("--new"),
        };
        let out = c.arg(text).output().map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
            format!(
                "`sayri ask {text}` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        if let Some(e) = v["error"].as_str().filter(|e| !e.is_empty()) {
            return Err(format!("`sayri ask {text}`: {e}"));
        }
        Ok(v["session_id"].as_str().unwrap_or_default().to_string())
    }

    /// The turn requests received since the last call.
    fn new_requests(&mut self) -> Vec<Request> {
        let all = self.model.turn_requests();
        let fresh = all[self.seen.min(all.len())..]
            .iter()
            .map(|(bytes, body)| Request {
                bytes: *bytes,
                tokens: prompt_tokens(self.tokenizer, body),
            })
            .collect();
        self.seen = all.len();
        fresh
    }

    /// The provider-reported prompt tokens the daemon stored for `session`.
    fn stored_prompt_tokens(&self, session: &str) -> Option<f64> {
        let out = self
            .install
            .cmd()
            .args(["sessions", "show", session, "--json"])
            .output()
            .ok()?;
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v["usage"]["prompt_tokens"].as_f64()
    }
}

fn sum(rs: &[Request]) -> (f64, f64) {
    (
        rs.iter().map(|r| r.bytes as f64).sum(),
        rs.iter().map(|r| r.tokens as f64).sum(),
    )
}

fn request_rows(label: &str, rs: &[Request], reference: &str) -> Vec<Row> {
    let (bytes, tokens) = sum(rs);
    vec![
        Row::new(
            format!("{label}: request bytes"),
            Some(Stat::exact(bytes)),
            "B",
        )
        .decimals(0)
        .note(format!(
            "{} request(s); bytes ÷ 4 = {:.0}",
            rs.len(),
            bytes / 4.0
        )),
        Row::new(
            format!("{label}: prompt tokens"),
            Some(Stat::exact(tokens)),
            "tokens",
        )
        .decimals(0)
        .reference(reference)
        .note("o200k_base, as a server reports usage.prompt_tokens"),
    ]
}

const PEERS: &str = "per request (bytes ÷ 4): nanobot ≈ 8.0 k, OpenCode ≈ 8.3 k, Codex ≈ 10.1 k, Hermes Agent ≈ 11.6 k, ZeroClaw ≈ 12.8 k, OpenClaw ≈ 15.1 k, Claude Code ≈ 19.1 k";

/// nanobot's input over a 20-turn short chat, derived from the reference figures: 8.0 k tokens
/// per request plus 77 bytes (÷ 4) per earlier turn.
fn nanobot_20_turns() -> f64 {
    (0..20).map(|k| 8000.0 + 77.0 * k as f64 / 4.0).sum()
}

fn mib(kib: Option<f64>) -> Option<Stat> {
    kib.map(|k| Stat::exact(k / 1024.0))
}

/// Runs every conversation against a fresh daemon.
pub fn run(
    install: &Install,
    model: &Model,
    tokenizer: &ExactTokenizer,
    big_log: &std::path::Path,
) -> Result<Conversations, String> {
    install.prepare()?;
    let (daemon, _) = install.start_daemon()?;
    std::thread::sleep(std::time::Duration::from_secs(2));
    let mut smaps = vec![("idle, 2 s after start".to_string(), daemon.smaps_rollup())];
    let mut r = Runner {
        install,
        model,
        tokenizer,
        seen: model.turn_requests().len(),
    };
    let mut economy = Vec::new();

    let s = r.ask(None, "Say hi")?;
    let first = r.new_requests();
    r.ask(Some(&s), "Say hi")?;
    let second = r.new_requests();
    economy.extend(request_rows("\"Say hi\", turn 1", &first, PEERS));
    let (hi_bytes, _) = sum(&first);
    economy.extend(request_rows("\"Say hi\", turn 2", &second, ""));

    economy.push(memory_row(&mut r)?);
    short_chat(&mut r, &mut economy)?;
    let footprint = footprint_after_chat(&daemon, install, &mut smaps);

    let mut s = r.ask(None, "Turn 1: how much disk space is free?")?;
    for i in 2..=20 {
        s = r.ask(Some(&s), &format!("Turn {i}: how much disk space is free?"))?;
    }
    let commands = r.new_requests();
    economy.extend(request_rows(
        "20-turn chat with one command per turn, total",
        &commands,
        "",
    ));

    let question = format!(
        "How many lines does {} have, and what is the last line?",
        big_log.display()
    );
    r.ask(None, &question)?;
    let big = r.new_requests();
    economy.extend(request_rows(
        "one-command turn on a 1.38 MB output (both requests)",
        &big,
        "",
    ));
    let mut footprint = footprint;
    footprint.push(
        Row::new(
            "daemon peak RSS (VmHWM) after every turn above, incl. the 1.38 MB output",
            mib(daemon.status_kib("VmHWM")),
            "MB",
        )
        .reference("ZeroClaw one-shot turn 21.5 MB peak; Codex 154 MB; nanobot 119 MB"),
    );
    economy.push(mcp_row(&mut r, hi_bytes)?);
    daemon.stop()?;
    install.check_no_leftovers()?;
    Ok(Conversations {
        economy,
        footprint,
        smaps,
    })
}

/// A turn with 1,000 stored facts that recalls none, against the same turn with an empty
/// memory: request bytes (the value is with the facts; the note compares).
fn memory_row(r: &mut Runner<'_>) -> Result<Row, String> {
    const TEXT: &str = "Say hi, memory check";
    r.ask(None, TEXT)?;
    let (empty, _) = sum(&r.new_requests());
    let facts: String = (0..1000)
        .map(|i| {
            serde_json::json!({"text": format!("Fact {i}: the spare key number {i} hangs on hook {i} in the hall")})
                .to_string()
                + "\n"
        })
        .collect();
    let file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(file.path(), facts).map_err(|e| e.to_string())?;
    let out = r
        .install
        .cmd()
        .args(["memory", "import"])
        .arg(file.path())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "`sayri memory import` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    r.ask(None, TEXT)?;
    let (full, _) = sum(&r.new_requests());
    let verdict = if full == empty {
        "equal".to_string()
    } else {
        format!("DIFFERENT by {:+.0} B", full - empty)
    };
    Ok(Row::new(
        "\"Say hi\" turn with 1,000 stored facts and no recall: request bytes",
        Some(Stat::exact(full)),
        "B",
    )
    .decimals(0)
    .reference("target: equal to the same turn with an empty memory")
    .note(format!("with an empty memory {empty:.0} B: {verdict}")))
}

/// The 20-turn "Say hi N" chat: its requests' total, their growth per extra turn and the
/// prompt tokens the daemon recorded, as rows of `economy`.
fn short_chat(r: &mut Runner<'_>, economy: &mut Vec<Row>) -> Result<(), String> {
    let mut session = r.ask(None, "Say hi 1")?;
    for i in 2..=20 {
        session = r.ask(Some(&session), &format!("Say hi {i}"))?;
    }
    let chat = r.new_requests();
    let nanobot = nanobot_20_turns();
    economy.extend(request_rows(
        "20-turn \"Say hi N\" chat, total",
        &chat,
        &format!(
            "nanobot ≈ {:.1} k (derived: 8.0 k per request + 77 B per earlier turn); target ≤ 5 % = {:.1} k",
            nanobot / 1000.0,
            nanobot * 0.05 / 1000.0
        ),
    ));
    if chat.len() >= 2 {
        let growth =
            (chat[chat.len() - 1].bytes as f64 - chat[0].bytes as f64) / (chat.len() - 1) as f64;
        economy.push(
            Row::new(
                "20-turn \"Say hi N\" chat: growth per extra turn",
                Some(Stat::exact(growth)),
                "B",
            )
            .decimals(0)
            .reference("nanobot +77 B per extra short turn"),
        );
    }
    economy.push(
        Row::new(
            "20-turn \"Say hi N\" chat: prompt tokens the daemon recorded",
            r.stored_prompt_tokens(&session).map(Stat::exact),
            "tokens",
        )
        .decimals(0)
        .note("`sayri sessions show --json` → usage.prompt_tokens (provider-reported)"),
    );
    Ok(())
}

/// RSS after the 20-turn chat, and whether an exact tokenizer is resident (from `status`).
fn footprint_after_chat(
    daemon: &Daemon,
    install: &Install,
    smaps: &mut Vec<(String, String)>,
) -> Vec<Row> {
    smaps.push(("after the 20-turn chat".into(), daemon.smaps_rollup()));
    let tokenizer = install
        .cmd()
        .args(["status", "--json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
        .map(|v| v["tokens"]["exact_tokenizer_loaded"].to_string())
        .unwrap_or_else(|| "?".into());
    vec![
        Row::new(
            "daemon RSS after a 20-turn chat",
            mib(daemon.status_kib("VmRSS")),
            "MB",
        )
        .reference("target ≤ 12 MB; before this work 67 MB (the o200k tables)")
        .note(format!(
            "VmRSS; anonymous {:.1} MB, file {:.1} MB; status tokens.exact_tokenizer_loaded = {tokenizer}",
            daemon.status_kib("RssAnon").unwrap_or(0.0) / 1024.0,
            daemon.status_kib("RssFile").unwrap_or(0.0) / 1024.0
        )),
    ]
}

/// The three registry servers of the MCP tests, as `./scripts/setup --tests` installs them:
/// (name, program, arguments). `None` when one is missing.
fn mcp_servers(dir: &std::path::Path) -> Option<Vec<(&'static str, String, Vec<String>)>> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?
        .join("sayri/mcp");
    let node = std::fs::read_to_string(cache.join("node-path")).ok()?;
    let fs =
        cache.join("servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let bin = cache.join("venv/bin");
    let all = [
        bin.join("mcp-server-time"),
        bin.join("mcp-server-git"),
        fs.clone(),
    ];
    if !all.iter().all(|p| p.is_file()) {
        return None;
    }
    let path = |p: &std::path::Path| p.display().to_string();
    Some(vec![
        ("time", path(&all[0]), vec![]),
        ("git", path(&all[1]), vec![]),
        ("files", node.trim().to_string(), vec![path(&fs), path(dir)]),
    ])
}

/// `Say hi` with three MCP servers added and approved, against the same turn without them:
/// request bytes (the peers send every tool's schema in every request).
fn mcp_row(r: &mut Runner<'_>, without: f64) -> Result<Row, String> {
    const LABEL: &str = "\"Say hi\", turn 1, with 3 MCP servers approved: request bytes";
    const PEERS_MCP: &str = "peers send every tool's JSON schema in every request: 17–87 % of \
                             their request bytes (measured on a mock)";
    // Outside /tmp: level 2 gives a server a private, empty /tmp.
    let dir = tempfile::tempdir_in("/var/tmp").map_err(|e| e.to_string())?;
    let Some(servers) = mcp_servers(dir.path()) else {
        return Ok(Row::new(LABEL, None, "B").reference(PEERS_MCP).note(
            "not measured: the servers are missing (./scripts/setup --tests installs them)",
        ));
    };
    let run = |args: &[&str]| -> Result<String, String> {
        let out = r
            .install
            .cmd()
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "`sayri {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        // `prompt show --tokens` prints its figures on stderr.
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(text)
    };
    for (name, program, args) in &servers {
        let mut add = vec!["mcp", "add", name, "--", program.as_str()];
        add.extend(args.iter().map(String::as_str));
        run(&add)?;
        run(&["mcp", "approve", name, "--yes"])?;
    }
    let tokens = run(&["prompt", "show", "--tokens"])?;
    let mcp_line = tokens
        .lines()
        .find(|l| l.contains("the MCP line"))
        .unwrap_or("")
        .trim()
        .to_string();
    r.ask(None, "Say hi")?;
    let (with, _) = sum(&r.new_requests());
    let share = if with > 0.0 {
        (with - without) / with * 100.0
    } else {
        0.0
    };
    Ok(Row::new(LABEL, Some(Stat::exact(with)), "B")
        .decimals(0)
        .reference(PEERS_MCP)
        .note(format!(
            "{:+.0} B over the same turn without servers ({share:.1} % of the request); {mcp_line}",
            with - without
        )))
}
