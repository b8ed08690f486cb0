//! Resource limits (`setrlimit(2)`): address space, file size, CPU time, process count.

use crate::settings::ResourceLimits;
use nix::sys::resource::{Resource, setrlimit};

/// A resource limit the kernel refused; the command is then not run.
#[derive(Debug, thiserror::Error)]
#[error("cannot set {name} to {value}: {source}")]
pub struct RlimitError {
    /// The limit, e.g. `RLIMIT_AS`.
    pub name: &'static str,
    /// The value asked for.
    pub value: u64,
    /// The kernel's answer.
    pub source: nix::errno::Errno,
}

/// Applies `limits` to the calling process. `cpu_seconds` bounds CPU time (`RLIMIT_CPU`);
/// `nproc` is the absolute `RLIMIT_NPROC` value (see [`nproc_for_host_user`] for level 3).
///
/// # Errors
/// [`RlimitError`] naming the limit that could not be set.
pub fn apply(limits: &ResourceLimits, cpu_seconds: u64, nproc: u64) -> Result<(), RlimitError> {
    let set = |r: Resource, value: u64, name: &'static str| {
        setrlimit(r, value, value).map_err(|source| RlimitError {
            name,
            value,
            source,
        })
    };
    set(Resource::RLIMIT_AS, limits.address_space_bytes, "RLIMIT_AS")?;
    set(
        Resource::RLIMIT_FSIZE,
        limits.file_size_bytes,
        "RLIMIT_FSIZE",
    )?;
    set(Resource::RLIMIT_CPU, cpu_seconds.max(1), "RLIMIT_CPU")?;
    set(Resource::RLIMIT_NPROC, nproc, "RLIMIT_NPROC")?;
    set(Resource::RLIMIT_CORE, 0, "RLIMIT_CORE")?;
    Ok(())
}

/// `RLIMIT_NPROC` for a host-user command: `RLIMIT_NPROC` counts every process of the real uid,
/// so the budget is added to the number of processes `uid` already has (from `/proc`).
pub fn nproc_for_host_user(uid: u32, budget: u64) -> u64 {
    let mut count = 0u64;
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            if !n.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
            let real = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|r| r.split_whitespace().next())
                .and_then(|r| r.parse::<u32>().ok());
            if real == Some(uid) {
                let threads = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(1);
                count += threads;
            }
        }
    }
    count + budget
}
