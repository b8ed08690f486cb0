//! A vault the daemon cannot open never lets a command run with its secrets silently missing:
//! the vault is sealed with a key in a real OS keyring (gnome-keyring on a private session bus),
//! and the daemon then runs with no session bus at all.

use super::secret_rig::*;
use super::support::*;
use sayri_testkit::FakeLlm;
use serde_json::json;
use std::io::Write;
use std::process::Stdio;

/// Starts gnome-keyring with an unlocked login collection on the private bus, waits until it
/// owns `org.freedesktop.secrets`, then runs `$0 "$@"` (sayri and its arguments).
const IN_UNLOCKED_KEYRING: &str = r#"
printf %s sayri-test-login | gnome-keyring-daemon --unlock --components=secrets >/dev/null \
  || { echo 'gnome-keyring-daemon failed to start' >&2; exit 97; }
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q 'boolean true'; do
  i=$((i + 1))
  [ "$i" -le 200 ] || { echo 'gnome-keyring-daemon never took org.freedesktop.secrets' >&2; exit 98; }
  sleep 0.05
done
exec "$0" "$@"
"#;

/// `sayri ARGS` inside a private session bus with an unlocked keyring, `input` on stdin.
fn in_keyring_session(env: &Env, args: &[&str], input: &str) -> std::process::Output {
    let mut child = env
        .wrapped(
            "timeout",
            &[
                "60",
                "dbus-run-session",
                "--",
                "sh",
                "-c",
                IN_UNLOCKED_KEYRING,
            ],
        )
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbus-run-session and gnome-keyring must be installed (./scripts/setup --tests)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A bus address where nothing listens: the daemon has no session bus.
const NO_BUS: &str = "unix:path=/nonexistent/sayri-test-bus";

#[test]
fn a_locked_vault_refuses_the_command_that_needs_its_secret_and_runs_the_one_that_needs_none() {
    let env = Env::new();
    let secret = canary();
    let created = in_keyring_session(&env, &["vault", "set", "LOCKED_TOKEN"], &secret);
    assert!(
        created.status.success(),
        "{}{}",
        stdout(&created),
        stderr(&created)
    );
    let status = in_keyring_session(&env, &["vault", "status"], "");
    assert!(
        stdout(&status).contains("key source: OS keyring"),
        "the vault's key is in the keyring: {}",
        stdout(&status)
    );

    let needs = env.dir.path().join("needs-secret");
    let plain = env.dir.path().join("needs-none");
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![
            run_reply(&format!(
                "echo \"token=$LOCKED_TOKEN\" > {}",
                needs.display()
            )),
            run_reply(&format!("touch {}; echo ran-plain", plain.display())),
            answer_reply("Done."),
        ])))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    write_agent(&env, "locked", &["LOCKED_TOKEN"]);
    let mut d = env.start_daemon_with("info", &[("DBUS_SESSION_BUS_ADDRESS", NO_BUS)]);
    let a = Listener::connect(&env.socket());
    let mut c = RawClient::connect(&env.socket());
    let st = c.call("status", json!({}), 1);
    assert_eq!(st["result"]["vault"]["available"], false, "{st}");
    let reason = st["result"]["vault"]["error"].as_str().unwrap().to_string();
    assert!(reason.contains("keyring"), "{reason}");
    drop(c);

    let o = ask(&env, &["--agent", "locked", "--new", "use the token"]);
    assert!(stdout(&o).contains("Done."), "{}", stderr(&o));
    quit_daemon(&env, &mut d);
    let finishes = events(&a.finish(), "tool_finish");
    assert_eq!(finishes.len(), 2, "{finishes:#?}");
    let refused = finishes[0]["output"].as_str().unwrap();
    for part in [
        "vault is locked",
        reason.as_str(),
        "LOCKED_TOKEN",
        "did not run",
        "sayri vault status",
    ] {
        assert!(refused.contains(part), "{part:?} in {refused}");
    }
    assert_eq!(finishes[0]["exit_code"], 126, "{}", finishes[0]);
    assert!(!needs.exists(), "the command that needs the secret ran");
    let ran = finishes[1]["output"].as_str().unwrap();
    assert!(ran.contains("ran-plain"), "{ran}");
    assert!(
        ran.contains("ran without LOCKED_TOKEN"),
        "the note says which secret it lacked: {ran}"
    );
    assert!(
        plain.exists(),
        "the command that needs no secret did not run"
    );
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &secret,
    );
    drop(rt);
}
