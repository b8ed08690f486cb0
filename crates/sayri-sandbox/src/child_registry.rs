//! What the daemon started, written down so that the next daemon can clean up after a crash.
//!
//! Every long-lived child the daemon starts (exec helpers, supervised programs' keepers) gets a
//! small JSON record in the registry directory (`$STATE/children/`) while it runs. Each of those
//! children leads its own session and kills its own process tree when the daemon dies
//! (`PR_SET_PDEATHSIG`), so after a crash the directory normally holds only records of dead
//! processes. [`ChildRegistry::sweep`], run by the next daemon before it starts anything, kills
//! whatever a record still names and removes every record.
//!
//! A pid alone is not an identity: after a crash the number may belong to an unrelated program.
//! A record therefore holds the pid **and** its start time (`/proc/PID/stat` field 22) and the
//! boot id; a process is only touched when both still match (pinned by
//! `leftovers_of_a_crashed_daemon_are_killed_at_start_but_a_recycled_pid_is_left_alone`). The members of a dead leader's
//! session are killed only when no process holds the leader's pid: the kernel never hands out a
//! pid that is still some process's session id, so such members are the leader's own.

use crate::process_tree::{self, ProcStat};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A process as the kernel knows it: pid plus start time. The pair never names two processes
/// within one boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// Process id.
    pub pid: i32,
    /// Start time in clock ticks after boot.
    pub start_ticks: u64,
}

impl ProcessIdentity {
    /// The identity of the running process `pid`, or `None` when there is none.
    pub fn of(pid: i32) -> Option<ProcessIdentity> {
        process_tree::stat(pid).map(|s| ProcessIdentity {
            pid,
            start_ticks: s.start_ticks,
        })
    }

    /// The calling process.
    pub fn me() -> Option<ProcessIdentity> {
        i32::try_from(std::process::id()).ok().and_then(Self::of)
    }

    /// Whether this very process is still running (same pid, same start time, not a zombie).
    pub fn is_running(&self) -> bool {
        process_tree::stat(self.pid)
            .is_some_and(|s| s.start_ticks == self.start_ticks && s.state != 'Z')
    }
}

/// What kind of child a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildKind {
    /// An exec helper running one agent command.
    ExecHelper,
    /// The keeper of a supervised program (model server, gateway, plugin service).
    Supervised,
}

/// One record: who the child is, what it was, and which daemon started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildRecord {
    /// Kind of child.
    pub kind: ChildKind,
    /// What it was, for the log (`command`, or a supervised program's name).
    pub name: String,
    /// The child.
    pub process: ProcessIdentity,
    /// The session it leads (its own pid: helpers and keepers call `setsid` first thing).
    pub session: i32,
    /// `/proc/sys/kernel/random/boot_id` when it started: start times count from boot.
    pub boot_id: String,
    /// The daemon that started it; a record of a daemon that still runs is never swept.
    pub owner: ProcessIdentity,
}

/// What [`ChildRegistry::sweep`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Leftover processes killed: (what the record said it was, pid).
    pub killed: Vec<(String, i32)>,
    /// Records removed (all that were swept, whether or not something was still running).
    pub records: usize,
    /// Records skipped because the daemon that wrote them still runs.
    pub foreign: usize,
}

/// The registry directory. Cheap to clone; every method does its own I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRegistry {
    dir: PathBuf,
}

/// A record on disk, removed when dropped (the child was waited for).
#[derive(Debug)]
pub struct Recorded {
    path: PathBuf,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// This boot's id (empty when unreadable: records then only match within the same kernel view).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl ChildRegistry {
    /// A registry in `dir` (created with mode 0700 on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ChildRegistry { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the running child `pid` as `kind`/`name` (it leads session `pid`). The record is
    /// removed when the returned guard is dropped.
    ///
    /// # Errors
    /// The child is already gone (`NotFound`), or the file cannot be written.
    pub fn record(&self, kind: ChildKind, name: &str, pid: i32) -> io::Result<Recorded> {
        let process = ProcessIdentity::of(pid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the child has exited"))?;
        let owner = ProcessIdentity::me()
            .ok_or_else(|| io::Error::other("cannot read this process's own start time"))?;
        self.write(&ChildRecord {
            kind,
            name: name.to_string(),
            process,
            session: pid,
            boot_id: boot_id(),
            owner,
        })
    }

    /// Writes `record` as `<pid>-<start>.json` (mode 0600).
    ///
    /// # Errors
    /// The directory or the file cannot be written.
    pub fn write(&self, record: &ChildRecord) -> io::Result<Recorded> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let path = self.dir.join(format!(
            "{}-{}.json",
            record.process.pid, record.process.start_ticks
        ));
        let json = serde_json::to_vec(record).map_err(io::Error::other)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?
            .write_all(&json)?;
        Ok(Recorded { path })
    }

    /// Every readable record with its file. Unreadable files are removed.
    pub fn records(&self) -> Vec<(PathBuf, ChildRecord)> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            match std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<ChildRecord>(&b).ok())
            {
                Some(r) => out.push((path, r)),
                // A record cut short by a crash while it was written names nothing usable.
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        out
    }

    /// Kills what the records of dead daemons still name and removes those records. Call it at
    /// start, before starting any child. Records of a daemon that still runs are left alone.
    pub fn sweep(&self) -> SweepReport {
        let mut report = SweepReport::default();
        let boot = boot_id();
        for (path, rec) in self.records() {
            if rec.owner.is_running() {
                report.foreign += 1;
                continue;
            }
            if rec.boot_id == boot {
                for pid in kill_leftover(&rec) {
                    report.killed.push((rec.name.clone(), pid));
                }
            }
            let _ = std::fs::remove_file(&path);
            report.records += 1;
        }
        report
    }
}

/// Pids of the cgroups an exec helper with `pid` may have created (see [`crate::cgroup`]).
fn cgroup_members(pid: i32) -> Vec<i32> {
    crate::cgroup::dirs_for(pid as u32)
        .iter()
        .flat_map(|d| crate::cgroup::pids_in(d))
        .collect()
}

/// SIGKILLs every process of `rec` that is still there, until none is left (about 2 s at most):
/// the child itself when its identity still matches, its descendants, the members of its
/// session started after it, and (exec helpers) its cgroup's members. Returns the pids killed.
fn kill_leftover(rec: &ChildRecord) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut killed = Vec::new();
    for _ in 0..200 {
        let leader_alive = rec.process.is_running();
        // A live process with the leader's pid but another start time means the number was
        // reused: nothing of the old session or cgroup can be left (see the module docs).
        let ours = leader_alive || process_tree::stat(rec.process.pid).is_none();
        if !ours {
            break;
        }
        let mut victims: Vec<i32> = Vec::new();
        if leader_alive {
            victims.extend(process_tree::descendants(rec.process.pid));
        }
        victims.extend(
            process_tree::all_processes()
                .into_iter()
                .filter(|(pid, st)| in_session(rec, *pid, st))
                .map(|(pid, _)| pid),
        );
        if rec.kind == ChildKind::ExecHelper {
            victims.extend(cgroup_members(rec.process.pid));
        }
        if leader_alive {
            victims.push(rec.process.pid);
        }
        victims.sort_unstable();
        victims.dedup();
        victims.retain(|p| *p != me && *p > 1);
        if victims.is_empty() {
            break;
        }
        for p in &victims {
            // SAFETY: kill with a pid and a signal number.
            unsafe { libc::kill(*p, libc::SIGKILL) };
            if !killed.contains(p) {
                killed.push(*p);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if rec.kind == ChildKind::ExecHelper {
        crate::cgroup::remove_for(rec.process.pid as u32);
    }
    killed
}

/// Whether process `pid` with `st` is a living member of `rec`'s session started after it.
fn in_session(rec: &ChildRecord, pid: i32, st: &ProcStat) -> bool {
    st.session == rec.session
        && pid != rec.process.pid
        && st.state != 'Z'
        && st.start_ticks >= rec.process.start_ticks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_record_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let reg = ChildRegistry::new(dir.path().join("children"));
        let me = std::process::id() as i32;
        let guard = reg.record(ChildKind::Supervised, "probe", me).unwrap();
        std::fs::write(reg.dir().join("1-2.json"), "{\"kind\":").unwrap();
        let recs = reg.records();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].1.process.pid, me);
        assert_eq!(recs[0].1.name, "probe");
        assert!(!reg.dir().join("1-2.json").exists(), "torn record removed");
        drop(guard);
        assert!(reg.records().is_empty(), "the guard removes its record");
    }

    #[test]
    fn records_of_a_running_daemon_are_never_swept() {
        let dir = tempfile::tempdir().unwrap();
        let reg = ChildRegistry::new(dir.path());
        // Owned by this (running) process: a second daemon on the same state dir must not
        // touch it, even though the recorded child is alive.
        let _g = reg
            .record(ChildKind::ExecHelper, "command", std::process::id() as i32)
            .unwrap();
        let r = reg.sweep();
        assert_eq!((r.foreign, r.records, r.killed.len()), (1, 0, 0));
        assert!(ProcessIdentity::me().unwrap().is_running());
    }
}
