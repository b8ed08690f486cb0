//! A gateway process speaks for its own instance only: a gateway program of our own (a Python
//! script installed as `sayri-gateway-probe` on the daemon's `PATH`) run by the daemon tries to
//! send for another instance, to stop the daemon, to reach the control socket, and to run a
//! turn as root. The daemon knows it by its process ancestry, whatever its messages say.

use super::gateway_rig::*;
use super::scripted_turns::Model;
use super::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

const PROBE: &str = r#"#!/usr/bin/env python3
import json, os, socket, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
legacy = os.environ["SAYRI_GATEWAY_SOCKET"]
control = os.path.join(os.path.dirname(legacy), "sayri-daemon.sock")

def ask(line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(legacy)
    s.sendall((line + "\n").encode())
    data = s.makefile("rb").read().decode()
    s.close()
    return data.strip().splitlines()

def msg(text, **extra):
    m = {"type": "INCOMING_MSG", "text": text, "author": "Ada", "sender_id": 1001,
         "chat_id": 1001, "chat_type": "private", "stream": True}
    m.update(extra)
    return json.dumps(m)

fd = int(os.environ["SAYRI_SECRETS_FD"])
passed = json.loads(os.fdopen(fd, "rb").read())
res = {"token_given": passed.get("PROBE_TOKEN") == "probe-secret-5150",
       "token_in_environment": any("probe-secret-5150" in v for v in os.environ.values())}
res["other_instance"] = ask(msg("hi", instance_id="desk"))
res["quit"] = ask("quit")
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(control)
try:
    res["control"] = s.recv(4096).decode()
except Exception as e:
    res["control"] = "error: %s" % e
res["own"] = ask(msg("<cmd>readlink /proc/self/ns/pid; pwd</cmd>",
                     sandbox_level="LEVEL_4_HOST_ROOT"))
with open(out + ".tmp", "w") as f:
    json.dump(res, f)
os.rename(out + ".tmp", out)
while True:
    time.sleep(60)
"#;

/// `sayri daemon` with `bin` first on its `PATH`.
fn daemon_with_path(env: &Env, bin: &std::path::Path) -> Daemon {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = env
        .cmd()
        .env("PATH", path)
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    wait_for("the daemon listens", Duration::from_secs(15), || {
        RawClient::try_connect(&env.socket()).is_ok()
    });
    d
}

#[test]
fn a_gateway_process_speaks_only_for_its_own_instance_and_only_at_its_cap() {
    let env = Env::new();
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join("sayri-gateway-probe");
    std::fs::write(&program, PROBE).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.dir.path().join("probe.json");

    let model = Model::start();
    setup(&env, &model, "LEVEL_3_HOST_USER");
    let mut d = daemon_with_path(&env, &bin);
    let r = ipc(
        &env,
        "vault_set",
        json!({"key": "GATEWAY_PROBE_TOKEN", "value": "probe-secret-5150"}),
    );
    assert_eq!(r["ok"], true, "{r}");
    for (id, cap) in [("desk", "3"), ("probe", "LEVEL_2_ISOLATED_DEV")] {
        save_instance(
            &env,
            json!({"id": id, "plugin": if id == "probe" { "probe" } else { "telegram" },
                   "agent": "helper", "level_cap": cap, "auto_start": false,
                   "options": {"out": out.to_str().unwrap()},
                   "secrets": if id == "probe" { json!({"PROBE_TOKEN": "GATEWAY_PROBE_TOKEN"}) } else { json!({}) }}),
        );
        ipc(
            &env,
            "gateway_peer_add",
            json!({"instance_id": id, "peer_id": "1001"}),
        );
    }
    let r = ipc(&env, "gateway_start", json!({"instance_id": "probe"}));
    assert_eq!(r["result"]["started"], true, "{r}");
    wait_for(
        &format!("the probe reported: {}", gateway_log(&env, "probe")),
        Duration::from_secs(60),
        || out.exists(),
    );
    let res: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();

    assert_eq!(
        res["token_given"], true,
        "its secret comes on its secrets descriptor"
    );
    assert_eq!(
        res["token_in_environment"], false,
        "and never in its environment"
    );
    assert!(processes_with("probe-secret-5150").is_empty());
    let other = res["other_instance"].to_string();
    assert!(other.contains("belongs to instance probe"), "{other}");
    let quit = res["quit"][0].as_str().unwrap_or_default();
    assert!(
        quit.starts_with("ERROR this is a management request"),
        "{res}"
    );
    assert_eq!(
        res["control"], "",
        "the control socket closes unread: {res}"
    );
    assert!(
        d.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the daemon quit"
    );

    let own: Vec<Value> = res["own"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(own.last().unwrap()["event"], "done", "{own:?}");
    let output = own
        .iter()
        .find(|e| e["event"] == "tool_finish")
        .map(|e| e["output"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no command ran: {own:?}"));
    let host_ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert!(
        !output.contains(host_ns.to_str().unwrap()),
        "level 2 runs in its own pid namespace: {output}"
    );
    let workspace = env.state_dir().join("sandboxes/helper");
    assert!(output.contains(workspace.to_str().unwrap()), "{output}");
    assert!(
        d.log_text().contains("gateway probe: turn for sender 1001")
            && d.log_text()
                .contains("with agent helper at LEVEL_2_ISOLATED_DEV"),
        "{}",
        d.log_text()
    );
    assert!(
        d.log_text()
            .contains("refused a connection from the process tree of gateway probe"),
        "{}",
        d.log_text()
    );
}
