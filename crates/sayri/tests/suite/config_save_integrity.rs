//! Saving a setting never empties, tears or quietly rewrites `sayri.toml`: a save killed at any
//! write step (CLI, daemon `config_set` and the settings form's `settings_save`), a broken file, concurrent writers, hand edits while the daemon
//! runs, out-of-range values, the file's mode and a symlinked file.
//!
//! The fixture is a hand-edited file with comments (`fixtures/config-save-integrity.toml`);
//! `…after-orb200.toml` is the same with `orb_size = 200`.

use super::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BEFORE: &[u8] = include_bytes!("../fixtures/config-save-integrity.toml");
const AFTER_200: &[u8] = include_bytes!("../fixtures/config-save-integrity.after-orb200.toml");

/// Every syscall a save could be killed at.
const WRITE_STEPS: [&str; 12] = [
    "write",
    "writev",
    "pwrite64",
    "fsync",
    "fdatasync",
    "ftruncate",
    "rename",
    "renameat",
    "renameat2",
    "linkat",
    "unlinkat",
    "close",
];

/// The names a save may leave next to `sayri.toml`: the writers' lock and a temp file.
const ALLOWED_NEIGHBOURS: [&str; 3] = ["sayri.toml", ".sayri.toml.lock", ".sayri.toml.tmp"];

fn path(env: &Env) -> PathBuf {
    env.config_dir().join("sayri.toml")
}

/// A fresh `sayri.toml` = the fixture, mode 0600.
fn fresh(env: &Env) {
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let _ = std::fs::remove_file(path(env));
    std::fs::write(path(env), BEFORE).unwrap();
    std::fs::set_permissions(path(env), std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn require_strace() {
    let ok = Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "strace is missing or may not trace here (needs ptrace rights); run ./scripts/setup --tests"
    );
}

/// After an interrupted or finished save: the file is the old one or the new one, 0600, ours,
/// with nothing but the lock and a temp file of the documented name beside it. Returns the
/// `ui.orb_size` the file holds.
fn assert_intact(env: &Env, what: &str) -> i64 {
    let bytes = std::fs::read(path(env)).unwrap();
    let orb = if bytes == BEFORE {
        160
    } else if bytes == AFTER_200 {
        200
    } else {
        panic!(
            "{what}: the file is neither the old nor the new one: {:?}",
            String::from_utf8_lossy(&bytes)
        );
    };
    let meta = std::fs::metadata(path(env)).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{what}: mode");
    assert_eq!(meta.uid(), sayri_client::paths::euid(), "{what}: owner");
    for entry in std::fs::read_dir(env.config_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.contains("sayri.toml") || ALLOWED_NEIGHBOURS.contains(&name.as_str()),
            "{what}: unexpected {name} next to sayri.toml"
        );
    }
    orb
}

/// `sayri config get ui.orb_size` (no daemon) agrees with the file.
fn assert_cli_reads(env: &Env, orb: i64, what: &str) {
    let o = env.run(&["config", "get", "ui.orb_size", "--no-start"]);
    assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
    assert_eq!(stdout(&o), format!("{orb}\n"), "{what}");
}

/// strace arguments that SIGKILL the traced processes at their `n`th `step` syscall.
fn strace_args(step: &str, n: u32) -> Vec<String> {
    vec![
        "-f".into(),
        "-qq".into(),
        "-o".into(),
        "/dev/null".into(),
        "-e".into(),
        format!("trace={step}"),
        "-e".into(),
        format!("inject={step}:signal=KILL:when={n}"),
    ]
}

fn was_killed(status: std::process::ExitStatus) -> bool {
    status.signal() == Some(libc::SIGKILL) || status.code() == Some(128 + libc::SIGKILL)
}

/// For each write step and n = 1, 2, … (at most 200): a fresh file, then `attempt(step, n,
/// label)`, until an attempt says the save finished without being killed.
fn kill_at_every_write_step(env: &Env, mut attempt: impl FnMut(&str, u32, &str) -> bool) {
    for step in WRITE_STEPS {
        let finished = (1..=200).any(|n| {
            fresh(env);
            attempt(step, n, &format!("killed at {step} #{n}"))
        });
        assert!(finished, "the save never finished under {step} injection");
    }
}

#[test]
fn a_cli_save_killed_at_any_write_step_leaves_the_old_file_or_the_new_one() {
    require_strace();
    let env = Env::new();
    kill_at_every_write_step(&env, |step, n, what| {
        let strace = strace_args(step, n);
        let strace: Vec<&str> = strace.iter().map(String::as_str).collect();
        let o = env
            .wrapped("strace", &strace)
            .args(["config", "set", "ui.orb_size", "200", "--no-start"])
            .output()
            .unwrap();
        let orb = assert_intact(&env, what);
        assert_cli_reads(&env, orb, what);
        if was_killed(o.status) {
            return false;
        }
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        assert_eq!(orb, 200, "{what}: the finished save holds the new value");
        true
    });
}

/// The two IPC commands that save a setting.
#[derive(Clone, Copy)]
enum Save {
    ConfigSet,
    SettingsSave,
}

/// Sends `config_set ui.orb_size 200` (or the same through `settings_save`) on `client`;
/// `Some(response)`, or `None` when the connection ended first (the daemon was killed).
fn set_orb_200(client: &mut RawClient, how: Save) -> Option<Value> {
    let line = match how {
        Save::ConfigSet => {
            json!({"cmd": "config_set", "params": {"key": "ui.orb_size", "value": 200}, "id": 1})
        }
        Save::SettingsSave => {
            json!({"cmd": "settings_save", "params": {"values": {"ui.orb_size": 200}}, "id": 1})
        }
    };
    if client
        .writer
        .write_all(format!("{line}\n").as_bytes())
        .is_err()
    {
        return None;
    }
    loop {
        let mut buf = String::new();
        match client.reader.read_line(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                let v: Value = serde_json::from_str(&buf).unwrap();
                if v.get("event").is_none() {
                    return Some(v);
                }
            }
        }
    }
}

/// Every thread of `pid` is traced.
fn traced(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).all(|t| {
        std::fs::read_to_string(t.path().join("status")).is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("TracerPid:"))
                .is_some_and(|v| v.trim() != "0")
        })
    })
}

/// Starts the daemon on the fresh file, attaches strace with the injection, sends the change.
/// Returns the answer (`None` when the daemon died first) and whether the daemon was killed.
fn daemon_save_under_injection(
    env: &Env,
    how: Save,
    step: &str,
    n: u32,
    what: &str,
) -> (Option<Value>, bool) {
    let mut d = env.start_daemon();
    let mut client = RawClient::connect(&env.socket());
    let strace = Command::new("strace")
        .args(strace_args(step, n))
        .args(["-p", &d.pid().to_string()])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut strace = sayri_testkit::procs::ChildGuard::new(strace, Duration::from_secs(5));
    let pid = d.pid();
    let child = d.child.as_mut().unwrap();
    let mut exited = || child.try_wait().is_ok_and(|st| st.is_some());
    assert!(
        eventually(Duration::from_secs(10), || traced(pid) || exited()),
        "{what}: strace did not attach"
    );
    // An early injection may kill the daemon while strace attaches, before the request.
    let answer = if exited() {
        None
    } else {
        set_orb_200(&mut client, how)
    };
    if answer.is_none() {
        // The connection ended: the daemon is dying.
        eventually(Duration::from_secs(10), exited);
    }
    // Stopping strace detaches it from a daemon that still runs.
    strace.stop();
    drop(client);
    let exit = d.child.as_mut().unwrap().try_wait().unwrap();
    let killed = exit.is_some_and(was_killed);
    assert!(
        killed || exit.is_none(),
        "{what}: the daemon ended without being killed: {exit:?} {}",
        d.log_text()
    );
    (answer, killed)
}

/// The daemon saves `ui.orb_size = 200` through `how`, killed at every write step in turn.
fn daemon_save_killed_at_every_write_step(how: Save) {
    require_strace();
    let env = Env::new();
    kill_at_every_write_step(&env, |step, n, what| {
        let (answer, killed) = daemon_save_under_injection(&env, how, step, n, what);
        let orb = assert_intact(&env, what);
        // The daemon starts again on what was left and reports it.
        let _d = env.start_daemon();
        let mut c = RawClient::connect(&env.socket());
        let st = c.call("status", json!({}), 2);
        assert_eq!(st["ok"], true, "{what}: {st}");
        let got = c.call("config_get", json!({"key": "ui.orb_size"}), 3);
        assert_eq!(got["result"]["value"], orb, "{what}: {got}");
        if killed {
            return false;
        }
        let answer = answer.unwrap_or_else(|| panic!("{what}: no answer, not killed"));
        assert_eq!(answer["ok"], true, "{what}: {answer}");
        if let Save::SettingsSave = how {
            assert_eq!(
                answer["result"]["saved"],
                json!(["ui.orb_size"]),
                "{what}: {answer}"
            );
        }
        assert_eq!(orb, 200, "{what}: the finished save holds the new value");
        true
    });
}

#[test]
fn a_daemon_save_killed_at_any_write_step_leaves_the_old_file_or_the_new_one() {
    daemon_save_killed_at_every_write_step(Save::ConfigSet);
}

#[test]
fn a_settings_save_killed_at_any_write_step_leaves_the_old_file_or_the_new_one() {
    daemon_save_killed_at_every_write_step(Save::SettingsSave);
}

/// The fixture cut inside the string on line 3 (`base_url = "http:`).
fn broken() -> &'static [u8] {
    &BEFORE[..85]
}

fn assert_names_line_3(msg: &str, env: &Env) {
    assert!(
        msg.contains(&format!("{}:3:", path(env).display())) && msg.contains("not valid TOML"),
        "{msg}"
    );
}

#[test]
fn a_broken_file_is_reported_with_its_line_and_never_repaired() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(path(&env), broken()).unwrap();
    // 1. `config set` without a daemon.
    let o = env.run(&["config", "set", "ui.orb_size", "210", "--no-start"]);
    assert_eq!(o.status.code(), Some(1));
    assert_names_line_3(&stderr(&o), &env);
    assert_eq!(std::fs::read(path(&env)).unwrap(), broken());
    // 2. `config list`.
    let o = env.run(&["config", "list", "--no-start"]);
    assert_eq!(o.status.code(), Some(1));
    assert_names_line_3(&stderr(&o), &env);
    assert_eq!(std::fs::read(path(&env)).unwrap(), broken());
    // 3. The daemon refuses to start with EX_CONFIG.
    let o = env.run(&["daemon"]);
    assert_eq!(o.status.code(), Some(78), "{}", stderr(&o));
    assert_names_line_3(&stderr(&o), &env);
    assert_eq!(std::fs::read(path(&env)).unwrap(), broken());

    // 4. The file breaks under a running daemon: a change is refused, the daemon keeps its
    //    last good settings and keeps running.
    fresh(&env);
    let mut d = env.start_daemon();
    std::fs::write(path(&env), broken()).unwrap();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("config_set", json!({"key": "ui.orb_size", "value": 210}), 1);
    assert_eq!(
        (r["ok"].clone(), r["code"].clone()),
        (json!(false), json!("config_invalid"))
    );
    assert_names_line_3(r["error"].as_str().unwrap(), &env);
    assert_eq!(std::fs::read(path(&env)).unwrap(), broken());
    let r = c.call("config_get", json!({"key": "ui.orb_size"}), 2);
    assert_eq!(r["result"]["value"], 160, "{r}");
    assert!(d.child.as_mut().unwrap().try_wait().unwrap().is_none());
}

/// The eight keys and four comments of the fixture.
fn assert_whole(text: &str) {
    let doc: toml_edit::DocumentMut = text
        .parse()
        .unwrap_or_else(|e| panic!("a reader saw a torn file ({e}): {text:?}"));
    for (group, key) in [
        ("provider", "base_url"),
        ("provider", "model"),
        ("provider", "temperature"),
        ("provider", "max_tokens"),
        ("stt", "mode"),
        ("stt", "silence_ms"),
        ("ui", "orb_size"),
        ("ui", "orb_position"),
    ] {
        assert!(
            doc[group].get(key).is_some(),
            "{group}.{key} missing: {text:?}"
        );
    }
    for comment in [
        "# Sayri settings, edited by hand. Keep my notes, please.",
        "# local Ollama",
        "# wake word only; no always-on microphone",
        "# out of the way of the dock",
    ] {
        assert!(text.contains(comment), "{comment:?} missing: {text:?}");
    }
}

/// The fixture with four values replaced where they stand.
fn fixture_with(orb: i64, temperature: &str, silence: i64, position: &str) -> String {
    String::from_utf8(BEFORE.to_vec())
        .unwrap()
        .replace("orb_size = 160", &format!("orb_size = {orb}"))
        .replace("temperature = 0.4", &format!("temperature = {temperature}"))
        .replace("silence_ms = 700", &format!("silence_ms = {silence}"))
        .replace(
            "orb_position = \"bottom-left\"",
            &format!("orb_position = \"{position}\""),
        )
}

#[test]
fn concurrent_writers_through_the_daemon_lose_nothing_and_readers_never_see_a_torn_file() {
    let env = std::sync::Arc::new(Env::new());
    fresh(&env);
    let d = env.start_daemon();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, done) = (path(&env), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while reads < 10_000 || !done.load(std::sync::atomic::Ordering::SeqCst) {
                assert_whole(&std::fs::read_to_string(&path).unwrap());
                reads += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            reads
        })
    };
    let socket = env.socket();
    let a = std::thread::spawn(move || {
        let mut c = RawClient::connect(&socket);
        for (i, v) in (100..=199).enumerate() {
            let r = c.call(
                "config_set",
                json!({"key": "ui.orb_size", "value": v}),
                i as u64,
            );
            assert_eq!(r["ok"], true, "{r}");
        }
    });
    let b = {
        let env = env.clone();
        std::thread::spawn(move || {
            for t in 50..=99 {
                let o = env.run(&["config", "set", "provider.temperature", &format!("0.{t}")]);
                assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            }
        })
    };
    let socket = env.socket();
    let c = std::thread::spawn(move || {
        let mut c = RawClient::connect(&socket);
        for k in 0..20i64 {
            let position = if k % 2 == 0 { "top-left" } else { "top-right" };
            let values = json!({"stt.silence_ms": 300 + 10 * k, "ui.orb_position": position});
            let r = c.call("settings_save", json!({"values": values}), k as u64);
            assert_eq!(r["ok"], true, "{r}");
            assert_eq!(r["result"]["ok"], true, "{r}");
        }
    });
    for t in [a, b, c] {
        t.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let reads = reader.join().unwrap();
    assert!(reads >= 10_000, "{reads}");
    let text = std::fs::read_to_string(path(&env)).unwrap();
    assert_eq!(text, fixture_with(199, "0.99", 490, "top-right"));
    drop(d);
}

#[test]
fn concurrent_cli_writers_without_a_daemon_lose_no_update() {
    let env = std::sync::Arc::new(Env::new());
    fresh(&env);
    let writers: Vec<_> = [
        ("ui.orb_size", 300),
        ("provider.max_tokens", 2000),
        ("stt.silence_ms", 1000),
        ("provider.model", 0),
    ]
    .into_iter()
    .map(|(key, base)| {
        let env = env.clone();
        std::thread::spawn(move || {
            for i in 1..=25 {
                let value = if key == "provider.model" {
                    format!("sy-test-model-{i}")
                } else {
                    (base + i).to_string()
                };
                let o = env.run(&["config", "set", key, &value, "--no-start"]);
                assert_eq!(o.status.code(), Some(0), "{key} {value}: {}", stderr(&o));
            }
        })
    })
    .collect();
    for w in writers {
        w.join().unwrap();
    }
    let text = std::fs::read_to_string(path(&env)).unwrap();
    let expected = String::from_utf8(BEFORE.to_vec())
        .unwrap()
        .replace("orb_size = 160", "orb_size = 325")
        .replace("max_tokens = 1024", "max_tokens = 2025")
        .replace("silence_ms = 700", "silence_ms = 1025")
        .replace("model = \"llama3.2\"", "model = \"sy-test-model-25\"");
    assert_eq!(text, expected);
    assert!(
        env.config_dir().join(".sayri.toml.lock").exists(),
        "the documented lock file"
    );
}

/// Writes `text` the way editors save: a copy renamed over the file.
fn save_like_an_editor(path: &Path, text: &str) {
    let tmp = path.with_file_name("sayri.toml.editor~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn hand_edits_made_while_the_daemon_runs_survive_its_next_change() {
    let env = Env::new();
    fresh(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let language = "language = \"fr\"   # French lessons on Tuesdays";
    let edited = String::from_utf8(BEFORE.to_vec()).unwrap().replace(
        "silence_ms = 700\n",
        &format!("silence_ms = 700\n{language}\n"),
    );
    save_like_an_editor(&path(&env), &edited);
    let r = c.call("config_set", json!({"key": "ui.orb_size", "value": 230}), 1);
    assert_eq!(r["ok"], true, "{r}");
    let text = std::fs::read_to_string(path(&env)).unwrap();
    assert_eq!(text, edited.replace("orb_size = 160", "orb_size = 230"));
    let r = c.call("config_get", json!({"key": "stt.language"}), 2);
    assert_eq!(r["result"]["value"], "fr", "{r}");

    let speed = "speed = 1.25   # a bit faster";
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path(&env))
        .unwrap();
    write!(f, "\n[tts]\n{speed}\n").unwrap();
    drop(f);
    let r = c.call("config_set", json!({"key": "ui.orb_size", "value": 240}), 3);
    assert_eq!(r["ok"], true, "{r}");
    let text = std::fs::read_to_string(path(&env)).unwrap();
    assert!(
        text.contains(language) && text.contains(speed) && text.contains("orb_size = 240"),
        "{text}"
    );
}

#[test]
fn out_of_range_values_are_refused_not_clamped() {
    let env = Env::new();
    fresh(&env);
    let o = env.run(&["config", "set", "ui.orb_size", "5000", "--no-start"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("from 80 to 400"), "{}", stderr(&o));
    assert_eq!(std::fs::read(path(&env)).unwrap(), BEFORE);

    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    let mut c = RawClient::connect(&env.socket());
    // One form save with three values out of range and one valid.
    let values = json!({"ui.orb_size": 5000, "provider.temperature": -3, "stt.silence_ms": 150,
                        "ui.orb_position": "top-left"});
    let r = c.call("settings_save", json!({"values": values}), 1);
    assert_eq!(r["ok"], true, "{r}");
    let result = &r["result"];
    assert_eq!(result["ok"], false, "{r}");
    assert_eq!(result["saved"], json!(["ui.orb_position"]), "{r}");
    let errors = result["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 3, "{r}");
    for (key, range) in [
        ("ui.orb_size", "from 80 to 400"),
        ("provider.temperature", "from 0 to 2"),
        ("stt.silence_ms", "from 200 to 5000"),
    ] {
        let e = errors[key].as_str().unwrap();
        assert!(e.contains(range), "{key}: {e}");
    }
    let text = std::fs::read_to_string(path(&env)).unwrap();
    assert_eq!(text, fixture_with(160, "0.4", 700, "top-left"));
    // The same values one by one through config_set are refused the same way.
    let mut refused = Vec::new();
    for (i, (key, value)) in [
        ("ui.orb_size", json!(5000)),
        ("provider.temperature", json!(-3)),
        ("stt.silence_ms", json!(150)),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.call(
            "config_set",
            json!({"key": key, "value": value}),
            10 + i as u64,
        );
        assert_eq!(r["code"], "invalid_params", "{r}");
        refused.push(key);
    }
    assert_eq!(refused.len(), 3);
    assert_eq!(std::fs::read_to_string(path(&env)).unwrap(), text);
    // Only the stored change was announced (events reach a client in order, before the answer
    // to its next request).
    let mut changed = Vec::new();
    watcher.write(b"{\"cmd\":\"ping\",\"id\":10}\n");
    loop {
        let v = watcher.read_value();
        if v["event"] == "settings_changed" {
            changed.push(v["keys"].clone());
        }
        if v.get("event").is_none() && v["id"] == 10 {
            break;
        }
    }
    assert_eq!(changed, vec![json!(["ui.orb_position"])]);
}

#[test]
fn a_save_keeps_the_files_mode_and_a_symlinked_file_stays_a_symlink() {
    let env = Env::new();
    fresh(&env);
    // 1. umask 022 does not widen a 0600 file; a user's 0640 is kept too.
    let o = env
        .wrapped("sh", &["-c", "umask 022; exec \"$0\" \"$@\""])
        .args(["config", "set", "ui.orb_size", "200", "--no-start"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_intact(&env, "umask 022");
    std::fs::set_permissions(path(&env), std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = env.run(&["config", "set", "ui.orb_size", "210", "--no-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mode = std::fs::metadata(path(&env)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);

    // 2. A sayri.toml kept in a dotfiles directory.
    fresh(&env);
    let dotfiles = env.dir.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).unwrap();
    let target = dotfiles.join("sayri.toml");
    std::fs::rename(path(&env), &target).unwrap();
    std::os::unix::fs::symlink(&target, path(&env)).unwrap();
    let o = env.run(&["config", "set", "ui.orb_size", "200", "--no-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        std::fs::symlink_metadata(path(&env))
            .unwrap()
            .file_type()
            .is_symlink(),
        "still a symlink"
    );
    assert_eq!(std::fs::read_link(path(&env)).unwrap(), target);
    assert_eq!(std::fs::read(&target).unwrap(), AFTER_200);
}
