//! Sayri as a native systemd user service: the unit `install --user` writes (its start limit,
//! `systemd-analyze verify` with the man pages it names), what starts at login following the
//! settings at once, clients starting the daemon through `systemctl --user start` when the unit
//! is installed, `sayri restart`, and `gateway start` leaving a running instance alone.

use super::gateway_rig::*;
use super::scripted_turns::start_model;
use super::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A `sayri` command with this env's home as the XDG config and data homes.
fn xdg_cmd(env: &Env, args: &[&str]) -> Command {
    let mut c = env.cmd();
    c.args(args)
        .env("XDG_CONFIG_HOME", env.dir.path().join(".config"))
        .env("XDG_DATA_HOME", env.dir.path().join(".local/share"));
    c
}

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

fn unit_path(env: &Env) -> PathBuf {
    env.dir.path().join(".config/systemd/user/sayri.service")
}

/// `key=value` lines of one section of a unit file.
fn section(unit: &str, name: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut keys = Vec::new();
    for line in unit.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == format!("[{name}]");
        } else if inside
            && !line.starts_with('#')
            && let Some((k, v)) = line.split_once('=')
        {
            keys.push((k.to_string(), v.to_string()));
        }
    }
    keys
}

fn key<'a>(keys: &'a [(String, String)], k: &str) -> &'a str {
    keys.iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{k} missing in {keys:?}"))
}

#[test]
fn the_unit_gives_up_on_a_crash_loop_its_restart_delay_can_reach() {
    let env = Env::new();
    ok(&mut xdg_cmd(&env, &["install", "--user"]));
    let unit = std::fs::read_to_string(unit_path(&env)).unwrap();
    let u = section(&unit, "Unit");
    let s = section(&unit, "Service");
    assert_eq!(key(&s, "Type"), "notify");
    assert_eq!(key(&s, "Restart"), "on-failure");
    let exe = key(&s, "ExecStart").strip_suffix(" daemon").unwrap();
    assert_eq!(exe.trim_matches('"'), BIN);
    assert_eq!(key(&u, "Documentation"), "man:sayri(1)");
    let interval: u64 = key(&u, "StartLimitIntervalSec").parse().unwrap();
    let burst: u64 = key(&u, "StartLimitBurst").parse().unwrap();
    let delay: u64 = key(&s, "RestartSec").parse().unwrap();
    // `burst` starts spaced by the restart delay fit in the interval: the limit can trip.
    assert!(
        burst >= 2 && (burst - 1) * delay < interval,
        "{burst} starts every {delay} s never fit in {interval} s"
    );
    // The start-limit keys belong to [Unit]: systemd ignores them in [Service].
    assert!(
        !s.iter().any(|(k, _)| k.starts_with("StartLimit")),
        "{unit}"
    );
}

#[test]
fn systemd_analyze_verify_accepts_the_installed_unit_and_finds_its_man_page() {
    let env = Env::new();
    let runtime = env.dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let out = ok(&mut xdg_cmd(&env, &["install", "--user"]));
    assert!(out.contains("man pages into"), "{out}");
    let man1 = env.dir.path().join(".local/share/man/man1");
    assert!(man1.join("sayri.1").is_file(), "{out}");
    assert!(man1.join("sayri-ask.1").is_file(), "{out}");
    // `man` finds per-user pages through `~/.local/bin` on PATH, where `sayri` is installed.
    let path = format!(
        "{}:{}",
        env.dir.path().join(".local/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let verify = Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(unit_path(&env))
        .env("HOME", env.dir.path())
        .env("XDG_CONFIG_HOME", env.dir.path().join(".config"))
        .env("XDG_DATA_HOME", env.dir.path().join(".local/share"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("PATH", path)
        .env_remove("MANPATH")
        .output()
        .expect("systemd-analyze is missing; run ./scripts/setup --tests");
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "{}{}",
        stdout(&verify),
        stderr(&verify)
    );
    // Uninstalling takes the pages away again.
    let out = ok(&mut xdg_cmd(&env, &["uninstall", "--user"]));
    assert!(!man1.join("sayri.1").exists(), "{out}");
}

#[test]
fn install_keeps_a_unit_edited_by_hand_as_a_backup_and_points_to_a_drop_in() {
    let env = Env::new();
    ok(&mut xdg_cmd(&env, &["install", "--user"]));
    let unit = unit_path(&env);
    let edited = std::fs::read_to_string(&unit)
        .unwrap()
        .replace("TimeoutStopSec=20", "TimeoutStopSec=99");
    std::fs::write(&unit, &edited).unwrap();
    let out = ok(&mut xdg_cmd(&env, &["install", "--user"]));
    let bak = unit.with_file_name("sayri.service.bak");
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), edited, "{out}");
    assert!(out.contains(&bak.display().to_string()), "{out}");
    assert!(out.contains("systemctl --user edit sayri.service"), "{out}");
    assert!(
        std::fs::read_to_string(&unit)
            .unwrap()
            .contains("TimeoutStopSec=20")
    );
    // A second edit is kept beside the first backup, never over it.
    std::fs::write(&unit, edited.replace("=99", "=98")).unwrap();
    ok(&mut xdg_cmd(&env, &["install", "--user"]));
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), edited);
    let second = unit.with_file_name("sayri.service.bak.1");
    assert!(std::fs::read_to_string(second).unwrap().contains("=98"));
    // The unit as Sayri wrote it is no reason for a backup.
    let out = ok(&mut xdg_cmd(&env, &["install", "--user"]));
    assert!(
        out.contains("nothing changed") && !out.contains(".bak"),
        "{out}"
    );
}

#[test]
fn install_without_the_orb_says_the_web_bubble_opens_at_login_not_a_desktop_window() {
    let env = Env::new();
    // An install of `sayri` without `sayri-orb` beside it (the build directory may hold one).
    let sayri = env.installed_bin_dir().join("sayri");
    assert!(!sayri.with_file_name("sayri-orb").exists());
    let mut c = env.cmd_for(&sayri);
    c.args(["install", "--user"])
        .env("XDG_CONFIG_HOME", env.dir.path().join(".config"))
        .env("XDG_DATA_HOME", env.dir.path().join(".local/share"));
    let out = ok(&mut c);
    let entry =
        std::fs::read_to_string(env.dir.path().join(".config/autostart/sayri.desktop")).unwrap();
    assert!(entry.contains(" web --open\n"), "{entry}");
    assert!(
        out.contains("opens the web bubble in your browser"),
        "{out}"
    );
    assert!(!out.contains("desktop window"), "{out}");
}

#[test]
fn changing_autostart_applies_to_login_at_once_with_and_without_a_daemon() {
    let env = Env::new();
    let units = env.dir.path().join(".config/systemd/user");
    let wants = units.join("default.target.wants/sayri.service");
    let entry = env.dir.path().join(".config/autostart/sayri.desktop");
    let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    // Before installing, the setting is stored and the user told what makes it take effect.
    let out = ok(&mut xdg_cmd(&env, &["config", "set", "ui.autostart", "on"]));
    assert!(out.contains("sayri install --user"), "{out}");
    assert!(!there(&wants) && !there(&entry));
    ok(&mut xdg_cmd(&env, &["install", "--user"]));
    assert!(there(&wants) && there(&entry));
    // No daemon: `config set` edits the file and the login files follow.
    let out = ok(&mut xdg_cmd(
        &env,
        &["config", "set", "ui.autostart_mode", "daemon"],
    ));
    assert!(there(&wants) && !there(&entry), "{out}");
    assert!(out.contains("the daemon starts at login"), "{out}");
    // Through a running daemon, the same.
    let _d = env.start_daemon();
    let out = ok(&mut xdg_cmd(
        &env,
        &["config", "set", "ui.autostart", "false"],
    ));
    assert!(!there(&wants) && !there(&entry), "{out}");
    assert!(out.contains("nothing starts at login"), "{out}");
    let out = ok(&mut xdg_cmd(
        &env,
        &["config", "set", "ui.autostart", "true"],
    ));
    assert!(there(&wants) && !there(&entry), "{out}");
    ok(&mut xdg_cmd(
        &env,
        &["config", "set", "ui.autostart_mode", "ui"],
    ));
    assert!(there(&wants) && there(&entry));
    ok(&mut xdg_cmd(&env, &["quit"]));
}

/// A user manager's `systemctl` for `env`: `systemctl --user start sayri.service` records its
/// arguments and starts `sayri daemon` detached, returning once its socket answers (what
/// `Type=notify` gives); anything else fails as systemctl would without the unit. Stands in
/// for systemd, which needs a user manager this machine cannot run.
fn user_manager(env: &Env) -> (PathBuf, PathBuf) {
    let runtime = env.dir.path().join("run");
    std::fs::create_dir_all(runtime.join("systemd")).unwrap();
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    // The socket file is what clients look for; it stays after the listener closes.
    drop(std::os::unix::net::UnixListener::bind(runtime.join("systemd/private")).unwrap());
    let bin = env.dir.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = env.dir.path().join("systemctl-calls");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{calls}'\n\
         [ \"$*\" = '--user start sayri.service' ] || exit 5\n\
         setsid '{BIN}' daemon </dev/null >>'{log}' 2>&1 &\n\
         for i in $(seq 100); do [ -S \"$XDG_RUNTIME_DIR/sayri/sayri-daemon.sock\" ] && exit 0; sleep 0.05; done\n\
         exit 1\n",
        calls = calls.display(),
        log = env.dir.path().join("service.log").display()
    );
    let prog = bin.join("systemctl");
    std::fs::write(&prog, script).unwrap();
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (runtime, calls)
}

/// The environment a service started by the user manager shares with the client: the
/// standard directories under `HOME` (no `SAYRI_*_DIR` of its own).
fn as_installed(env: &Env, runtime: &Path, args: &[&str]) -> Command {
    let mut c = xdg_cmd(env, args);
    let path = format!(
        "{}:{}",
        env.dir.path().join("fake-bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env_remove("SAYRI_CONFIG_DIR")
        .env_remove("SAYRI_STATE_DIR")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("PATH", path);
    c
}

#[test]
fn with_the_unit_installed_clients_start_the_daemon_through_systemctl_and_restart_it() {
    let env = Env::new();
    let (runtime, calls) = user_manager(&env);
    // Without the unit, the client starts its own detached daemon.
    let out = as_installed(&env, &runtime, &["ping"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!calls.exists(), "systemctl used without a unit");
    assert!(
        stderr(&out).contains("started it in the background"),
        "{}",
        stderr(&out)
    );
    ok(&mut as_installed(&env, &runtime, &["quit"]));

    ok(&mut as_installed(&env, &runtime, &["install", "--user"]));
    let out = as_installed(&env, &runtime, &["ping"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("systemctl --user start sayri.service"),
        "{}",
        stderr(&out)
    );
    let log = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("start sayri.service"))
            .count(),
        1,
        "{log}"
    );
    let pid = |env: &Env| -> String {
        let s = ok(&mut as_installed(env, &runtime, &["status", "--json"]));
        serde_json::from_str::<serde_json::Value>(&s).unwrap()["pid"].to_string()
    };
    let before = pid(&env);
    let out = ok(&mut as_installed(&env, &runtime, &["restart"]));
    assert!(out.contains("Sayri daemon restarted"), "{out}");
    let after = pid(&env);
    assert_ne!(before, after, "restart kept the same daemon");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("start sayri.service"))
            .count(),
        2,
        "{log}"
    );

    // A client with directories of its own never starts the service (it would serve others).
    ok(&mut as_installed(&env, &runtime, &["quit"]));
    let mut own = as_installed(&env, &runtime, &["ping"]);
    own.env("SAYRI_STATE_DIR", env.state_dir());
    let out = own.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("in the background"),
        "{}",
        stderr(&out)
    );
    let mut quit = as_installed(&env, &runtime, &["quit"]);
    quit.env("SAYRI_STATE_DIR", env.state_dir());
    ok(&mut quit);
}

#[test]
fn restart_without_a_daemon_starts_one_and_says_so() {
    let env = Env::new();
    let out = ok(env.cmd().arg("restart"));
    assert!(out.contains("was not running; started it (pid "), "{out}");
    let out = ok(env.cmd().arg("restart"));
    assert!(out.contains("Sayri daemon restarted (pid "), "{out}");
    ok(env.cmd().arg("quit"));
}

#[test]
fn gateway_start_on_a_running_instance_says_it_runs_and_changes_nothing() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    let bot = Bot::start();
    create_telegram(&env, "tg", "1", &bot.api.base_url(), &[]);
    wait_polling(&env, &bot, "tg");
    let before = listed(&env, "tg");
    let out = ok(env.cmd().args(["gateway", "start", "tg"]));
    assert!(out.contains("gateway tg is already running"), "{out}");
    assert!(out.contains("nothing changed"), "{out}");
    std::thread::sleep(Duration::from_millis(300));
    let after = listed(&env, "tg");
    assert_eq!(before["pid"], after["pid"], "{before} → {after}");
    assert_eq!(before["restarts"], after["restarts"]);
    assert_eq!(after["state"], "running");
    // Stopped, it starts again.
    ok(env.cmd().args(["gateway", "stop", "tg"]));
    let out = ok(env.cmd().args(["gateway", "start", "tg"]));
    assert!(out.contains("started gateway tg"), "{out}");
}
