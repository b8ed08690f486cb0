//! Nothing a command started outlives its launcher: `kill -9` of the process that runs the
//! sandbox (here the `sayri-sandbox run` CLI, in the daemon the daemon itself) mid-command kills
//! the command's whole tree within a second, at levels 1, 2 and 3, as root and as uid 65534 —
//! a foreground command, one that backgrounds a subshell, and one that calls `setsid` — and the
//! file each would have written at its end is never written. A declared background launch at
//! level 3 is the one thing that survives, by design.

use super::common::*;
use sayri_testkit::procs::{COMMAND_SHAPES, EndMark, processes_with, shape_command};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `sayri-sandbox run` for `cmd` at `level` as the fixture's user, without waiting.
fn start_cli(f: &Fixture, level: &str, extra: &[&str], cmd: &str) -> Child {
    let mut args = vec!["--timeout", "60"];
    args.extend_from_slice(extra);
    f.command(level, &args, cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Where a level's command leaves its mark at its end (level 1: a loopback connection, since
/// nothing it writes persists; level 2: the workspace; level 3: an empty host directory), and the
/// extra CLI arguments that make it possible.
fn mark_for(f: &Fixture, level: &str) -> (EndMark, Vec<String>) {
    let dir = match level {
        "1" => return (EndMark::connection(), vec!["--network".into()]),
        "2" => f.workspace(),
        _ => f.outside.join("marks"),
    };
    std::fs::create_dir_all(&dir).unwrap();
    if f.user == User::Nobody {
        chown(&dir);
    }
    let extra = match level {
        "2" => vec![],
        _ => vec!["--workspace".into(), dir.display().to_string()],
    };
    (EndMark::Dir(dir), extra)
}

fn chown(p: &Path) {
    let st = Command::new("chown")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Runs the three shapes at `level`, kills each launcher with SIGKILL once its command runs,
/// and checks that every process is gone within a second and that no end action happens.
fn crash_each_shape(user: User, level: &str) {
    let f = Fixture::new(user);
    let (mark, extra) = mark_for(&f, level);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let unique = format!("{}{}{}", std::process::id(), level, user as u8);
    let mut slowest = Duration::ZERO;
    for (i, (shape, template)) in COMMAND_SHAPES.iter().enumerate() {
        let s = format!("{unique}{i}");
        let cmd = shape_command(template, &s, &mark.end_action(shape));
        let mut cli = start_cli(&f, level, &extra, &cmd);
        let token = format!("3.{s}");
        // The launcher's own command line holds the command text too: wait for the sleep.
        let running = wait_for(Duration::from_secs(10), || {
            processes_with(&token)
                .iter()
                .any(|(_, c)| c.starts_with("sleep 3."))
        });
        assert!(running, "{shape} at level {level} ({user:?}) never started");
        cli.kill().unwrap(); // SIGKILL
        cli.wait().unwrap();
        let t = Instant::now();
        let gone = wait_for(Duration::from_secs(3), || processes_with(&s).is_empty());
        let took = t.elapsed();
        assert!(
            gone && took <= Duration::from_secs(1),
            "{shape} at level {level} ({user:?}): still running {took:?} after the launcher died: {:?}",
            processes_with(&s)
        );
        slowest = slowest.max(took);
    }
    eprintln!("level {level} ({user:?}): slowest clean-up {slowest:?}");
    // Past the moment every end action would have run.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(
        mark.written(),
        Vec::<String>::new(),
        "level {level} ({user:?}): an end action ran after its launcher died"
    );
}

fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_1() {
    crash_each_shape(User::Root, "1");
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_1_as_unprivileged_user() {
    crash_each_shape(User::Nobody, "1");
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_2() {
    crash_each_shape(User::Root, "2");
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_2_as_unprivileged_user() {
    crash_each_shape(User::Nobody, "2");
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_3() {
    crash_each_shape(User::Root, "3");
}

#[test]
fn killing_the_launcher_kills_every_command_process_at_level_3_as_unprivileged_user() {
    crash_each_shape(User::Nobody, "3");
}

#[test]
fn a_declared_background_launch_outlives_its_launcher_by_design() {
    let f = Fixture::new(User::Root);
    let marker = f.outside.join("launched");
    let s = format!("{}9", std::process::id());
    let cmd = format!("sh -c 'sleep 1.{s}; touch {}' &", marker.display());
    let ws = f.outside.display().to_string();
    let mut cli = start_cli(&f, "3", &["--workspace", &ws], &cmd);
    assert!(wait_for(Duration::from_secs(10), || {
        processes_with(&format!("1.{s}"))
            .iter()
            .any(|(_, c)| c.starts_with("sleep 1."))
    }));
    cli.kill().unwrap();
    cli.wait().unwrap();
    // The launch is the user's app (`firefox &`): it keeps running and finishes its work.
    assert!(
        wait_for(Duration::from_secs(5), || marker.exists()),
        "the declared background launch was killed with its launcher"
    );
}
