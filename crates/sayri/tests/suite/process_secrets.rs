//! No process Sayri starts shows a secret to other processes: a canary secret held by a command
//! at levels 1, 2 and 3, and a gateway's token, are in no command line (readable by every user)
//! and no environment (readable by the same user) of the daemon, the exec helpers, the keepers
//! or the gateway — checked as the same uid and as uid 65534, in every encoding. The command
//! itself receives the secret in its environment (that is what `allowed_secrets` means); only
//! its command line is checked.
//!
//! The daemon's memory is its own: a level-3 command of the same unprivileged user can neither
//! read the daemon's `environ` or `mem` nor attach to it, and a crash leaves no core file.

use super::gateway_rig::TOKEN;
use super::gateway_telegram::Scene;
use super::proc_scan::*;
use super::secret_rig::*;
use super::support::*;
use sayri_testkit::FakeLlm;
use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// What each command does: holds the secret in its environment while the scan runs.
const HOLD: &str = "sleep 4; echo held ${#CANARY_TOKEN}";

/// `$CONFIG/agents/<id>.json` at `level` with `allowed` secrets.
fn write_agent_at(env: &Env, id: &str, level: &str, allowed: &[&str]) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let profile = json!({
        "id": id, "name": format!("Agent {id}"),
        "sandbox": {"level": level, "ask_before_run": false, "timeout_seconds": 30},
        "allowed_secrets": allowed,
    });
    std::fs::write(dir.join(format!("{id}.json")), profile.to_string()).unwrap();
}

/// Waits (up to 20 s) until a `sleep` runs below `daemon`.
fn wait_for_sleep(daemon: u32) -> bool {
    eventually(Duration::from_secs(20), || {
        tree(daemon)
            .iter()
            .any(|p| cmdline(*p).starts_with(b"sleep\0"))
    })
}

/// Scans the daemon's tree as uid 65534 (every command line; no environment of ours may be
/// readable) and as our uid (every command line; the environment of every process that is not
/// a command). Returns how many processes were scanned and whether a command's environment
/// held the secret (the control that the command really got it).
fn scan_daemon_tree(daemon: u32, secret: &str, what: &str) -> (usize, bool) {
    let all = tree(daemon);
    let cmds = commands(&all);
    let nobody = read_as_nobody(&all);
    assert_none_holds(&format!("{what}: uid 65534"), &nobody, |_| true, secret);
    for s in nobody.iter().filter(|s| s.file == "environ") {
        assert!(
            s.bytes.is_none(),
            "{what}: uid 65534 read the environment of pid {}",
            s.pid
        );
    }
    let us = read_as_us(&all);
    assert_none_holds(
        &format!("{what}: the same uid"),
        &us,
        |s| s.file == "cmdline" || !cmds.contains(&s.pid),
        secret,
    );
    let delivered = us.iter().any(|s| {
        s.file == "environ"
            && cmds.contains(&s.pid)
            && s.bytes
                .as_ref()
                .is_some_and(|b| String::from_utf8_lossy(b).contains(secret))
    });
    (all.len(), delivered)
}

#[test]
fn no_process_sayri_starts_shows_a_commands_canary_in_its_command_line_or_environment() {
    let env = Env::new();
    let secret = canary();
    let rt = runtime();
    let levels = [
        ("l1", "LEVEL_1_READONLY"),
        ("l2", "LEVEL_2_ISOLATED_DEV"),
        ("l3", "LEVEL_3_HOST_USER"),
    ];
    let mut replies = Vec::new();
    for _ in levels {
        replies.push(run_reply(HOLD));
        replies.push(answer_reply("Held."));
    }
    let llm = rt.block_on(FakeLlm::start(scripted(replies))).unwrap();
    write_config(&env, &llm.base_url(), "");
    for (id, level) in levels {
        write_agent_at(&env, id, level, &["CANARY_TOKEN"]);
    }
    let mut d = start_debug_daemon(&env);
    let set = run_with_stdin(&env, &["vault", "set", "CANARY_TOKEN"], &secret);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let a = Listener::connect(&env.socket());
    for (id, level) in levels {
        std::thread::scope(|scope| {
            let asker = scope.spawn(|| ask(&env, &["--agent", id, "--new", "hold the token"]));
            assert!(wait_for_sleep(d.pid()), "{level}: the command never ran");
            let (n, delivered) = scan_daemon_tree(d.pid(), &secret, level);
            assert!(n >= 4, "{level}: daemon, helper and command: {n} processes");
            assert!(delivered, "{level}: the command did not hold the secret");
            let o = asker.join().unwrap();
            assert!(stdout(&o).contains("Held."), "{level}: {}", stderr(&o));
        });
    }
    quit_daemon(&env, &mut d);
    let finishes = events(&a.finish(), "tool_finish");
    assert_eq!(finishes.len(), 3, "{finishes:#?}");
    for f in &finishes {
        assert!(
            f["output"]
                .as_str()
                .unwrap()
                .contains(&format!("held {}", secret.len())),
            "{f}"
        );
    }
    drop(rt);
}

#[test]
fn a_running_gateway_its_keeper_and_the_daemon_show_its_token_to_no_one() {
    let s = Scene::start();
    let all = tree(s.daemon.pid());
    let gateway = all
        .iter()
        .find(|p| {
            String::from_utf8_lossy(&cmdline(**p)).contains("sayri-gateway-telegram")
                && !String::from_utf8_lossy(&cmdline(**p)).contains("sayri-exec")
        })
        .copied()
        .expect("the gateway runs below the daemon");
    // The rig's token is not random ("…-gateway-…" is in the program's name), so it is looked
    // for in every encoding as a whole, not by 8-character pieces.
    for secret in [
        TOKEN.to_string(),
        TOKEN.split(':').nth(1).unwrap().to_string(),
    ] {
        let nobody = read_as_nobody(&all);
        assert_no_form("uid 65534", &nobody, &secret);
        let us = read_as_us(&all);
        assert_no_form("the same uid", &us, &secret);
        let env = us
            .iter()
            .find(|x| x.pid == gateway && x.file == "environ")
            .and_then(|x| x.bytes.clone())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&env).contains("SAYRI_SECRETS_FD=3"),
            "the token came on the secrets descriptor"
        );
    }
    assert_eq!(
        core_limit(gateway),
        ("0".into(), "0".into()),
        "the gateway leaves no core"
    );
}

/// The soft and hard core size limits of `pid` (`/proc/PID/limits`).
fn core_limit(pid: u32) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap()
        .to_string();
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[4].to_string(), f[5].to_string())
}

// ---------------------------------------------------------------------------------------------
// The daemon's memory, as an unprivileged user

const NOBODY: &[&str] = &[
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--inh-caps=-all",
];

/// A level-3 command's attempts on process `{pid}`, and a control on a process of its own.
const PROBE: &str = r#"import ctypes, errno, os, subprocess, sys
pid = DAEMON_PID
libc = ctypes.CDLL(None, use_errno=True)
out = []
def attempt(name, f):
    try:
        f()
        out.append(name + "=read")
    except OSError as e:
        out.append(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
def raw(name, rc):
    out.append(name + ("=read" if rc >= 0 else "=" + errno.errorcode.get(ctypes.get_errno(), "?")))
for f in ("environ", "mem", "maps"):
    attempt(f, lambda: open("/proc/%d/%s" % (pid, f), "rb").read(16))
raw("ptrace", libc.ptrace(16, pid, None, None))
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(16)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iovec(0x10000, 16)
raw("vm_readv", libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
child = subprocess.Popen(["sleep", "30"], env={"PROBE_CONTROL": "1"})
attempt("control", lambda: open("/proc/%d/environ" % child.pid, "rb").read(16))
child.kill()
print(" ".join(out))
"#;

/// The env's directory tree, owned by uid 65534 (the daemon runs as that user).
fn give_to_nobody(env: &Env) {
    let st = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(env.dir.path())
        .status()
        .unwrap();
    assert!(st.success());
}

/// `sayri daemon` as uid 65534, started with an unlimited core size (so a limit of 0 is the
/// daemon's own doing), its working directory the env's writable top directory. Waits until
/// its log says it listens (it answers uid 65534 only, so this test cannot ping it).
fn start_nobody_daemon(env: &Env) -> Daemon {
    let mut c = env.wrapped(
        "prlimit",
        &[
            "--core=unlimited:unlimited",
            "setpriv",
            NOBODY[0],
            NOBODY[1],
            NOBODY[2],
            NOBODY[3],
        ],
    );
    c.current_dir(env.dir.path());
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = c
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    assert!(
        eventually(Duration::from_secs(15), || d
            .log_text()
            .contains("listening on")),
        "the daemon did not start: {}",
        d.log_text()
    );
    d
}

/// Core files in `dir`.
fn cores(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n == "core" || n.starts_with("core."))
        .collect()
}

/// Kills `d` with two `SIGSEGV`s (the first is taken by the runtime's stack-overflow handler,
/// which then restores the default action) and returns the signal that ended it.
fn segv_twice(d: &mut Daemon) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    let pid = d.pid() as i32;
    let mut child = d.child.take().unwrap();
    for _ in 0..2 {
        // SAFETY: kill takes plain integers and touches no memory of this process.
        unsafe { libc::kill(pid, libc::SIGSEGV) };
        std::thread::sleep(Duration::from_millis(300));
    }
    for _ in 0..100 {
        if let Some(st) = child.try_wait().unwrap() {
            return st.signal();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().unwrap().signal()
}

#[test]
fn a_level_3_command_of_the_same_unprivileged_user_cannot_read_or_trace_the_daemon_and_a_crash_leaves_no_core()
 {
    let env = Env::new();
    let rt = runtime();
    let probe = env.dir.path().join("probe.py");
    std::fs::write(&probe, PROBE).unwrap();
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![
            run_reply(&format!("/usr/bin/python3 {}", probe.display())),
            answer_reply("Probed."),
        ])))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    write_agent_at(&env, "prober", "LEVEL_3_HOST_USER", &[]);
    give_to_nobody(&env);
    let mut d = start_nobody_daemon(&env);
    let pid = d.pid();
    // The probe names the daemon's pid, known only now.
    std::fs::write(&probe, PROBE.replace("DAEMON_PID", &pid.to_string())).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.contains("Uid:\t65534"), "{status}");
    assert_eq!(
        core_limit(pid),
        ("0".into(), "0".into()),
        "started unlimited, set to 0"
    );
    let owner = std::fs::metadata(format!("/proc/{pid}/environ"))
        .unwrap()
        .uid();
    assert_eq!(
        owner, 0,
        "a non-dumpable process's /proc files belong to root"
    );

    let mut c = env.wrapped("setpriv", NOBODY);
    let o = c
        .args(["ask", "--agent", "prober", "--new", "probe the daemon"])
        .output()
        .unwrap();
    assert!(
        stdout(&o).contains("Probed."),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let rows = rusqlite::Connection::open(env.state_dir().join("sessions.db"))
        .unwrap()
        .query_row(
            "SELECT content FROM messages WHERE role = 'tool' ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap();
    for attempt in ["environ", "mem", "maps", "ptrace", "vm_readv"] {
        assert!(rows.contains(&format!("{attempt}=")), "{attempt}: {rows}");
        assert!(
            !rows.contains(&format!("{attempt}=read")),
            "{attempt} succeeded: {rows}"
        );
    }
    assert!(
        rows.contains("control=read"),
        "the same user reads a dumpable process: {rows}"
    );

    // Crashes: no core file, twice. A dumpable process of the same user in the same directory
    // does leave one where the kernel writes plain core files (the control).
    let plain = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    if plain.trim() == "core" {
        let mut ctl = std::process::Command::new("prlimit")
            .args(["--core=unlimited:unlimited", "setpriv"])
            .args(NOBODY)
            .args(["sleep", "30"])
            .current_dir(env.dir.path())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill takes plain integers and touches no memory of this process.
        unsafe { libc::kill(ctl.id() as i32, libc::SIGSEGV) };
        let _ = ctl.wait();
        assert!(
            eventually(Duration::from_secs(5), || !cores(env.dir.path()).is_empty()),
            "control: a dumpable process left no core, so the check below would prove nothing"
        );
        for c in cores(env.dir.path()) {
            std::fs::remove_file(env.dir.path().join(c)).unwrap();
        }
    }
    for round in 0..2 {
        if round == 1 {
            d = start_nobody_daemon(&env);
        }
        let sig = segv_twice(&mut d);
        assert_eq!(sig, Some(libc::SIGSEGV), "round {round}: {}", d.log_text());
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            cores(env.dir.path()).is_empty(),
            "round {round}: a core file was written"
        );
    }
    drop(rt);
}

#[test]
fn a_daemon_started_on_demand_does_not_inherit_the_clients_vault_passphrase() {
    let env = Env::new();
    let secret = canary();
    let o = env
        .cmd()
        .env(sayri_vault::cli::PASSPHRASE_ENV, &secret)
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pid = status["pid"].as_u64().expect("the daemon's pid") as u32;
    assert_ne!(pid, std::process::id());
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let text = String::from_utf8_lossy(&environ);
    assert!(
        text.contains("SAYRI_STATE_DIR="),
        "the environment was read: {text}"
    );
    assert!(
        !text.contains(sayri_vault::cli::PASSPHRASE_ENV) && leaks(&environ, &secret).is_empty(),
        "the daemon holds the passphrase in its environment"
    );
    let _ = env.run(&["quit", "--no-start"]);
}
