//! Processes in tests and benchmarks.
//!
//! **Crash tests**:
//! Processes and late writes, for crash tests: finding the processes of a command by a token in
//! their command line, and observing whether a command ever reached its last step.
//!
//! A crash test runs commands of the [`COMMAND_SHAPES`] (a foreground command, one that
//! backgrounds a subshell, one that calls `setsid`), each ending with the action of an
//! [`EndMark`], kills whatever runs them, and checks that no process holding the command's
//! token is left and that [`EndMark::written`] stays empty.
//!
//! **Processes a test or a benchmark starts**: stopped when their handle drops, and found when
//! they outlive it.
//!
//! * [`ChildGuard`] owns a child (a `sayri daemon`, a client): dropping it — at the end of a
//!   scope or while a failed assertion unwinds — sends SIGTERM, waits up to its grace period,
//!   then SIGKILLs and reaps it. A benchmark that panics half-way leaves nothing running;
//!   [`ChildGuard::spawn_tied`] also covers a benchmark killed from outside.
//! * [`leftovers`] finds processes a handle cannot know about (a daemon the CLI started in the
//!   background, what that daemon started): every live process whose environment, command line
//!   or working directory mentions a marker path — the test's own temporary directory, which
//!   every process it starts receives as `SAYRI_STATE_DIR`/`HOME`/`SAYRI_CONFIG_DIR` and passes on.
//!   Zombies are not counted (they are gone, only not yet reaped). Processes of other users
//!   that `/proc` does not let us read are not seen; sandboxed commands that dropped the
//!   environment are seen only through their working directory.
//! * [`stop_leftovers`] waits for such processes to exit on their own (a daemon told to `quit`
//!   takes up to a second), then kills the rest and returns them, so a test can fail naming the
//!   leak without leaving it behind.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Live (non-zombie) processes whose command line contains `token`: `(pid, command line)` with
/// the arguments joined by spaces.
pub fn processes_with(token: &str) -> Vec<(i32, String)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if !alive(pid) {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(token) {
            out.push((pid, cmdline));
        }
    }
    out
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| !s[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The three shapes of a command a crash must not leave behind: `(name, template)`, where
/// `{s}` is a unique suffix for the sleeps (digits only) and `{end}` the final action.
pub const COMMAND_SHAPES: [(&str, &str); 3] = [
    ("foreground", "sleep 3.{s}; {end}"),
    ("backgrounded", "(sleep 3.{s}; {end}) & sleep 30.{s}"),
    ("setsid", "setsid sh -c 'sleep 3.{s}; {end}' & sleep 30.{s}"),
];

/// The command of shape `template` with the unique suffix `s` and final action `end`.
pub fn shape_command(template: &str, s: &str, end: &str) -> String {
    template.replace("{s}", s).replace("{end}", end)
}

/// Where a command leaves its mark at its very end: a file in a directory it can write, or,
/// where nothing it writes persists (sandbox level 1), a connection to a loopback listener.
pub enum EndMark {
    /// `touch DIR/<shape>`.
    Dir(PathBuf),
    /// `echo <shape> > /dev/tcp/127.0.0.1/PORT`.
    Connection(TcpListener),
}

impl EndMark {
    /// A mark made by connecting to a fresh loopback listener.
    pub fn connection() -> EndMark {
        let l = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        l.set_nonblocking(true).expect("a non-blocking listener");
        EndMark::Connection(l)
    }

    /// The shell action that makes the mark for `shape`.
    pub fn end_action(&self, shape: &str) -> String {
        match self {
            EndMark::Dir(d) => format!("touch {}", d.join(shape).display()),
            EndMark::Connection(l) => format!(
                "echo {shape} > /dev/tcp/127.0.0.1/{}",
                l.local_addr().map(|a| a.port()).unwrap_or(0)
            ),
        }
    }

    /// The marks made so far (file names, or `a connection`).
    pub fn written(&self) -> Vec<String> {
        match self {
            EndMark::Dir(d) => std::fs::read_dir(d)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default(),
            EndMark::Connection(l) => l
                .accept()
                .map(|_| "a connection".to_string())
                .into_iter()
                .collect(),
        }
    }
}

/// A live process found by [`leftovers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// Its process id.
    pub pid: i32,
    /// Its command line, arguments joined by spaces.
    pub cmdline: String,
}

/// A child process that is stopped when the guard drops: SIGTERM, up to `grace` to exit, then
/// SIGKILL; always reaped.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
    grace: Duration,
}

impl ChildGuard {
    /// Guards `child`, giving it `grace` to exit after SIGTERM.
    pub fn new(child: Child, grace: Duration) -> ChildGuard {
        ChildGuard {
            child: Some(child),
            grace,
        }
    }

    /// Spawns `cmd` tied to this process: the child also gets SIGTERM when the thread that
    /// spawned it ends (`PR_SET_PDEATHSIG`), so a benchmark killed from outside (`timeout`,
    /// SIGKILL) does not leave it running either. Use it from a thread that outlives the child
    /// (a benchmark's main thread), not from a pool thread.
    ///
    /// # Errors
    /// The spawn's error.
    pub fn spawn_tied(cmd: &mut Command, grace: Duration) -> std::io::Result<ChildGuard> {
        tie_to_this_process(cmd)
            .spawn()
            .map(|c| ChildGuard::new(c, grace))
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// The child, e.g. to `try_wait` on it; `None` once stopped.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Stops the child now (SIGTERM, then SIGKILL after the grace period). Returns its exit
    /// status when it exited within the grace period, `None` when it had to be killed or was
    /// already stopped.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        signal(child.id() as i32, libc::SIGTERM);
        let deadline = Instant::now() + self.grace;
        loop {
            match child.try_wait() {
                Ok(Some(st)) => return Some(st),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes the child `cmd` spawns get SIGTERM when the thread that spawns it ends
/// (`PR_SET_PDEATHSIG`, checked against the parent's pid so a parent that died first is
/// noticed), so a benchmark killed from outside does not leave it running. Spawn from a thread
/// that outlives the child (a benchmark's main thread), not from a pool thread. For children
/// that are waited for (`output()`, `status()`); [`ChildGuard::spawn_tied`] for the others.
pub fn tie_to_this_process(cmd: &mut Command) -> &mut Command {
    let parent = std::process::id();
    // SAFETY: prctl, getppid and raise are async-signal-safe and touch no memory of the
    // parent; this runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the request took effect.
            if libc::getppid() as u32 != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        })
    }
}

fn signal(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: kill(2) on a pid we started (or found mentioning our own marker); no memory
        // is touched.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Every live process other than this one whose environment, command line or working
/// directory mentions `marker` (see the module doc).
pub fn leftovers(marker: &Path) -> Vec<Leftover> {
    let needle = marker.as_os_str().as_encoded_bytes();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Leftover> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && !is_zombie(pid))
        .filter(|&pid| mentions(pid, needle))
        .map(|pid| Leftover {
            pid,
            cmdline: cmdline(pid),
        })
        .collect();
    found.sort_by_key(|l| l.pid);
    found
}

/// Waits up to `grace` for the processes mentioning `marker` to exit, then SIGKILLs those left
/// and returns them (empty when nothing was left behind).
pub fn stop_leftovers(marker: &Path, grace: Duration) -> Vec<Leftover> {
    let deadline = Instant::now() + grace;
    loop {
        let left = leftovers(marker);
        if left.is_empty() {
            return left;
        }
        if Instant::now() >= deadline {
            for l in &left {
                signal(l.pid, libc::SIGKILL);
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn mentions(pid: i32, needle: &[u8]) -> bool {
    let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))
        .map(|p| p.into_os_string().into_encoded_bytes())
        .unwrap_or_default();
    contains(&read("environ"), needle)
        || contains(&read("cmdline"), needle)
        || contains(&cwd, needle)
}

/// Whether `pid` has exited but is not reaped yet (state `Z`), or is already gone.
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // The state follows the parenthesised command name, which may itself contain ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_none_or(|state| state == "Z" || state == "X")
}

fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_process_mentioning_the_marker_is_found_and_a_guard_stops_it() {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("sleep")
            .arg("600")
            .env("SAYRI_STATE_DIR", dir.path().join("state"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut guard = ChildGuard::new(child, Duration::from_secs(5));
        let found = leftovers(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, pid);
        assert_eq!(found[0].cmdline, "sleep 600");
        // Another directory's processes are not ours.
        let other = tempfile::tempdir().unwrap();
        assert!(leftovers(other.path()).is_empty());
        // `sleep` ends on SIGTERM; the guard reaps it, so it is neither live nor a zombie.
        assert!(guard.stop().is_some());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn stop_leftovers_kills_an_orphan_that_outlives_the_grace_period() {
        let dir = tempfile::tempdir().unwrap();
        // The shell starts a background sleep and exits: the sleep is an orphan no handle owns.
        let status = Command::new("sh")
            .arg("-c")
            .arg("sleep 600 >/dev/null 2>&1 &")
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let left = stop_leftovers(dir.path(), Duration::from_millis(200));
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].cmdline.starts_with("sleep"), "{left:?}");
        let gone = |pid: i32| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if is_zombie(pid) {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            false
        };
        assert!(gone(left[0].pid), "the orphan was killed");
    }

    #[test]
    fn a_tied_child_is_stopped_when_the_thread_that_spawned_it_ends() {
        let mut guard = std::thread::spawn(|| {
            ChildGuard::spawn_tied(
                Command::new("sleep").arg("600").stdin(Stdio::null()),
                Duration::from_secs(5),
            )
            .unwrap()
        })
        .join()
        .unwrap();
        let child = guard.child_mut().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGTERM));
    }
}
