//! A per-command `pids` cgroup (v1 `pids` controller or cgroup v2 with `pids` enabled) when the
//! caller may create one — in practice when running as root, where `RLIMIT_NPROC` is not enforced
//! (the kernel exempts uid 0). It caps the number of tasks and lists every task for the final kill.
//!
//! Joining and leaving go through the cgroup-v1 `tasks` file with `0` (the calling thread): the
//! callers are single-threaded, so this moves the whole process, and the kernel skips the global
//! threadgroup lock whose write side waits for an RCU grace period (5–15 ms per `cgroup.procs`
//! write on the 2-core machines Sayri was measured on). Cgroup v2 has no `tasks` file; there the
//! pid goes to `cgroup.procs`.

use std::path::PathBuf;

/// A cgroup owned by one command; removed on drop.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
    /// The parent's `tasks` (v1) or `cgroup.procs` (v2) and whether it is `tasks`, opened before
    /// the helper enters a user namespace (writes through it are checked against the opener's
    /// credentials).
    parent_procs: Option<(std::fs::File, bool)>,
}

impl PidsCgroup {
    /// Creates `sayri-sandbox-<pid>` under the first writable pids hierarchy with `pids.max = max`,
    /// or `None` when there is none.
    pub fn create(max: u64) -> Option<Self> {
        let name = format!("sayri-sandbox-{}", std::process::id());
        for root in ROOTS {
            let root = PathBuf::from(root);
            if !root.join("cgroup.procs").exists() {
                continue;
            }
            let dir = root.join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let open = |name: &str| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(root.join(name))
                    .ok()
            };
            let parent_procs = open("tasks")
                .map(|f| (f, true))
                .or_else(|| open("cgroup.procs").map(|f| (f, false)));
            let cg = PidsCgroup { dir, parent_procs };
            if std::fs::write(cg.dir.join("pids.max"), max.to_string()).is_ok() {
                return Some(cg);
            }
        }
        None
    }

    /// Moves the calling process into the cgroup. The caller must be single-threaded: on cgroup
    /// v1 only the calling thread is moved (see the module docs).
    pub fn join_self(&self) -> std::io::Result<()> {
        let tasks = self.dir.join("tasks");
        if tasks.exists() {
            std::fs::write(tasks, "0")
        } else {
            std::fs::write(
                self.dir.join("cgroup.procs"),
                std::process::id().to_string(),
            )
        }
    }

    /// Pids currently in the cgroup.
    pub fn pids(&self) -> Vec<i32> {
        pids_in(&self.dir)
    }
}

impl PidsCgroup {
    /// Moves the calling process back to the parent cgroup and removes this one (call after every
    /// task in it has been killed; `std::process::exit` skips `Drop`).
    pub fn release(&self) {
        if let Some((mut f, is_tasks)) = self.parent_procs.as_ref().map(|(f, t)| (f, *t)) {
            use std::io::Write;
            let id = if is_tasks {
                "0".to_string()
            } else {
                std::process::id().to_string()
            };
            let _ = f.write_all(id.as_bytes());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Where pids hierarchies may be mounted, tried in this order.
const ROOTS: [&str; 3] = [
    "/sys/fs/cgroup/pids",
    "/sys/fs/cgroup/unified",
    "/sys/fs/cgroup",
];

/// The cgroup directories a helper with `helper_pid` may have created that exist now.
pub fn dirs_for(helper_pid: u32) -> Vec<PathBuf> {
    ROOTS
        .iter()
        .map(|root| PathBuf::from(root).join(format!("sayri-sandbox-{helper_pid}")))
        .filter(|d| d.is_dir())
        .collect()
}

/// Pids listed in the `cgroup.procs` of `dir` (empty when unreadable).
pub fn pids_in(dir: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Removes the (empty) cgroup a finished helper with `helper_pid` created, if any. The launcher
/// calls this because a level-1/2 helper sits in a user namespace and cannot remove it itself;
/// the next daemon calls it for the helpers of a daemon that crashed.
pub fn remove_for(helper_pid: u32) {
    for d in dirs_for(helper_pid) {
        let _ = std::fs::remove_dir(d);
    }
}
