//! Connections made from inside a command the daemon runs.
//!
//! Every process the daemon starts for a command is its descendant (the exec helper is a child
//! subreaper, and remaining descendants are killed when the command ends). A peer whose process
//! (from `SO_PEERCRED`) has the daemon among its ancestors is therefore a command of a turn,
//! driven by the model. Such a connection may use the assistant, but not manage Sayri: the
//! dispatcher refuses it every command registered as [`Access::Management`] (answering or
//! forgetting permission cards, changing settings, agents or secrets, deleting the user's
//! sessions, stopping the daemon). When the ancestry cannot be read the peer counts as a command
//! (fail closed).
//!
//! This is a boundary for commands that reach the socket by any means (a script, `socat`,
//! Python) at levels 3–4; levels 1–2 cannot reach a Unix socket at all. A command that gets a
//! service manager to start a process outside the daemon's tree is not caught.
//!
//! [`Access::Management`]: crate::daemon::dispatch::Access::Management

/// Who is on the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The user's own programs (CLI, apps).
    User,
    /// A process running inside a command of a turn of this daemon, or one whose ancestry
    /// could not be read ([`peer_is_command`]).
    Command,
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (the field after the parenthesised name).
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the process `peer` (a pid from `SO_PEERCRED`; `None` when unknown) runs inside a
/// command of this daemon: it is a strict descendant of this process. Unknown or unreadable
/// ancestry answers `true` (fail closed); the peer being this process itself answers `false`
/// (an embedded daemon's own clients).
pub fn peer_is_command(peer: Option<i32>) -> bool {
    peer_is_command_outside(peer, &[])
}

/// As [`peer_is_command`], except that a process of the tree of one of `front_ends` (the keeper
/// pids of the UIs the daemon runs for the person with `ui_start`, which only the person may
/// use) is the person's front-end, not a command.
pub fn peer_is_command_outside(peer: Option<i32>, front_ends: &[i32]) -> bool {
    let me = std::process::id() as i32;
    let Some(mut pid) = peer.filter(|&p| p > 0) else {
        return true;
    };
    if pid == me {
        return false;
    }
    for _ in 0..4096 {
        if front_ends.contains(&pid) {
            return false;
        }
        match parent_of(pid) {
            Some(p) if p == me => return true,
            Some(p) if p <= 1 => return false,
            Some(p) => pid = p,
            None => return true,
        }
    }
    true
}

/// The kind of caller behind a connection whose peer pid is `peer` ([`peer_is_command`]).
pub fn caller_of(peer: Option<i32>) -> Caller {
    caller_outside(peer, &[])
}

/// The kind of caller behind a connection whose peer pid is `peer`, a process of the tree of
/// one of `front_ends` counting as the person ([`peer_is_command_outside`]).
pub fn caller_outside(peer: Option<i32>, front_ends: &[i32]) -> Caller {
    if peer_is_command_outside(peer, front_ends) {
        Caller::Command
    } else {
        Caller::User
    }
}
