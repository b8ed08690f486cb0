//! A daemon started by hand on a terminal (in the foreground of a shell, so the terminal is its
//! controlling terminal) runs the model's commands without that terminal: a command cannot type
//! into it with `TIOCSTI`, which the same probe run directly on the terminal does.

use super::secret_rig::{
    Listener, answer_reply, events, quit_daemon, run_reply, runtime, scripted,
};
use super::secret_rig::{write_agent, write_config};
use super::support::*;
use sayri_testkit::FakeLlm;
use sayri_testkit::terminal::{Pty, TIOCSTI_PROBE_PY, own_terminal};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_daemon_started_on_a_terminal_runs_commands_that_cannot_type_into_it() {
    let dir = tempfile::Builder::new()
        .prefix("sy-tty-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let probe = dir.path().join("probe.py");
    std::fs::write(&probe, TIOCSTI_PROBE_PY).unwrap();
    let marker = dir.path().join("never");
    let probe_cmd = format!("python3 {} {}", probe.display(), marker.display());

    // Control: run directly with the terminal as its controlling terminal, the probe types into
    // it (what it pushed waits in the input queue).
    let control = Pty::open();
    let mut c = Command::new("sh");
    c.arg("-c").arg(&probe_cmd);
    let (i, o, e) = control.stdio();
    c.stdin(i).stdout(o).stderr(e);
    // SAFETY: `own_terminal` makes async-signal-safe calls only.
    unsafe { own_terminal(&mut c, None) };
    assert!(c.status().unwrap().success());
    assert!(control.wait_for("/dev/tty: ", Duration::from_secs(10)));
    if control.input_queue_len() == 0 {
        let setting = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti");
        assert_eq!(
            setting.map(|s| s.trim().to_string()).ok().as_deref(),
            Some("0"),
            "the kernel allows legacy TIOCSTI but the probe did not inject: {}",
            control.screen()
        );
        eprintln!("SKIPPED: this kernel refuses legacy TIOCSTI; the daemon row proves nothing");
        return;
    }
    assert!(
        control.screen().contains("INJECTED"),
        "{}",
        control.screen()
    );

    // The daemon in the foreground on a terminal; the model asks to run the probe at level 3.
    let env = Env::new();
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![
            run_reply(&probe_cmd),
            answer_reply("Probed."),
        ])))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    write_agent(&env, "prober", &[]);
    let term = Pty::open();
    let mut daemon = env.cmd();
    daemon.arg("daemon");
    let (i, o, e) = term.stdio();
    daemon.stdin(i).stdout(o).stderr(e);
    // SAFETY: `own_terminal` makes async-signal-safe calls only.
    unsafe { own_terminal(&mut daemon, None) };
    let mut d = Daemon {
        child: Some(daemon.spawn().unwrap()),
        log: env.daemon_log(),
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while RawClient::try_connect(&env.socket()).is_err() {
        assert!(
            Instant::now() < deadline,
            "daemon did not start: {}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let a = Listener::connect(&env.socket());
    let o = env.run(&[
        "ask",
        "--timeout",
        "60",
        "--agent",
        "prober",
        "--new",
        "run the probe",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    quit_daemon(&env, &mut d);
    let lines = a.finish();

    let finish = events(&lines, "tool_finish");
    assert_eq!(finish.len(), 1, "{finish:?}");
    let out = finish[0]["output"].as_str().unwrap();
    assert!(!out.contains("INJECTED"), "{out}");
    assert!(
        out.contains("/dev/tty: open ENXIO"),
        "no controlling terminal: {out}"
    );
    for fd in ["fd0", "fd1", "fd2"] {
        assert!(out.contains(&format!("{fd}: not-a-tty")), "{out}");
    }
    assert_eq!(
        term.input_queue_len(),
        0,
        "something was typed into the daemon's terminal: {}",
        term.screen()
    );
    assert!(!marker.exists());
    drop(rt);
}
