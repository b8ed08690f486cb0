//! Processes and late writes, for crash tests: finding the processes of a command by a token in
//! their command line, and observing whether a command ever reached its last step.
//!
//! A crash test runs commands of the [`COMMAND_SHAPES`] (a foreground command, one that
//! backgrounds a subshell, one that calls `setsid`), each ending with the action of an
//! [`EndMark`], kills whatever runs them, and checks that no process holding the command's
//! token is left and that [`EndMark::written`] stays empty.

use std::net::TcpListener;
use std::path::PathBuf;

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
