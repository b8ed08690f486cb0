//! The GatewaySupervisor with the real `sayri-gateway-telegram` program: a gateway that exits
//! on its own (Telegram refuses its token) is restarted with growing delays until the
//! crash-loop breaker puts it in `failed`, visible over IPC and as an `error` event; a gateway
//! killed with `SIGKILL` comes back and answers again; its token is in its environment and in
//! no process's command line; stopping the daemon leaves no gateway process, and the next
//! daemon starts it again.

use super::gateway_rig::*;
use super::gateway_telegram::{OWNER, Scene};
use super::scripted_turns::{start_model, wait_event};
use super::support::*;
use sayri_testkit::{Reply, sse};
use std::time::Duration;

/// Pids of the gateway program (not its keeper) in `env`'s process tree.
fn gateway_program_pids(env: &Env) -> Vec<i32> {
    processes_with("sayri-gateway-telegram")
        .into_iter()
        .filter(|(pid, _)| {
            // argv[0] from the NUL-separated command line (a path may hold spaces).
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()
                .and_then(|c| c.split(|&b| b == 0).next().map(<[u8]>::to_vec))
                .is_some_and(|argv0| argv0.ends_with(b"/sayri-gateway-telegram"))
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|e| String::from_utf8_lossy(&e).contains(env.dir.path().to_str().unwrap()))
                    .unwrap_or(false)
        })
        .map(|(pid, _)| pid)
        .collect()
}

#[test]
fn a_gateway_that_keeps_exiting_is_restarted_with_growing_delays_until_the_breaker_trips() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    // The server knows another token: every start ends with "Telegram refused the bot token".
    let bot = Bot::accepting("999:another-bot");
    let mut events = RawClient::connect(&env.socket());
    create_telegram(&env, "tg", "1", &bot.api.base_url(), &[]);

    let mut seen = Vec::new();
    wait_for("the breaker tripped", Duration::from_secs(60), || {
        let row = listed(&env, "tg");
        seen.push((row["state"].clone(), row["restarts"].clone()));
        row["state"] == "failed"
    });
    let row = listed(&env, "tg");
    assert_eq!(row["restarts"], 4, "{row}");
    let why = row["last_error"].as_str().unwrap_or_default();
    assert!(why.contains("crashed 5 times"), "{row}");
    assert!(
        seen.iter().any(|(state, _)| state == "backoff"),
        "the wait between starts is visible: {seen:?}"
    );

    // Each start asks getMe first: the gaps between starts grow.
    let starts: Vec<_> = bot.calls("getMe").iter().map(|c| c.at).collect();
    assert_eq!(starts.len(), 5, "{starts:?}");
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    // The backoff doubles from 1 s: each gap is at least its backoff (a busy machine only adds
    // to a gap, so only the lower bound is checked).
    for (i, gap) in gaps.iter().enumerate() {
        let backoff = Duration::from_millis(900) * 2u32.pow(u32::try_from(i).unwrap_or(0));
        assert!(
            *gap >= backoff,
            "gap {i} shorter than its backoff: {gaps:?}"
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        bot.calls("getMe").len(),
        5,
        "not started again after failing"
    );

    let alert = wait_event(&mut events, "error", Duration::from_secs(10))
        .expect("an error event when the breaker trips");
    assert_eq!(alert["source"], "gateway", "{alert}");
    assert_eq!(alert["name"], "tg", "{alert}");
    let log = gateway_log(&env, "tg");
    assert!(
        log.contains("Telegram refused the bot token")
            && log.contains("sayri gateway edit tg --token"),
        "{log}"
    );
    assert!(
        processes_with(TOKEN).is_empty(),
        "the token is on a command line"
    );
}

#[test]
fn a_killed_gateway_comes_back_its_token_stays_off_command_lines_and_environments_and_shutdown_leaves_nothing()
 {
    let mut s = Scene::start();
    s.pair_owner();

    let pids = gateway_program_pids(&s.env);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let environ = std::fs::read(format!("/proc/{}/environ", pids[0])).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        !environ.contains(TOKEN) && environ.contains("SAYRI_SECRETS_FD=3"),
        "the gateway gets its token on its secrets descriptor, never in its environment: {environ}"
    );
    let on_cmdline = processes_with(TOKEN);
    assert!(on_cmdline.is_empty(), "{on_cmdline:?}");
    let secret = TOKEN.split(':').nth(1).unwrap();
    assert!(processes_with(secret).is_empty());

    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(pids[0], libc::SIGKILL) };
    wait_for("the gateway was restarted", Duration::from_secs(20), || {
        let row = listed(&s.env, "tg");
        row["restarts"] == 1 && row["state"] == "running"
    });
    wait_for("the new gateway polls", Duration::from_secs(20), || {
        gateway_program_pids(&s.env)
            .iter()
            .any(|p| !pids.contains(p))
    });
    let sent = s.turn(
        "still there?",
        Reply::sse(sse::content_stream(&["Still here."])),
    );
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "Still here.");
    assert_eq!(s.bot.sent_to(OWNER).last().unwrap().text, "Still here.");

    let running = gateway_program_pids(&s.env);
    assert_eq!(running.len(), 1, "{running:?}");
    let status = s.daemon.terminate(Duration::from_secs(20));
    assert!(status.is_some_and(|st| st.success()), "{status:?}");
    assert!(
        !alive(running[0]),
        "the gateway outlived the daemon: {}",
        gateway_log(&s.env, "tg")
    );
    assert!(gateway_program_pids(&s.env).is_empty());
    assert!(
        gateway_log(&s.env, "tg").contains("stopping"),
        "it was stopped with SIGTERM and ended by itself: {}",
        gateway_log(&s.env, "tg")
    );

    // It starts with the next daemon (created with auto-start).
    let _again = s.env.start_daemon();
    wait_for(
        "the gateway started with the daemon",
        Duration::from_secs(20),
        || {
            count(&gateway_log(&s.env, "tg"), "polling Telegram as") >= 3
                && listed(&s.env, "tg")["state"] == "running"
        },
    );
    assert_eq!(gateway_program_pids(&s.env).len(), 1);
}
