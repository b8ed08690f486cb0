//! `sayri gateway …` against the real daemon and the real Telegram gateway program: list, stop,
//! edit, start, peers add/list/remove, delete (with the token it made), and the errors a
//! person can hit.

use super::gateway_rig::*;
use super::scripted_turns::start_model;
use super::support::*;
use std::time::Duration;

fn ok(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn gateway_cli_manages_an_instance_from_creation_to_deletion() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    let bot = Bot::start();
    let created = create_telegram(&env, "tg", "1", &bot.api.base_url(), &[]);
    assert!(created.contains("sayri gateway pin tg"), "{created}");
    wait_polling(&env, &bot, "tg");

    let list = ok(&env, &["gateway", "list"]);
    assert!(
        list.contains("tg  telegram  agent helper  cap LEVEL_1_READONLY  running"),
        "{list}"
    );
    // The same id twice is refused, and the first instance keeps its token.
    let again = env
        .cmd()
        .args([
            "gateway", "create", "telegram", "--name", "tg", "--agent", "helper",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"other-token\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("tg exists already"),
        "{}",
        stderr(&again)
    );

    assert!(ok(&env, &["gateway", "stop", "tg"]).contains("stopped gateway tg"));
    assert_eq!(listed(&env, "tg")["state"], "stopped");
    assert!(ok(&env, &["gateway", "stop", "tg"]).contains("was not running"));

    ok(
        &env,
        &["gateway", "edit", "tg", "--level-cap", "LEVEL_0_NO_EXEC"],
    );
    assert_eq!(listed(&env, "tg")["level_cap"], "LEVEL_0_NO_EXEC");
    let bad = env.run(&["gateway", "edit", "tg", "--agent", "ghost"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("ghost"), "{}", stderr(&bad));
    assert_eq!(listed(&env, "tg")["agent"], "helper");

    ok(&env, &["gateway", "start", "tg"]);
    wait_for("it runs again", Duration::from_secs(20), || {
        listed(&env, "tg")["state"] == "running"
    });

    ok(&env, &["gateway", "peers", "add", "tg", "1001"]);
    let peers = ok(&env, &["gateway", "peers", "list", "tg", "--json"]);
    assert!(peers.contains("\"1001\""), "{peers}");
    assert_eq!(listed(&env, "tg")["peers"], 1);
    ok(&env, &["gateway", "peers", "remove", "tg", "1001"]);
    assert_eq!(listed(&env, "tg")["peers"], 0);

    let deleted = ok(&env, &["gateway", "delete", "tg"]);
    assert!(
        deleted.contains("deleted secret GATEWAY_TG_TOKEN"),
        "{deleted}"
    );
    let list = ok(&env, &["gateway", "list"]);
    assert!(list.contains("no gateways yet"), "{list}");
    assert!(!ok(&env, &["vault", "list"]).contains("GATEWAY_TG_TOKEN"));
    let unknown = env.run(&["gateway", "start", "tg"]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("no gateway instance tg"),
        "{}",
        stderr(&unknown)
    );
}
