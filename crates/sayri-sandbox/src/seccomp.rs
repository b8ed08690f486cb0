//! The seccomp filters of levels 1–2 (installed after `no_new_privs`, just before `exec`).
//!
//! * `EPERM` for syscalls a sandboxed command has no business making: `ptrace` and cross-process
//!   memory access, every mount/namespace/keyring/module/kexec/bpf/perf/io_uring entry point,
//!   `clone` with namespace flags, and the terminal-injection ioctls ([`TERMINAL_INJECTION`]:
//!   `TIOCSTI`, `TIOCLINUX`), matched on the low 32 bits of the request only.
//! * `EACCES` for `socket(AF_UNIX, …)`: no pathname Unix socket of the host (D-Bus, Wayland,
//!   docker.sock, Sayri's own) can be connected to, wherever its file lives. `socketpair` stays.
//! * `EAFNOSUPPORT` for every other socket family but `AF_INET`, `AF_INET6` and `AF_NETLINK`.
//! * `ENOSYS` for `clone3` (its flags sit in memory seccomp cannot read; libc falls back to `clone`)
//!   and for x32-ABI syscall numbers, which would otherwise bypass the x86-64 rules.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Syscalls denied with `EPERM` unconditionally.
pub const DENIED_SYSCALLS: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("bpf", libc::SYS_bpf),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
];

/// `ioctl` requests that push input into a terminal: `TIOCSTI` types a character into its input
/// queue, `TIOCLINUX` pastes the Linux console's selection. Refused with `EPERM` whatever the file
/// descriptor — so a terminal passed into the sandbox later still cannot be typed into.
///
/// The rule compares only the low 32 bits of the request: the kernel truncates the request to
/// 32 bits before dispatching it, so `TIOCSTI | 1 << 32` is the same call, and a 64-bit compare
/// would let it through. Pinned by `terminal_injection.rs` in the sandbox tests (a C program
/// issues both requests with and without high bits set).
pub const TERMINAL_INJECTION: &[(&str, u64)] =
    &[("TIOCSTI", libc::TIOCSTI), ("TIOCLINUX", libc::TIOCLINUX)];

const NS_FLAGS: [u64; 7] = [
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// Why the seccomp filters cannot be built or installed; levels 1–2 then refuse to run.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// seccompiler has no filters for this CPU.
    #[error("seccomp filters are not available for this CPU architecture: {0}")]
    Arch(seccompiler::BackendError),
    /// A rule or condition is malformed (a bug in the table).
    #[error(transparent)]
    Rule(seccompiler::BackendError),
    /// A filter is malformed (a bug in the table).
    #[error("seccomp filter invalid: {0}")]
    Filter(seccompiler::BackendError),
    /// A filter does not compile to BPF.
    #[error("seccomp filter does not compile: {0}")]
    Compile(seccompiler::BackendError),
    /// The kernel refused a filter.
    #[error("seccomp filter could not be installed: {0}")]
    Install(seccompiler::Error),
}

fn arch() -> Result<TargetArch, SeccompError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(SeccompError::Arch)
}

/// A condition on the low 32 bits of argument `arg` (`Dword`: the upper half is not looked at,
/// as the kernel ignores it for the flags and requests compared here).
fn cond(arg: u8, op: SeccompCmpOp, v: u64) -> Result<SeccompCondition, SeccompError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v).map_err(SeccompError::Rule)
}

/// One rule per [`TERMINAL_INJECTION`] request, on the request's low 32 bits.
fn terminal_injection_rules() -> Result<Vec<SeccompRule>, SeccompError> {
    TERMINAL_INJECTION
        .iter()
        .map(|(_, request)| rule(vec![cond(1, SeccompCmpOp::Eq, *request & 0xffff_ffff)?]))
        .collect()
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, SeccompError> {
    SeccompRule::new(conds).map_err(SeccompError::Rule)
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, SeccompError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )
    .map_err(SeccompError::Filter)?;
    BpfProgram::try_from(filter).map_err(SeccompError::Compile)
}

/// Builds the filters (see the module docs), in installation order.
///
/// # Errors
/// [`SeccompError`]: no filters for this CPU, or a malformed table.
pub fn build() -> Result<Vec<BpfProgram>, SeccompError> {
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (_, nr) in DENIED_SYSCALLS {
        eperm.insert(*nr, vec![]);
    }
    let clone_rules = NS_FLAGS
        .iter()
        .map(|f| rule(vec![cond(0, SeccompCmpOp::MaskedEq(*f), *f)?]))
        .collect::<Result<Vec<_>, _>>()?;
    eperm.insert(libc::SYS_clone, clone_rules);
    eperm.insert(libc::SYS_ioctl, terminal_injection_rules()?);

    let mut eacces = BTreeMap::new();
    eacces.insert(
        libc::SYS_socket,
        vec![rule(vec![cond(
            0,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )?])?],
    );

    let mut eafnosupport = BTreeMap::new();
    eafnosupport.insert(
        libc::SYS_socket,
        vec![rule(vec![
            cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
        ])?],
    );

    let mut enosys = BTreeMap::new();
    enosys.insert(libc::SYS_clone3, vec![]);

    let mut progs = vec![
        compile(eperm, libc::EPERM)?,
        compile(eacces, libc::EACCES)?,
        compile(eafnosupport, libc::EAFNOSUPPORT)?,
        compile(enosys, libc::ENOSYS)?,
    ];
    if cfg!(target_arch = "x86_64") {
        progs.push(x32_filter());
    }
    Ok(progs)
}

/// `ENOSYS` for every syscall number with the x32 bit (`__X32_SYSCALL_BIT`) set.
fn x32_filter() -> BpfProgram {
    use seccompiler::sock_filter;
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    vec![
        sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: BPF_JGE_K,
            jt: 0,
            jf: 1,
            k: 0x4000_0000,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        },
    ]
}

/// Installs `progs` on the calling thread (requires `no_new_privs`).
///
/// # Errors
/// [`SeccompError::Install`]: the kernel refused a filter.
pub fn install(progs: &[BpfProgram]) -> Result<(), SeccompError> {
    for p in progs {
        seccompiler::apply_filter(p).map_err(SeccompError::Install)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_compile_for_this_architecture() {
        let progs = super::build().unwrap();
        assert!(progs.len() >= 4);
        assert!(progs.iter().all(|p| !p.is_empty()));
    }
}
