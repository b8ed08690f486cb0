//! The exec helper: a fresh, single-threaded process (a re-exec of a helper program) that applies a
//! level's isolation and runs `bash -c`. Namespaces cannot be entered from the multithreaded daemon,
//! and nothing may allocate between `fork` and `exec` there, so all of it happens here.
//!
//! The helper first makes itself non-dumpable with no core file ([`crate::nondumpable`]), then
//! reads its instructions from the socket it got as stdin ([`crate::spec_pipe`]): the
//! [`HelperSpec`], and the command's environment ([`HelperEnv`], which carries the agent's
//! secrets) as a second frame.
//!
//! Order at levels 1–2: close inherited fds → non-dumpable → read the spec → parent-death signal
//! → new session → (root: pids cgroup) → user, mount, pid, ipc, uts (+net) namespaces (the
//! helper is dumpable for this step only, to write its own `uid_map`, and holds no secret then)
//! → read the environment → fork pid 1 → private filesystem view → rlimits → `no_new_privs` →
//! drop capabilities → Landlock → seccomp → exec. Any failure refuses the command (fail closed).
//!
//! Order at levels 3–4: close inherited fds → non-dumpable → read the spec and the environment →
//! parent-death signal → new session → child subreaper (+ root: pids cgroup) → fork → rlimits →
//! `no_new_privs` (level 3) → exec. When the main process exits, times out or is cancelled, every
//! remaining descendant is killed.
//!
//! The command itself is an ordinary process: `execve` makes it dumpable again (see
//! [`crate::nondumpable`]); the core limit 0 stays, so it leaves no core file.
//!
//! The helper dies with its launcher: first thing, it asks for `SIGTERM` when the launcher dies
//! and checks that its parent is still the launcher named in the spec (the launcher starts it
//! with `posix_spawn`, without a hook of its own; `pkexec` would clear one anyway), and treats
//! the signal like a cancel, so the command's whole tree is killed; the sandbox's pid 1 and a
//! host command's main process get `SIGKILL` should the helper itself be killed. Only a declared
//! background launch (levels 3–4) outlives the helper.

use crate::spec::{HelperEnv, HelperReport, HelperSpec, STATUS_FD};
use crate::spec_pipe;
use crate::{capabilities, cgroup, fd_cleanup, landlock, mounts, namespaces, nondumpable};
use crate::{privileges, process_tree, rlimits, seccomp};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use sayri_protocol::SandboxLevel;
use std::ffi::{CString, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// First argument that switches a program that nests the helper into the exec-helper mode:
/// `PROGRAM __sandbox-exec exec`, `… probe`, `… keep`. Such a program (the `sayri-sandbox`
/// binary, test harnesses) checks for it first thing in `main`, before anything starts a thread,
/// and hands the remaining arguments to [`exec_helper_main`]; [`crate::LinuxSandboxSettings`]
/// `helper_args` carries it back to the launcher. The daemon's own helper, `sayri-exec`, is
/// nothing but that entry point and takes no prefix.
pub const EXEC_HELPER_ARG: &str = "__sandbox-exec";

/// Mode word that runs one command.
pub const EXEC_MODE: &str = "exec";

/// Entry point of the helper mode. `args` are the arguments after the program's own prefix —
/// the mode word and nothing else; instructions come on stdin ([`crate::spec_pipe`]): `exec`
/// runs one command (reports on the same socket, exit code = the command's, 124 on timeout,
/// 126 on refusal, 137 when cancelled); `probe` prints the kernel feature report as JSON;
/// `keep` runs a supervised program under [`crate::keeper`].
pub fn exec_helper_main(args: &[OsString]) -> ! {
    if args.len() > 1 {
        eprintln!(
            "sayri sandbox helper: takes its mode word only; the instructions come on stdin (internal error)"
        );
        std::process::exit(2);
    }
    let code = match args.first().and_then(|a| a.to_str()) {
        Some(EXEC_MODE) => run_exec(),
        Some(crate::keeper::KEEP_MODE) => crate::keeper::keeper_main(),
        Some("probe") => {
            let k = capabilities::probe_here();
            match serde_json::to_string(&k) {
                Ok(s) => {
                    println!("{s}");
                    0
                }
                Err(e) => {
                    eprintln!("sayri sandbox helper: cannot encode the probe: {e}");
                    1
                }
            }
        }
        _ => {
            eprintln!("sayri sandbox helper: internal mode; use `sayri sandbox run` instead");
            2
        }
    };
    std::process::exit(code)
}

fn report(r: &HelperReport) {
    if let Ok(line) = serde_json::to_string(r) {
        // SAFETY: STATUS_FD is owned by this process for its lifetime; ManuallyDrop keeps it open.
        let mut f = std::mem::ManuallyDrop::new(unsafe {
            <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(STATUS_FD)
        });
        let _ = writeln!(f, "{line}");
    }
}

fn refuse(reason: String) -> i32 {
    report(&HelperReport::Refused { reason });
    126
}

/// A setup step of the helper or the sandbox's pid 1 that failed; its text is the refusal
/// reported to the launcher (the command did not run).
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    /// No bash to run the command with.
    #[error("bash is not installed (looked for /bin/bash and /usr/bin/bash)")]
    NoBash,
    /// The command or an environment entry holds a NUL byte.
    #[error("{0:?} contains a NUL byte")]
    Nul(String),
    /// Level 2 without a workspace.
    #[error("level 2 needs a workspace (internal error)")]
    NoWorkspace,
    /// A foreground command could not be tied to its helper.
    #[error("cannot tie the command to its helper: {0}")]
    TieToHelper(std::io::Error),
    /// A background launch could not be detached.
    #[error("cannot open /dev/null: {0}")]
    DevNull(std::io::Error),
    /// The pids cgroup could not be joined.
    #[error("cannot join the pids cgroup that bounds the process count: {0}")]
    PidsCgroup(std::io::Error),
    /// The working directory could not be entered.
    #[error("cannot enter the working directory {}: {source}", path.display())]
    WorkingDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Reading the instructions or the program's stdin.
    #[error(transparent)]
    SpecPipe(#[from] spec_pipe::SpecPipeError),
    /// The dumpable flag.
    #[error(transparent)]
    Dumpable(#[from] nondumpable::DumpableError),
    /// The parent-death signal.
    #[error(transparent)]
    Arm(#[from] crate::parent_death::ArmError),
    /// The namespaces or the hostname.
    #[error(transparent)]
    Namespace(#[from] namespaces::NamespaceError),
    /// The private filesystem view.
    #[error(transparent)]
    Mount(#[from] mounts::MountError),
    /// A resource limit.
    #[error(transparent)]
    Rlimit(#[from] rlimits::RlimitError),
    /// `no_new_privs` or the capability drop.
    #[error(transparent)]
    Privilege(#[from] privileges::PrivilegeError),
    /// Landlock.
    #[error(transparent)]
    Landlock(#[from] landlock::LandlockError),
    /// seccomp.
    #[error(transparent)]
    Seccomp(#[from] seccomp::SeccompError),
}

struct Prepared {
    bash: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

fn prepare(env: &HelperEnv, command: &str) -> Result<Prepared, StepError> {
    let bash = ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or(StepError::NoBash)?;
    let c = |s: &str| CString::new(s).map_err(|_| StepError::Nul(s.to_string()));
    Ok(Prepared {
        bash: c(bash)?,
        argv: vec![c("bash")?, c("-c")?, c(command)?],
        envp: env
            .vars
            .iter()
            .map(|(k, v)| c(&format!("{k}={v}")))
            .collect::<Result<_, _>>()?,
    })
}

fn exec(p: &Prepared) -> String {
    // SAFETY: resetting a signal disposition to its default.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let e = nix::unistd::execve(&p.bash, &p.argv, &p.envp).unwrap_err();
    format!("cannot execute bash: {e}")
}

fn run_exec() -> i32 {
    let have_status = fd_cleanup::status_pipe_from_stdin(STATUS_FD).is_ok();
    fd_cleanup::close_from(STATUS_FD + 1);
    if !have_status {
        eprintln!("sayri sandbox helper: no instruction socket on stdin (internal error)");
        return 2;
    }
    if let Err(e) = nondumpable::protect() {
        return refuse(format!("cannot protect the helper's memory: {e}"));
    }
    let spec: HelperSpec = match spec_pipe::read_json(STATUS_FD) {
        Ok(s) => s,
        Err(e) => return refuse(format!("invalid helper spec: {e}")),
    };
    // The launcher starts the helper without a parent-death hook (so it can use posix_spawn):
    // arming here, against the launcher's pid, is what ties the helper to the daemon's life.
    if spec.parent_pid == 0 {
        return refuse("the helper spec names no launcher (internal error)".into());
    }
    if let Err(e) = crate::parent_death::arm_self(spec.parent_pid, libc::SIGTERM) {
        return refuse(e.to_string());
    }
    let _ = nix::unistd::setsid();
    let mut blocked = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        blocked.add(s);
    }
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None) {
        return refuse(format!("cannot block signals: {e}"));
    }
    let deadline = Instant::now() + Duration::from_millis(spec.timeout_ms.max(1));
    match spec.level {
        SandboxLevel::NoExec => refuse("level 0 (LEVEL_0_NO_EXEC) never executes commands".into()),
        SandboxLevel::ReadOnly | SandboxLevel::IsolatedDev => sandboxed(&spec, deadline, &blocked),
        SandboxLevel::HostUser | SandboxLevel::HostRoot => host(&spec, deadline, &blocked),
    }
}

/// What levels 1–2 settle in the helper before the fork, so the sandbox's pid 1 has nothing left
/// to allocate or look up that could fail for a reason other than the isolation itself.
struct SandboxPlan {
    prepared: Prepared,
    filters: Vec<seccompiler::BpfProgram>,
    cgroup: Option<cgroup::PidsCgroup>,
    writable: Vec<PathBuf>,
}

/// Levels 1–2: plan in the helper (which enters the namespaces), fork the sandbox's pid 1, which
/// builds the private filesystem view, locks itself down and execs; the helper supervises it.
fn sandboxed(spec: &HelperSpec, deadline: Instant, blocked: &SigSet) -> i32 {
    let plan = match plan_sandbox(spec) {
        Ok(p) => p,
        Err(e) => return refuse(e.to_string()),
    };
    // SAFETY: the helper is single-threaded, so the child may allocate.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => exit_child(isolate_and_exec(spec, &plan)),
        Ok(ForkResult::Parent { child }) => supervise(child, deadline, blocked, plan.cgroup),
        Err(e) => refuse(format!("cannot fork the sandbox init: {e}")),
    }
}

/// Checks what levels 1–2 need (bash, seccomp filters, the Landlock ABI), joins the pids cgroup
/// (root only) and enters the new namespaces. Errors are refusal reasons.
fn plan_sandbox(spec: &HelperSpec) -> Result<SandboxPlan, StepError> {
    let filters = seccomp::build()?;
    let abi = landlock::usable_abi(spec.landlock_abi_cap)?;
    if abi < landlock::REQUIRED_ABI {
        return Err(landlock::LandlockError::TooOld {
            abi,
            lowered: spec.landlock_abi_cap == Some(abi),
        }
        .into());
    }
    let cgroup = if nix::unistd::getuid().is_root() {
        join_pids_cgroup(spec)?
    } else {
        None
    };
    // A non-dumpable process cannot write its own uid_map: dumpable for this step only, while
    // the helper holds no secret yet (the environment is still in the socket).
    nondumpable::set_dumpable(true)?;
    let entered = namespaces::enter(spec.allow_network);
    nondumpable::set_dumpable(false)?;
    entered?;
    // Entering a user namespace changes the credentials; arm again so the setting surely holds.
    crate::parent_death::arm_self(spec.parent_pid, libc::SIGTERM)?;
    let env: HelperEnv = spec_pipe::read_json(STATUS_FD)?;
    let prepared = prepare(&env, &spec.command)?;
    drop(env);
    if spec.stdio {
        spec_pipe::receive_stdin(STATUS_FD)?;
    }
    let mut writable = vec![PathBuf::from("/tmp")];
    if spec.level == SandboxLevel::IsolatedDev {
        match &spec.workspace {
            Some(ws) => writable.push(ws.clone()),
            None => return Err(StepError::NoWorkspace),
        }
    }
    Ok(SandboxPlan {
        prepared,
        filters,
        cgroup,
        writable,
    })
}

/// In the sandbox's pid 1: the private filesystem view, working directory, rlimits,
/// `no_new_privs`, capability drop, Landlock, seccomp, then `exec`. Returns only on failure: `Ok`
/// with the `exec` error, `Err` with the step that failed (see [`exit_child`]).
fn isolate_and_exec(spec: &HelperSpec, plan: &SandboxPlan) -> Result<String, StepError> {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    namespaces::set_hostname("sayri-sandbox")?;
    let ws = if spec.level == SandboxLevel::IsolatedDev {
        spec.workspace.as_deref()
    } else {
        None
    };
    mounts::setup(
        ws,
        &spec.deny_read,
        spec.limits.tmp_size_bytes,
        spec.allow_network,
    )?;
    enter_working_directory(spec)?;
    rlimits::apply(&spec.limits, cpu_seconds(spec), spec.limits.processes)?;
    privileges::set_no_new_privs()?;
    privileges::drop_all_capabilities()?;
    landlock::restrict(
        &plan.writable,
        spec.readable.as_deref(),
        !spec.allow_network,
    )?;
    seccomp::install(&plan.filters)?;
    Ok(exec(&plan.prepared))
}

/// Levels 3–4: the command runs as the host user (or root through `pkexec`) in its own session. A
/// foreground command is supervised with the helper as child subreaper (and, as root, in a pids
/// cgroup); a declared background launch is detached and only watched briefly.
fn host(spec: &HelperSpec, deadline: Instant, blocked: &SigSet) -> i32 {
    let command = if spec.background {
        crate::background::strip_trailing_ampersand(&spec.command)
    } else {
        spec.command.clone()
    };
    let prepared = match host_prepare(spec, &command) {
        Ok(p) => p,
        Err(e) => return refuse(e.to_string()),
    };
    let uid = nix::unistd::getuid().as_raw();
    let root = uid == 0;
    // The kernel does not apply RLIMIT_NPROC to uid 0, so root skips counting its processes in
    // /proc (about 1 ms per 100 processes) and gets the budget from the pids cgroup instead.
    let nproc = if root {
        spec.limits.processes
    } else {
        rlimits::nproc_for_host_user(uid, spec.limits.processes)
    };
    let mut cgroup = None;
    if !spec.background {
        if let Err(e) = process_tree::become_subreaper() {
            return refuse(e.to_string());
        }
        if root {
            match join_pids_cgroup(spec) {
                Ok(cg) => cgroup = cg,
                Err(e) => return refuse(e.to_string()),
            }
        }
    }
    let helper = std::process::id() as libc::pid_t;
    // SAFETY: the helper is single-threaded, so the child may allocate.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => exit_child(host_exec(spec, &prepared, nproc, helper)),
        Ok(ForkResult::Parent { child }) if spec.background => {
            watch_background_launch(child, deadline)
        }
        Ok(ForkResult::Parent { child }) => supervise(child, deadline, blocked, cgroup),
        Err(e) => refuse(format!("cannot fork: {e}")),
    }
}

/// Levels 3–4 before the fork: the environment, the command's argv and (for a stdio program)
/// its stdin, from the launcher's socket.
fn host_prepare(spec: &HelperSpec, command: &str) -> Result<Prepared, StepError> {
    let env = spec_pipe::read_json::<HelperEnv>(STATUS_FD)?;
    let prepared = prepare(&env, command)?;
    if spec.stdio {
        spec_pipe::receive_stdin(STATUS_FD)?;
    }
    Ok(prepared)
}

/// In the forked host child: detach a background launch (or, for a foreground command, die with
/// the helper), rlimits, working directory, `no_new_privs` (level 3; level 4 must keep the
/// privileges `pkexec` granted), then `exec`. Returns only on failure, like [`isolate_and_exec`].
fn host_exec(
    spec: &HelperSpec,
    prepared: &Prepared,
    nproc: u64,
    helper: libc::pid_t,
) -> Result<String, StepError> {
    if !spec.background {
        crate::parent_death::arm_in_child(helper, libc::SIGKILL).map_err(StepError::TieToHelper)?;
    }
    if spec.background {
        detach_from_launcher()?;
        let mut bg = spec.limits;
        bg.address_space_bytes = u64::MAX;
        rlimits::apply(&bg, u64::MAX, nproc)?;
    } else {
        rlimits::apply(&spec.limits, cpu_seconds(spec), nproc)?;
    }
    enter_working_directory(spec)?;
    if spec.level != SandboxLevel::HostRoot {
        privileges::set_no_new_privs()?;
    }
    Ok(exec(prepared))
}

/// A background launch gets its own session and `/dev/null` as stdin, stdout and stderr, so it
/// holds none of the launcher's pipes open.
fn detach_from_launcher() -> Result<(), StepError> {
    let _ = nix::unistd::setsid();
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(StepError::DevNull)?;
    for fd in 0..3 {
        // SAFETY: dup2 onto the standard descriptors.
        unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
    }
    Ok(())
}

/// Watches a background launch for a short window (300 ms, or less when the deadline is nearer):
/// a launch that fails at once is reported with its exit, one still running as `Background`.
fn watch_background_launch(child: Pid, deadline: Instant) -> i32 {
    let until = Instant::now() + Duration::from_millis(300).min(deadline - Instant::now());
    while Instant::now() < until {
        if let Ok(st) = waitpid(child, Some(WaitPidFlag::WNOHANG))
            && let Some((end, code)) = ended(&st)
        {
            report(&end);
            return code;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    report(&HelperReport::Background {
        pid: child.as_raw() as u32,
    });
    0
}

/// Creates a pids cgroup capping the command's processes (the budget plus the helper and the
/// sandbox's pid 1, with room to spare) and moves the helper into it; `Ok(None)` when no pids
/// hierarchy is writable. Only used as root, where `RLIMIT_NPROC` does not apply.
fn join_pids_cgroup(spec: &HelperSpec) -> Result<Option<cgroup::PidsCgroup>, StepError> {
    let Some(cg) = cgroup::PidsCgroup::create(spec.limits.processes + 4) else {
        return Ok(None);
    };
    cg.join_self().map_err(StepError::PidsCgroup)?;
    Ok(Some(cg))
}

/// Changes to the command's working directory.
fn enter_working_directory(spec: &HelperSpec) -> Result<(), StepError> {
    std::env::set_current_dir(&spec.cwd).map_err(|source| StepError::WorkingDirectory {
        path: spec.cwd.clone(),
        source,
    })
}

/// `RLIMIT_CPU` in seconds: the wall-clock timeout plus two seconds, so the timeout fires first.
fn cpu_seconds(spec: &HelperSpec) -> u64 {
    spec.timeout_ms / 1000 + 2
}

/// Ends a forked child whose setup returned `setup`: `Ok` carries the error of an `exec` that
/// failed (printed to stderr, exit 127), `Err` a step that could not be applied (reported as
/// `Refused`, exit 126, so the command counts as not run).
fn exit_child(setup: Result<String, StepError>) -> ! {
    match setup {
        Ok(exec_error) => {
            eprintln!("sayri sandbox: {exec_error}");
            // SAFETY: immediate exit of the forked child.
            unsafe { libc::_exit(127) }
        }
        Err(step) => {
            report(&HelperReport::Refused {
                reason: step.to_string(),
            });
            // SAFETY: immediate exit of the forked child.
            unsafe { libc::_exit(126) }
        }
    }
}

/// Runs [`wait_loop`] for `main`, then moves the helper out of `cgroup` and removes it.
fn supervise(
    main: Pid,
    deadline: Instant,
    blocked: &SigSet,
    cgroup: Option<cgroup::PidsCgroup>,
) -> i32 {
    let code = wait_loop(main, deadline, blocked, cgroup.as_ref());
    if let Some(cg) = &cgroup {
        cg.release();
    }
    code
}

/// The report and the helper's exit code for a process that ended with `st` (exit code, or 128 +
/// the signal number), or `None` when it has not ended.
fn ended(st: &WaitStatus) -> Option<(HelperReport, i32)> {
    match *st {
        WaitStatus::Exited(_, code) => Some((HelperReport::Exited { code }, code)),
        WaitStatus::Signaled(_, sig, _) => Some((
            HelperReport::Signaled { signal: sig as i32 },
            128 + sig as i32,
        )),
        _ => None,
    }
}

/// Waits for `main` (pid 1 of the sandbox, or the host command), the deadline, or a cancel signal;
/// then kills whatever is left and reports.
fn wait_loop(
    main: Pid,
    deadline: Instant,
    blocked: &SigSet,
    cg: Option<&cgroup::PidsCgroup>,
) -> i32 {
    let kill_rest = |main_alive: bool| {
        if main_alive {
            let _ = kill(main, Signal::SIGKILL);
            let _ = waitpid(main, None);
        }
        process_tree::kill_all_descendants(&|| cg.map(|c| c.pids()).unwrap_or_default());
    };
    let set: libc::sigset_t = *blocked.as_ref();
    loop {
        // Collect any exit first (SIGCHLD may have been consumed already).
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(st) => {
                    if st.pid() == Some(main)
                        && let Some((end, code)) = ended(&st)
                    {
                        kill_rest(false);
                        report(&end);
                        return code;
                    }
                }
            }
        }
        let now = Instant::now();
        if now >= deadline {
            kill_rest(true);
            report(&HelperReport::Timeout);
            return 124;
        }
        let left = deadline - now;
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        // SAFETY: sigtimedwait with a valid set and timeout; the siginfo pointer may be null.
        let sig = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
        if sig == libc::SIGTERM || sig == libc::SIGINT || sig == libc::SIGHUP {
            kill_rest(true);
            report(&HelperReport::Killed);
            return 137;
        }
    }
}
