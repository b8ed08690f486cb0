//! Children that die with the process that started them (`PR_SET_PDEATHSIG`).
//!
//! The kernel sends a child its parent-death signal when the **thread** that forked it exits,
//! not only when the whole process dies: a child forked from a worker thread that later retires
//! would be signalled while the daemon is still running. So every child that must die with the
//! daemon is started from one thread that lives as long as the process ([`spawn_tied`] hands the
//! command to it), and the hook run in the child between `fork` and `exec` ([`arm_in_child`])
//! sets the signal and then checks that the parent is still the expected process: a parent that
//! died between the two steps would never send the signal, so the child refuses to start.
//!
//! A hook forces a real `fork` (a copy of the daemon's page tables) for every child. The exec
//! helper, started once per command, does the same two steps itself instead ([`arm_self`] with
//! the daemon's pid from its spec, before anything else), so [`spawn_self_arming`] starts it with
//! `posix_spawn` — still from the spawner thread, since the signal follows the thread that
//! started the child whichever way it was started.
//!
//! The signal survives `exec` of an ordinary program but the kernel clears it when a
//! set-user-ID program (such as `pkexec`) is executed; such a program's payload arms itself
//! again with [`arm_self`].

use std::io;
use std::sync::OnceLock;
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// Stack of the spawner thread: forking needs little.
const SPAWNER_STACK: usize = 256 * 1024;

/// The long-lived spawner thread's queue, started on first use. `None` when the thread could
/// not be created (then every [`spawn_tied`] fails with that error).
fn spawner() -> Result<&'static mpsc::Sender<Job>, io::Error> {
    static SPAWNER: OnceLock<Result<mpsc::Sender<Job>, io::Error>> = OnceLock::new();
    let slot = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("sayri-spawner".into())
            .stack_size(SPAWNER_STACK)
            // The sender lives in a static, so `recv` only fails at process exit.
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .map(|_| tx)
    });
    slot.as_ref().map_err(|e| {
        io::Error::other(format!(
            "cannot start the thread that starts child processes: {e}"
        ))
    })
}

/// Spawns `cmd` so that the child receives `signal` when this process dies (also by
/// `SIGKILL`): the parent-death hook is added to `cmd` and the fork happens on the long-lived
/// spawner thread. Must be called inside a Tokio runtime (the child is a
/// `tokio::process::Child` of that runtime). When the returned future is dropped before the
/// child is handed over, the child gets `SIGTERM`.
///
/// # Errors
/// No Tokio runtime, the spawner thread cannot be started, or `spawn` itself fails (program
/// missing, a `pre_exec` hook failed, or this process is already dying).
pub async fn spawn_tied(
    mut cmd: tokio::process::Command,
    signal: libc::c_int,
) -> io::Result<tokio::process::Child> {
    arm(&mut cmd, signal);
    spawn_on_spawner(cmd).await
}

/// Spawns `cmd` from the long-lived spawner thread without adding any hook, so the standard
/// library starts it with `posix_spawn` (a `vfork`: no copy of this process's page tables). For
/// a program that arms its parent-death signal itself, first thing, with [`arm_self`] given
/// this process's pid (Sayri's exec helper): the signal then still comes from the spawner
/// thread's end, which is this process's end, and a program whose parent died before it armed
/// finds another parent and refuses to run. Same runtime, error and drop rules as
/// [`spawn_tied`].
///
/// # Errors
/// As [`spawn_tied`].
pub async fn spawn_self_arming(cmd: tokio::process::Command) -> io::Result<tokio::process::Child> {
    spawn_on_spawner(cmd).await
}

/// Hands `cmd` to the spawner thread and waits for its child.
async fn spawn_on_spawner(mut cmd: tokio::process::Command) -> io::Result<tokio::process::Child> {
    let handle = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = handle.enter();
        // A caller that gave up waiting (its future was dropped) cannot supervise the child:
        // it gets SIGTERM, on which Sayri's helpers and keepers stop their whole tree.
        if let Err(Ok(child)) = tx.send(cmd.spawn())
            && let Some(pid) = child.id()
        {
            // SAFETY: kill with a pid and a signal number.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
    });
    spawner()?
        .send(job)
        .map_err(|_| io::Error::other("the thread that starts child processes has stopped"))?;
    rx.await
        .map_err(|_| io::Error::other("the child process could not be started"))?
}

/// Adds the parent-death hook to `cmd`: in the child, `signal` is armed and the parent checked
/// (see [`arm_in_child`]). Use [`spawn_tied`] to spawn it, so the parent is a long-lived thread.
pub fn arm(cmd: &mut tokio::process::Command, signal: libc::c_int) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook only calls prctl and getppid, both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || arm_in_child(parent, signal));
    }
}

/// In a freshly forked child: asks for `signal` when the parent dies, then checks that the
/// parent is still `expected_parent` (it may have died before the request, and then no signal
/// would ever come). Only async-signal-safe calls.
///
/// # Errors
/// `prctl` failed, or the parent is gone (`ESRCH`).
pub fn arm_in_child(expected_parent: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != expected_parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Arms `signal` for the calling process and checks the parent, as [`arm_in_child`], for a
/// program that starts after a set-user-ID `exec` cleared the setting. `expected_parent` 0 skips
/// the check (the caller does not know its parent).
///
/// # Errors
/// [`ArmError`]: `prctl` failed, or the parent is gone.
pub fn arm_self(expected_parent: u32, signal: libc::c_int) -> Result<(), ArmError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(ArmError::Prctl(io::Error::last_os_error()));
    }
    if expected_parent != 0 && !parent_is(expected_parent) {
        return Err(ArmError::ParentGone);
    }
    Ok(())
}

/// Why [`arm_self`] could not tie the process to its parent; the process should exit.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    /// `PR_SET_PDEATHSIG` failed.
    #[error("prctl(PR_SET_PDEATHSIG) failed: {0}")]
    Prctl(io::Error),
    /// The parent exited before the signal was armed.
    #[error("the process that started this one has exited")]
    ParentGone,
}

/// Whether the calling process's parent is `pid`.
pub fn parent_is(pid: u32) -> bool {
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    u32::try_from(ppid).is_ok_and(|p| p == pid)
}
