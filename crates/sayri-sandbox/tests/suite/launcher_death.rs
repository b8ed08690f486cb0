//! Nothing a command started outlives its launcher: `kill -9` of the process that runs the
//! sandbox (here the `sayri-sandbox run` CLI, in the daemon the daemon itself) mid-command kills
//! the command's whole tree within a second, at levels 1, 2 and 3, as root and as uid 65534 —
//! a foreground command, one that backgrounds a subshell, and one that calls `setsid` — and the
//! file each would have written at its end is never written. A declared background launch at
//! level 3 is the one thing that survives, by design.

use super::common::*;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The three command shapes; `{s}` is the unique sleep suffix, `{end}` the final action.
const SHAPES: [(&str, &str); 3] = [
    ("foreground", "sleep 3.{s}; {end}"),
    ("backgrounded", "(sleep 3.{s}; {end}) & sleep 30.{s}"),
    ("setsid", "setsid sh -c 'sleep 3.{s}; {end}' & sleep 30.{s}"),
];

/// Live (non-zombie) processes whose command line contains `token`, as `(pid, command line)`.
pub fn processes_with(token: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let zombie = std::fs::read_to_string(p.join("stat"))
            .ok()
            .and_then(|s| {
                s.rfind(')')
                    .map(|i| s[i + 1..].trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && cmdline.contains(token) {
            out.push((e.file_name().to_string_lossy().into_owned(), cmdline));
        }
    }
    out
}

/// Starts `sayri-sandbox run` for `cmd` at `level` as the fixture's user, without waiting.
fn start_cli(f: &Fixture, level: &str, extra: &[&str], cmd: &str) -> Child {
    let bin = env!("CARGO_BIN_EXE_sayri-sandbox");
    let mut c = match f.user {
        User::Root => Command::new(bin),
        User::Nobody => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
            c
        }
    };
    c.env_clear()
        .env("HOME", &f.home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LANG", "C")
        .args(["run", "--json", "--timeout", "60", "--level", level])
        .args(extra)
        .arg("--")
        .arg(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().unwrap()
}

/// Where a level's command leaves its mark at the end: a file it can write (level 2: the
/// workspace; level 3: a host directory), or at level 1, where nothing it writes persists, a
/// connection to a loopback listener.
enum Mark {
    File(PathBuf),
    Connection(TcpListener),
}

impl Mark {
    fn end_action(&self, shape: &str) -> String {
        match self {
            Mark::File(dir) => format!("touch {}", dir.join(shape).display()),
            Mark::Connection(l) => format!(
                "echo {shape} > /dev/tcp/127.0.0.1/{}",
                l.local_addr().unwrap().port()
            ),
        }
    }

    fn written(&self) -> Vec<String> {
        match self {
            Mark::File(dir) => SHAPES
                .iter()
                .filter(|(s, _)| dir.join(s).exists())
                .map(|(s, _)| s.to_string())
                .collect(),
            Mark::Connection(l) => l
                .accept()
                .ok()
                .map(|_| "a connection".into())
                .into_iter()
                .collect(),
        }
    }
}

fn mark_for(f: &Fixture, level: &str) -> (Mark, Vec<String>) {
    match level {
        "1" => {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.set_nonblocking(true).unwrap();
            (Mark::Connection(l), vec!["--network".into()])
        }
        "2" => {
            std::fs::create_dir_all(f.workspace()).unwrap();
            if f.user == User::Nobody {
                chown(&f.workspace());
            }
            (Mark::File(f.workspace()), vec![])
        }
        _ => (
            Mark::File(f.outside.clone()),
            vec!["--workspace".into(), f.outside.display().to_string()],
        ),
    }
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
    for (i, (shape, template)) in SHAPES.iter().enumerate() {
        let s = format!("{unique}{i}");
        let cmd = template
            .replace("{s}", &s)
            .replace("{end}", &mark.end_action(shape));
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
