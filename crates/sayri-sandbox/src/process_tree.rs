//! Killing a whole process tree on the host (levels 3–4). The helper is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`), so orphans — including `setsid`/double-forked ones — are re-parented
//! to it instead of init and stay findable as its descendants.

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use std::collections::HashMap;

/// `PR_SET_CHILD_SUBREAPER` failed: orphans could not be found, so the command is not run.
#[derive(Debug, thiserror::Error)]
#[error("prctl(PR_SET_CHILD_SUBREAPER) failed: {0}")]
pub struct SubreaperError(pub std::io::Error);

/// Makes the calling process a child subreaper.
///
/// # Errors
/// [`SubreaperError`].
pub fn become_subreaper() -> Result<(), SubreaperError> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(SubreaperError(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// What `/proc/PID/stat` says about a process (the fields Sayri uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// State letter (`R`, `S`, `D`, `Z` for a zombie, …).
    pub state: char,
    /// Parent pid.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// Session id.
    pub session: i32,
    /// Start time in clock ticks after boot (field 22). With the pid it names one process per
    /// boot: a recycled pid has a later start time.
    pub start_ticks: u64,
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist (or the file is unreadable).
pub fn stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses the text of a `/proc/PID/stat` file. The command name (field 2) may contain spaces and
/// parentheses, so the fields are counted from its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so field N sits at index N - 3.
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// Every process visible in `/proc` with its stat (unreadable entries skipped).
pub fn all_processes() -> Vec<(i32, ProcStat)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// All descendants of `root`, parents before children (read from `/proc/<pid>/stat`).
pub fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, st) in all_processes() {
        children.entry(st.ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                out.push(k);
                queue.push(k);
            }
        }
    }
    out
}

/// SIGKILLs every descendant of the calling process (and every pid in `extra`, e.g. a cgroup's)
/// until none is left, reaping them. Gives up after about two seconds of stragglers.
///
/// The `/proc` walk is skipped when the caller has no child left at all (`ECHILD`): every living
/// descendant has a living or zombie ancestor among the caller's children, and an orphan is
/// re-parented to the caller when it is a child subreaper (levels 3–4) or to the sandbox's pid 1
/// (levels 1–2, whose pid namespace dies with it), so no child means no descendant.
pub fn kill_all_descendants(extra: &dyn Fn() -> Vec<i32>) {
    let me = std::process::id() as i32;
    for _ in 0..200 {
        reap();
        let mut pids = if has_children() {
            descendants(me)
        } else {
            Vec::new()
        };
        for p in extra() {
            if p != me && !pids.contains(&p) {
                pids.push(p);
            }
        }
        reap();
        if pids.is_empty() {
            return;
        }
        for p in &pids {
            let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
        }
        reap();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether the calling process has any child, running or not yet reaped (`waitpid` with
/// `WNOHANG` does not fail with `ECHILD`). Nothing is reaped.
pub fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data (all-zero is valid); waitid gets a valid buffer, and
    // WNOWAIT leaves any exited child unreaped.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a live, writable siginfo_t; waitid only writes into it, and WNOWAIT
    // leaves any exited child unreaped.
    let rc = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    !(rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Reaps every exited child without blocking.
pub fn reap() {
    while let Ok(st) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if st == nix::sys::wait::WaitStatus::StillAlive {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let text = "42 (a) b (c)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 1 2";
        let st = parse_stat(text).unwrap();
        assert_eq!(
            (st.state, st.ppid, st.pgrp, st.session, st.start_ticks),
            ('S', 7, 42, 42, 12345)
        );
        assert!(parse_stat("garbage").is_none());
    }
}
