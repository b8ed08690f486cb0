//! The CLI: exit codes, auto-start, status, quit.

use super::support::*;
use serde_json::Value;

#[test]
fn usage_errors_exit_2_and_help_works() {
    let env = Env::new();
    assert_eq!(env.run(&[]).status.code(), Some(2));
    assert_eq!(env.run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        env.run(&["config", "set", "only.key"]).status.code(),
        Some(2)
    );
    for args in [
        &["--help"][..],
        &["daemon", "--help"],
        &["config", "set", "--help"],
        &["status", "--help"],
    ] {
        let o = env.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(stdout(&o).contains("Usage"), "{args:?}");
    }
}

#[test]
fn no_start_fails_with_one_line_when_no_daemon_runs() {
    let env = Env::new();
    let o = env.run(&["ping", "--no-start"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not running"), "{err}");
    let o = env.run(&["quit"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("not running"));
}

#[test]
fn client_commands_autostart_the_daemon_then_quit_stops_it() {
    let env = Env::new();
    let o = env.run(&["ping"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "pong\n");
    assert!(
        stderr(&o).contains("started it in the background"),
        "{}",
        stderr(&o)
    );

    // Second call reuses it silently.
    let o = env.run(&["status", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "version",
        "protocol_version",
        "state",
        "busy",
        "session_id",
        "agent",
        "provider",
        "config_dir",
        "state_dir",
        "socket",
        "pid",
    ] {
        assert!(st.get(key).is_some(), "status lacks {key}: {st}");
    }
    assert_eq!(st["state"], "idle");
    assert_eq!(st["agent"], "default");
    assert_eq!(st["provider"]["api_key_set"], false);
    assert_eq!(st["state_dir"], env.state_dir().to_str().unwrap());
    let pid = st["pid"].as_u64().unwrap() as u32;

    // Directories are private.
    use std::os::unix::fs::PermissionsExt;
    for dir in [env.config_dir(), env.state_dir()] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
    let mode = std::fs::metadata(env.socket())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // The backgrounded daemon logs to $STATE/daemon.log.
    let log = std::fs::read_to_string(env.state_dir().join("daemon.log")).unwrap();
    assert!(log.contains("listening on"), "{log}");

    let o = env.run(&["status"]);
    assert!(stdout(&o).contains("idle"));

    let o = env.run(&["quit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("stopped"));
    assert!(!env.socket().exists());
    assert!(
        eventually(std::time::Duration::from_secs(5), || !std::path::Path::new(
            &format!("/proc/{pid}/stat")
        )
        .exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z")),
        "daemon process {pid} still alive after quit"
    );
}

#[test]
fn clients_racing_to_start_the_daemon_say_started_it_once() {
    let env = Env::new();
    let racers: Vec<_> = (0..4)
        .map(|_| {
            env.cmd()
                .arg("ping")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut said = 0;
    for r in racers {
        let o = r.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        said += stderr(&o).matches("started it in the background").count();
    }
    assert_eq!(said, 1, "exactly one client started the daemon");
    let _ = env.run(&["quit"]);
}
