//! Timeouts kill the whole process tree, orphans included; only declared background launches
//! (levels 3-4) survive;
//! the result comes when the main process ends, not when the last pipe holder closes. Also
//! cancellation and output capture through the library API.

use super::common::*;
use sayri_core::ports::{ExecRequest, ExecStatus, Sandbox};
use sayri_protocol::SandboxLevel;
use sayri_sandbox::{LinuxSandbox, LinuxSandboxSettings};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn rows(f: &Fixture, level: &str, dir: &Path) {
    let tag = format!("sayri{}x{}", std::process::id(), level);
    let m = dir.join(&tag);
    let m = m.display();
    let t = ["--timeout", "2"];
    let ws = dir.display().to_string();
    let extra: Vec<&str> = if level == "3" {
        vec!["--timeout", "2", "--workspace", &ws]
    } else {
        t.to_vec()
    };

    let o = f.run(
        level,
        &extra,
        &format!("{PY} -c 'import time; time.sleep(30)' # {tag}r1"),
    );
    assert_eq!(
        (o.status.as_str(), o.exit_code),
        ("timeout", Some(124)),
        "row 1 {o:?}"
    );
    assert!(
        o.wall < Duration::from_millis(3500),
        "row 1 took {:?}",
        o.wall
    );

    let o = f.run(level, &extra, &format!("(sleep 4; touch {m}.2) & sleep 30"));
    assert_eq!(o.status, "timeout", "row 2 {o:?}");
    let o = f.run(
        level,
        &extra,
        &format!("setsid sh -c 'sleep 4; touch {m}.3' & sleep 30"),
    );
    assert_eq!(o.status, "timeout", "row 3 {o:?}");

    let o = f.run(
        level,
        &extra,
        &format!(
            "nohup sh -c 'trap \"\" TERM HUP; sleep 4; touch {m}.4' >/dev/null 2>&1 & echo started"
        ),
    );
    assert_eq!(
        (o.status.as_str(), o.output.trim()),
        ("success", "started"),
        "row 4 {o:?}"
    );
    assert!(
        // Well under the background child's 4 s: the command did not wait for it.
        o.wall < Duration::from_millis(3500),
        "row 4 took {:?}",
        o.wall
    );

    let o = f.run(
        level,
        &extra,
        &format!("sh -c 'trap \"\" TERM; exec sleep 31 # {tag}r5' & echo hi"),
    );
    assert_eq!(
        (o.status.as_str(), o.output.trim()),
        ("success", "hi"),
        "row 5 {o:?}"
    );
    assert!(
        o.wall < Duration::from_millis(3500),
        "row 5 took {:?}",
        o.wall
    );

    let o = f.run(level, &extra, &format!("sh -c 'sleep 4; touch {m}.6' &"));
    assert_eq!(o.status, "success", "row 6 {o:?}");
    assert!(
        o.wall < Duration::from_millis(3500),
        "row 6 took {:?}",
        o.wall
    );
    if level == "3" {
        assert!(o.output.starts_with("started in background (pid "), "{o:?}");
    }

    std::thread::sleep(Duration::from_secs(6));
    for row in [2, 3, 4] {
        assert!(
            !dir.join(format!("{tag}.{row}")).exists(),
            "row {row} survived at level {level}"
        );
    }
    assert_eq!(
        dir.join(format!("{tag}.6")).exists(),
        level == "3",
        "row 6 at level {level}"
    );
    assert!(wait_gone(&format!("{tag}r1")), "python of row 1 survived");
    assert!(wait_gone(&format!("{tag}r5")), "sleep of row 5 survived");
}

#[test]
fn orphans_die_at_level2() {
    let f = Fixture::new(User::Nobody);
    std::fs::create_dir_all(f.workspace()).unwrap();
    rows(&f, "2", &f.workspace());
}

#[test]
fn orphans_die_at_level3_but_declared_background_launches_survive() {
    let f = Fixture::new(User::Root);
    rows(&f, "3", &f.outside);
}

fn sandbox() -> LinuxSandbox {
    let mut s = LinuxSandboxSettings::from_env(
        env!("CARGO_BIN_EXE_sayri-sandbox").into(),
        vec![sayri_sandbox::EXEC_HELPER_ARG.into()],
    );
    let dir = std::env::temp_dir().join(format!("sayri-lib-test-{}", std::process::id()));
    s.state_dir = dir.join("state");
    s.config_dir = dir.join("config");
    LinuxSandbox::new(s)
}

fn request(level: SandboxLevel, command: &str) -> ExecRequest {
    ExecRequest {
        command: command.into(),
        level,
        agent_id: "test".into(),
        workspace: None,
        timeout: Duration::from_secs(10),
        allow_network: false,
        env: vec![],
        allowed_secrets: vec![],
        output_limit: 0,
        readable: None,
    }
}

#[tokio::test]
async fn cancellation_kills_the_tree_at_once() {
    for level in [SandboxLevel::ReadOnly, SandboxLevel::HostUser] {
        let tag = format!("sayricancel{}l{}", std::process::id(), level.number());
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            c2.cancel();
        });
        let t = Instant::now();
        let r = sandbox()
            .run(
                request(level, &format!("sleep 30 & sleep 29 # {tag}")),
                cancel,
            )
            .await;
        assert_eq!(r.status, ExecStatus::Killed, "{r:?}");
        // Far below the command's 29 s: cancelling ended it.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(wait_gone(&tag), "process of {level} survived cancellation");
    }
}

#[tokio::test]
async fn output_is_interleaved_in_order_and_capped() {
    let sb = sandbox();
    for level in [SandboxLevel::ReadOnly, SandboxLevel::HostUser] {
        let r = sb
            .run(
                request(
                    level,
                    "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 3",
                ),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(r.output, "out1\nerr1\nout2\nerr2\nout3\nerr3\n");
        assert_eq!((r.status, r.exit_code), (ExecStatus::Failed, Some(3)));
        let mut req = request(
            level,
            "head -c 100000 /dev/zero | tr '\\0' a; printf '\\xff'",
        );
        req.output_limit = 1000;
        let r = sb.run(req, CancellationToken::new()).await;
        // The first and the last 500 bytes, and the size of what lies between.
        assert_eq!(r.output, "a".repeat(500));
        assert_eq!(r.output_tail, format!("{}\u{fffd}", "a".repeat(499)));
        assert_eq!((r.omitted.bytes, r.omitted.lines), (99_001, 0));
        assert_eq!(
            r.output_text(),
            format!(
                "{}\n[… 0 lines / 99,001 bytes omitted …]\n{}\u{fffd}",
                "a".repeat(500),
                "a".repeat(499)
            )
        );
    }
    let r = sb
        .run(
            request(SandboxLevel::HostUser, "printf 'a\\xffb'"),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.output, "a\u{fffd}b");
}
