//! The keeper: a tiny init for one supervised program (a model server, a gateway, a plugin
//! service), so that the program's whole process tree lives and dies as one unit.
//!
//! `sayri-exec keep` (a program that nests the helper runs it as `PROGRAM __sandbox-exec keep`)
//! reads its [`KeeperSpec`] as one frame from the socket it gets as stdin ([`crate::spec_pipe`]);
//! what follows the frame on that socket is the program's stdin (when [`KeeperSpec::stdin`]).
//! Then it:
//! 1. makes itself non-dumpable ([`crate::nondumpable`]), closes every descriptor but 0–2 and
//!    the [`KeeperSpec::passed_fds`] from 3 on (which the program inherits), asks for `SIGTERM`
//!    when its parent (the daemon) dies and checks the parent is still there;
//! 2. leads a new session and becomes a child subreaper, so every descendant that double-forks
//!    or calls `setsid` is re-parented to it and stays findable;
//! 3. forks the program into its own process group, with `SIGKILL` as its parent-death signal
//!    (should the keeper itself be killed), and `exec`s it with the keeper's environment, stdin,
//!    stdout and stderr;
//! 4. waits. When the program exits, whatever it left behind is killed and the keeper exits the
//!    same way (same code, or the same signal). On `SIGTERM`/`SIGINT`/`SIGHUP` — a stop request
//!    or the daemon's death — the program's group gets `SIGTERM`, then after the grace period
//!    (at most [`ORPHANED_GRACE`] when the daemon is gone) everything left gets `SIGKILL`.
//!
//! Nothing secret passes through the keeper's arguments or environment: a program's secrets
//! reach it on a socket of their own among the passed descriptors, which the keeper never reads
//! (pinned by `secrets_reach_the_child_on_a_descriptor_never_in_argv_or_environment`).

use crate::{parent_death, process_tree};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, killpg, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Mode word that runs the keeper: the first argument of `sayri-exec` (or the one after
/// [`crate::EXEC_HELPER_ARG`] in a program that nests the helper).
pub const KEEP_MODE: &str = "keep";

/// The most a program gets between `SIGTERM` and `SIGKILL` once the daemon has died.
pub const ORPHANED_GRACE: Duration = Duration::from_millis(500);

/// What the keeper runs (the frame on its stdin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeeperSpec {
    /// Program to run: a path, or a name looked up in the keeper's `PATH`.
    pub program: PathBuf,
    /// Its arguments (after the program name). Never secrets: `ps` shows them.
    pub args: Vec<String>,
    /// Working directory (`None`: the keeper's).
    pub cwd: Option<PathBuf>,
    /// Milliseconds between `SIGTERM` and `SIGKILL` on a stop request.
    pub stop_grace_ms: u64,
    /// The daemon's pid; the keeper refuses to start when its parent is another process.
    pub parent_pid: u32,
    /// Whether the program reads the rest of the keeper's stdin (else its stdin is `/dev/null`).
    pub stdin: bool,
    /// How many descriptors, from 3 on, the program inherits (a secrets socket, a listening
    /// socket); every other descriptor above 2 is closed.
    pub passed_fds: u32,
}

/// Exit code when the keeper cannot start the program (setup failed; the reason is on stderr).
pub const EXIT_SETUP: i32 = 125;
/// Exit code when `exec` of the program failed (not found, not executable).
pub const EXIT_EXEC: i32 = 127;

/// Runs the keeper for the spec on its stdin; returns only when the program could not be
/// started (the exit code to use). Otherwise the process exits like the program did.
pub fn keeper_main() -> i32 {
    if let Err(e) = crate::nondumpable::protect() {
        return setup_failed(&e);
    }
    let spec: KeeperSpec = match crate::spec_pipe::read_json(0) {
        Ok(s) => s,
        Err(e) => return setup_failed(&format!("invalid keeper spec: {e}")),
    };
    let first_closed = 3i32.saturating_add(i32::try_from(spec.passed_fds).unwrap_or(i32::MAX));
    crate::fd_cleanup::close_from(first_closed);
    if let Err(e) = parent_death::arm_self(spec.parent_pid, libc::SIGTERM) {
        return setup_failed(&e);
    }
    let _ = nix::unistd::setsid();
    if let Err(e) = process_tree::become_subreaper() {
        return setup_failed(&e);
    }
    let mut stops = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        stops.add(s);
    }
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&stops), None) {
        return setup_failed(&format!("cannot block signals: {e}"));
    }
    let argv = match program_argv(&spec) {
        Ok(a) => a,
        Err(e) => return setup_failed(&e),
    };
    let me = std::process::id() as libc::pid_t;
    // SAFETY: the keeper is single-threaded, so the child may allocate.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => exec_program(&spec, &argv, me),
        Ok(ForkResult::Parent { child }) => {
            let end = watch(child, &spec, &stops);
            exit_like(end)
        }
        Err(e) => setup_failed(&format!("cannot fork: {e}")),
    }
}

fn setup_failed(reason: &dyn std::fmt::Display) -> i32 {
    eprintln!("sayri keeper: {reason}");
    EXIT_SETUP
}

/// Why the program's argv cannot be built.
#[derive(Debug, thiserror::Error)]
enum ArgvError {
    /// An argument holds a NUL byte.
    #[error("{0:?} contains a NUL byte")]
    Nul(String),
    /// The program path is not UTF-8.
    #[error("program path {0:?} is not UTF-8")]
    NotUtf8(std::path::PathBuf),
}

/// The program's argv as C strings (`argv[0]` is the program as given).
fn program_argv(spec: &KeeperSpec) -> Result<Vec<CString>, ArgvError> {
    let c = |s: &str| CString::new(s).map_err(|_| ArgvError::Nul(s.to_string()));
    let program = spec
        .program
        .to_str()
        .ok_or_else(|| ArgvError::NotUtf8(spec.program.clone()))?;
    std::iter::once(program)
        .chain(spec.args.iter().map(String::as_str))
        .map(c)
        .collect()
}

/// In the forked child: own process group, `SIGKILL` when the keeper dies, stdin, working
/// directory, default signal state, then `exec`. Never returns.
fn exec_program(spec: &KeeperSpec, argv: &[CString], keeper: libc::pid_t) -> ! {
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    if parent_death::arm_in_child(keeper, libc::SIGKILL).is_err() {
        // SAFETY: immediate exit of the forked child.
        unsafe { libc::_exit(EXIT_SETUP) }
    }
    if !spec.stdin && crate::spec_pipe::null_stdin().is_err() {
        eprintln!("sayri keeper: cannot open /dev/null for the program's stdin");
        // SAFETY: immediate exit of the forked child.
        unsafe { libc::_exit(EXIT_SETUP) }
    }
    if let Some(dir) = &spec.cwd
        && let Err(e) = std::env::set_current_dir(dir)
    {
        eprintln!(
            "sayri keeper: cannot enter the working directory {}: {e}",
            dir.display()
        );
        // SAFETY: immediate exit of the forked child.
        unsafe { libc::_exit(EXIT_SETUP) }
    }
    // SAFETY: resetting a signal disposition to its default.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let e = nix::unistd::execvp(&argv[0], argv).unwrap_err();
    eprintln!(
        "sayri keeper: cannot execute {}: {e}",
        spec.program.display()
    );
    // SAFETY: immediate exit of the forked child.
    unsafe { libc::_exit(EXIT_EXEC) }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(Signal),
}

/// Waits for the program or a stop signal; kills whatever is left; returns how it ended.
fn watch(main: Pid, spec: &KeeperSpec, stops: &SigSet) -> End {
    let set: libc::sigset_t = *stops.as_ref();
    loop {
        if let Some(end) = reap_main(main) {
            process_tree::kill_all_descendants(&Vec::new);
            return end;
        }
        let ts = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        // SAFETY: sigtimedwait with a valid set and timeout; the siginfo pointer may be null.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
        if sig == libc::SIGTERM || sig == libc::SIGINT || sig == libc::SIGHUP {
            return stop(main, spec, &set);
        }
    }
}

/// Reaps exited children without blocking; `Some` once `main` has ended.
fn reap_main(main: Pid) -> Option<End> {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return Some(End::Code(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => return Some(End::Signal(sig)),
            Ok(WaitStatus::StillAlive) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// A stop: `SIGTERM` to the program's group, the grace period, then `SIGKILL` to every
/// descendant.
fn stop(main: Pid, spec: &KeeperSpec, set: &libc::sigset_t) -> End {
    let mut grace = Duration::from_millis(spec.stop_grace_ms);
    if !parent_death::parent_is(spec.parent_pid) {
        grace = grace.min(ORPHANED_GRACE);
    }
    let _ = killpg(main, Signal::SIGTERM);
    let _ = kill(main, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut end = None;
    while end.is_none() {
        end = reap_main(main);
        let now = Instant::now();
        if end.is_some() || now >= deadline {
            break;
        }
        let left = deadline - now;
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        // SAFETY: as in `watch`; any signal (a child exit, a repeated stop) just re-checks.
        unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    }
    process_tree::kill_all_descendants(&Vec::new);
    end.or_else(|| reap_main(main))
        .unwrap_or(End::Signal(Signal::SIGKILL))
}

/// Exits the keeper the way the program ended: the same code, or the same signal (with core
/// dumps off, so a crashing program does not leave a core of the keeper).
fn exit_like(end: End) -> ! {
    match end {
        End::Code(code) => std::process::exit(code),
        End::Signal(sig) => {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: setrlimit with a valid struct; signal/raise with a valid signal number.
            unsafe {
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(sig as libc::c_int, libc::SIG_DFL);
            }
            let mut only = SigSet::empty();
            only.add(sig);
            let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            let _ = nix::sys::signal::raise(sig);
            std::process::exit(128 + sig as i32)
        }
    }
}
