//! Sayri as an MCP server, driven by the official TypeScript SDK's client (npm
//! `@modelcontextprotocol/sdk`, as `./scripts/setup --tests` installs it) over stdio against the
//! real daemon: a command the agent's rules allow runs in its sandbox and returns its output
//! with the vault's secrets redacted; a command they make `ask` raises the same card on the
//! desktop clients and runs only after an answer; a denied one, or one the person refuses, is a
//! tool error and never runs. `ask` is one turn of that agent in a session of its own.

use super::mcp_cli::mcp_cache;
use super::permission_rig::Peer;
use super::secret_rig::*;
use super::support::*;
use sayri_testkit::FakeLlm;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

/// The SDK client running `sayri mcp serve --agent AGENT` with the environment's directories.
struct SdkClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The first line: `{server, tools}`.
    hello: Value,
}

impl SdkClient {
    fn start(env: &Env, agent: &str) -> SdkClient {
        let cache = mcp_cache();
        let sdk = cache.join("sdk-client/node_modules/@modelcontextprotocol/sdk");
        assert!(
            sdk.join("package.json").is_file(),
            "{} is missing; run ./scripts/setup --tests",
            sdk.display()
        );
        let node = std::fs::read_to_string(cache.join("node-path")).unwrap();
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/mcp/sdk_client.mjs"
        );
        let sdk = sdk.display().to_string();
        let mut child = env
            .wrapped(node.trim(), &[fixture, &sdk])
            .args(["mcp", "serve", "--agent", agent])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = SdkClient {
            child,
            stdin,
            stdout,
            hello: Value::Null,
        };
        c.hello = c.line("the client's connection line");
        c
    }

    fn line(&mut self, what: &str) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the SDK client ended before {what}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"))
    }

    /// Sends one call without waiting for its result.
    fn send(&mut self, name: &str, arguments: Value) {
        let call = json!({"name": name, "arguments": arguments}).to_string() + "\n";
        self.stdin.write_all(call.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The result of the call sent last: `{content, structuredContent, isError}`.
    fn result(&mut self) -> Value {
        let v = self.line("a call's result");
        assert!(v.get("error").is_none(), "the call failed in the SDK: {v}");
        v["result"].clone()
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.send(name, arguments);
        self.result()
    }

    fn finish(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the SDK client exited with {status}");
    }
}

/// The text of a tool result.
fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Agent `helper` at level 3: `echo` allowed, `touch` asks, `rm` denied; it holds the vault
/// key `CANARY_TOKEN`.
fn write_helper(env: &Env) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let profile = json!({
        "id": "helper",
        "name": "Helper",
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": true,
            "timeout_seconds": 20,
            "permission_rules": [
                {"action": "shell", "resource": "echo *", "effect": "allow"},
                {"action": "shell", "resource": "touch *", "effect": "ask"},
                {"action": "shell", "resource": "rm *", "effect": "deny"},
            ],
        },
        "allowed_secrets": ["CANARY_TOKEN"],
    });
    std::fs::write(dir.join("helper.json"), profile.to_string()).unwrap();
}

#[test]
fn an_sdk_client_runs_commands_under_the_agents_rules_with_cards_on_the_desktop_and_gets_no_secret()
{
    let env = Env::new();
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![answer_reply(
            "Helper here: the disk is fine.",
        )])))
        .unwrap();
    write_config(&env, &llm.base_url(), "\n[permissions]\nask_timeout = 60\n");
    write_helper(&env);
    let mut d = start_debug_daemon(&env);
    let secret = canary();
    let set = run_with_stdin(&env, &["vault", "set", "CANARY_TOKEN"], &secret);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let mut desktop = Peer::connect(&env, "desktop");
    desktop.sync();
    let mut client = SdkClient::start(&env, "helper");
    let names: Vec<&str> = client.hello["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["run_command", "ask", "status"], "{}", client.hello);
    assert_eq!(client.hello["server"]["name"], "sayri");

    // Allowed: runs at once, its output back with the secret redacted.
    let r = client.call(
        "run_command",
        json!({"command": "echo \"token=$CANARY_TOKEN\"; echo done"}),
    );
    let text = text_of(&r);
    assert_ne!(r["isError"], true, "{r}");
    assert!(
        text.contains("token=$SECRET:CANARY_TOKEN") && text.contains("done"),
        "{r}"
    );
    assert!(leaks(r.to_string().as_bytes(), &secret).is_empty(), "{r}");
    assert_eq!(r["structuredContent"]["status"], "success", "{r}");
    assert_eq!(r["structuredContent"]["agent_id"], "helper", "{r}");

    // Asks: the card reaches the desktop client; nothing runs before the answer.
    let marker = env.dir.path().join("approved-marker");
    let touch = format!("touch {}", marker.display());
    client.send("run_command", json!({"command": touch}));
    let card = desktop.event("permission_request")["request"].clone();
    assert_eq!(card["resource"], touch.as_str(), "{card}");
    assert!(!marker.exists(), "it ran before anyone answered");
    let rid = card["id"].as_str().unwrap().to_string();
    desktop.call(
        "permission_answer",
        json!({"request_id": rid, "allow": true, "remember": false}),
    );
    let r = client.result();
    assert_eq!(r["structuredContent"]["status"], "success", "{r}");
    assert!(marker.exists(), "the approved command ran: {r}");

    // Refused by the person: a tool error, not run.
    let refused = env.dir.path().join("refused-marker");
    client.send(
        "run_command",
        json!({"command": format!("touch {}", refused.display())}),
    );
    let rid = desktop.event("permission_request")["request"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    desktop.call(
        "permission_answer",
        json!({"request_id": rid, "allow": false}),
    );
    let r = client.result();
    assert_eq!(r["isError"], true, "{r}");
    assert!(text_of(&r).starts_with("Not run:"), "{r}");
    assert!(!refused.exists());

    // Denied by a rule: a tool error naming it, no card.
    std::fs::write(env.dir.path().join("keep"), "kept").unwrap();
    let keep = env.dir.path().join("keep");
    let r = client.call(
        "run_command",
        json!({"command": format!("rm {}", keep.display())}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["status"], "denied", "{r}");
    assert!(
        text_of(&r).contains("rm *"),
        "the refusal names the rule: {r}"
    );
    assert!(keep.exists(), "a denied command never runs");

    // A bad argument is a tool error the caller can read.
    let r = client.call("run_command", json!({"command": "echo x", "sudo": true}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(text_of(&r).contains("unknown argument \"sudo\""), "{r}");

    // An argument too long for the daemon's request line is answered at once, not left waiting.
    let huge = format!("echo {}", "y".repeat(2 << 20));
    let r = client.call("ask", json!({"text": huge}));
    assert_eq!(
        r["isError"],
        true,
        "{}",
        &r.to_string()[..300.min(r.to_string().len())]
    );
    assert!(text_of(&r).contains("1 MiB"), "{}", text_of(&r));

    // `ask`: one turn of the agent, in a session of its own.
    let r = client.call("ask", json!({"text": "How is my disk?"}));
    assert_eq!(text_of(&r), "Helper here: the disk is fine.", "{r}");
    let status = client.call("status", json!({}));
    let facts = &status["structuredContent"];
    assert_eq!(facts["served_agent"], "helper", "{status}");
    assert!(facts["version"].is_string(), "{status}");
    let shown = status.to_string();
    assert!(
        !shown.contains(&env.socket().display().to_string()) && !shown.contains("base_url"),
        "status shows no addresses: {status}"
    );
    client.finish();
    desktop.sync();
    assert!(
        desktop.kept_events("permission_request").is_empty(),
        "only the two `touch` commands asked: {:?}",
        desktop.kept_events("permission_request")
    );
    quit_daemon(&env, &mut d);
    let log = std::fs::read(env.daemon_log()).unwrap_or_default();
    assert!(
        leaks(&log, &secret).is_empty(),
        "the daemon log holds the secret"
    );
    drop(rt);
}
