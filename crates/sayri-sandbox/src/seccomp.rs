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

/// A CPU architecture the filters can be built for. The filters of one architecture use its
/// own syscall numbers and audit arch, whatever machine builds them (so the tests can check the
/// aarch64 filter on an x86-64 machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86-64; its filters also refuse the x32 ABI's numbers.
    X86_64,
    /// 64-bit ARM. It has no legacy calls (`open`, `stat`, `fork`, …), only their `*at` and
    /// `clone` forms, which is all the tables below name.
    Aarch64,
}

impl Arch {
    /// The architecture this program runs on.
    ///
    /// # Errors
    /// [`SeccompError::UnknownArch`]: the filters are not written for it.
    pub fn host() -> Result<Arch, SeccompError> {
        match std::env::consts::ARCH {
            "x86_64" => Ok(Arch::X86_64),
            "aarch64" => Ok(Arch::Aarch64),
            other => Err(SeccompError::UnknownArch(other.to_string())),
        }
    }

    fn target(self) -> TargetArch {
        match self {
            Arch::X86_64 => TargetArch::x86_64,
            Arch::Aarch64 => TargetArch::aarch64,
        }
    }

    /// The number of `call` on this architecture.
    pub fn number(self, call: &Syscall) -> i64 {
        match self {
            Arch::X86_64 => call.x86_64,
            Arch::Aarch64 => call.aarch64,
        }
    }
}

/// A system call and its number on each [`Arch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    /// Its name.
    pub name: &'static str,
    /// Its number on x86-64.
    pub x86_64: i64,
    /// Its number on aarch64.
    pub aarch64: i64,
}

/// The [`Syscall`]s named, each with its number on every [`Arch`]: a call one architecture does
/// not have does not compile.
macro_rules! syscalls {
    ($($name:ident => $number:ident),* $(,)?) => {
        &[$(Syscall {
            name: stringify!($name),
            x86_64: syscall_numbers::x86_64::$number,
            aarch64: syscall_numbers::aarch64::$number,
        }),*]
    };
}

/// Syscalls denied with `EPERM` unconditionally.
pub const DENIED_SYSCALLS: &[Syscall] = syscalls![
    ptrace => SYS_ptrace,
    process_vm_readv => SYS_process_vm_readv,
    process_vm_writev => SYS_process_vm_writev,
    mount => SYS_mount,
    umount2 => SYS_umount2,
    pivot_root => SYS_pivot_root,
    chroot => SYS_chroot,
    move_mount => SYS_move_mount,
    open_tree => SYS_open_tree,
    fsopen => SYS_fsopen,
    fsconfig => SYS_fsconfig,
    fsmount => SYS_fsmount,
    fspick => SYS_fspick,
    mount_setattr => SYS_mount_setattr,
    unshare => SYS_unshare,
    setns => SYS_setns,
    bpf => SYS_bpf,
    keyctl => SYS_keyctl,
    add_key => SYS_add_key,
    request_key => SYS_request_key,
    init_module => SYS_init_module,
    finit_module => SYS_finit_module,
    delete_module => SYS_delete_module,
    kexec_load => SYS_kexec_load,
    kexec_file_load => SYS_kexec_file_load,
    reboot => SYS_reboot,
    swapon => SYS_swapon,
    swapoff => SYS_swapoff,
    perf_event_open => SYS_perf_event_open,
    userfaultfd => SYS_userfaultfd,
    io_uring_setup => SYS_io_uring_setup,
    io_uring_enter => SYS_io_uring_enter,
    io_uring_register => SYS_io_uring_register,
    acct => SYS_acct,
    quotactl => SYS_quotactl,
    open_by_handle_at => SYS_open_by_handle_at,
    name_to_handle_at => SYS_name_to_handle_at,
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
    /// The filters are not written for this CPU.
    #[error(
        "seccomp filters are not available for this CPU architecture ({0}); levels 1-2 need x86_64 or aarch64"
    )]
    UnknownArch(String),
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

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: Arch,
) -> Result<BpfProgram, SeccompError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch.target(),
    )
    .map_err(SeccompError::Filter)?;
    BpfProgram::try_from(filter).map_err(SeccompError::Compile)
}

/// The calls the conditional rules below are about.
const CLONE: &[Syscall] = syscalls![clone => SYS_clone];
const IOCTL: &[Syscall] = syscalls![ioctl => SYS_ioctl];
const SOCKET: &[Syscall] = syscalls![socket => SYS_socket];
const CLONE3: &[Syscall] = syscalls![clone3 => SYS_clone3];

/// Builds the filters of this machine's architecture (see the module docs), in installation
/// order.
///
/// # Errors
/// [`SeccompError`]: no filters for this CPU, or a malformed table.
pub fn build() -> Result<Vec<BpfProgram>, SeccompError> {
    build_for(Arch::host()?)
}

/// Builds the filters for `arch`, in installation order. The ioctl requests, address families
/// and clone flags compared are the same numbers on every architecture here.
///
/// # Errors
/// [`SeccompError`]: a malformed table.
pub fn build_for(arch: Arch) -> Result<Vec<BpfProgram>, SeccompError> {
    let nr = |calls: &[Syscall]| arch.number(&calls[0]);
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in DENIED_SYSCALLS {
        eperm.insert(arch.number(call), vec![]);
    }
    let clone_rules = NS_FLAGS
        .iter()
        .map(|f| rule(vec![cond(0, SeccompCmpOp::MaskedEq(*f), *f)?]))
        .collect::<Result<Vec<_>, _>>()?;
    eperm.insert(nr(CLONE), clone_rules);
    eperm.insert(nr(IOCTL), terminal_injection_rules()?);

    let mut eacces = BTreeMap::new();
    eacces.insert(
        nr(SOCKET),
        vec![rule(vec![cond(
            0,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )?])?],
    );

    let mut eafnosupport = BTreeMap::new();
    eafnosupport.insert(
        nr(SOCKET),
        vec![rule(vec![
            cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
        ])?],
    );

    let mut enosys = BTreeMap::new();
    enosys.insert(nr(CLONE3), vec![]);

    let mut progs = vec![
        compile(eperm, libc::EPERM, arch)?,
        compile(eacces, libc::EACCES, arch)?,
        compile(eafnosupport, libc::EAFNOSUPPORT, arch)?,
        compile(enosys, libc::ENOSYS, arch)?,
    ];
    if arch == Arch::X86_64 {
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
    use super::*;

    /// `AUDIT_ARCH_X86_64` and `AUDIT_ARCH_AARCH64` (the kernel's `EM_*` number with the 64-bit
    /// and little-endian bits).
    const AUDIT_X86_64: u32 = 0xc000_003e;
    const AUDIT_AARCH64: u32 = 0xc000_00b7;
    /// `BPF_JMP | BPF_JEQ | BPF_K`: a compare with a constant.
    const JEQ_K: u16 = 0x15;

    fn constants(prog: &BpfProgram) -> Vec<u32> {
        prog.iter()
            .filter(|i| i.code == JEQ_K)
            .map(|i| i.k)
            .collect()
    }

    #[test]
    fn filters_compile_for_this_architecture() {
        let progs = build().unwrap();
        assert!(progs.len() >= 4);
        assert!(progs.iter().all(|p| !p.is_empty()));
        assert_eq!(build_for(Arch::host().unwrap()).unwrap(), progs);
    }

    #[test]
    fn the_aarch64_filter_checks_its_own_audit_arch_and_denies_by_aarch64_numbers() {
        let progs = build_for(Arch::Aarch64).unwrap();
        assert_eq!(
            progs.len(),
            4,
            "no x32 filter: aarch64 has no second ABI to refuse"
        );
        for p in &progs {
            let k = constants(p);
            assert!(
                k.contains(&AUDIT_AARCH64),
                "every filter checks the arch first"
            );
            assert!(!k.contains(&AUDIT_X86_64));
        }
        let denied = constants(&progs[0]);
        for call in DENIED_SYSCALLS.iter().chain(CLONE).chain(IOCTL) {
            let n = u32::try_from(call.aarch64).unwrap();
            assert!(
                denied.contains(&n),
                "{} ({n}) is not in the filter",
                call.name
            );
        }
        // `mount` is 165 on x86-64 and 40 on aarch64, where 165 is the harmless `getrusage`.
        let mount = DENIED_SYSCALLS.iter().find(|c| c.name == "mount").unwrap();
        assert_eq!((mount.x86_64, mount.aarch64), (165, 40));
        assert!(
            !denied.contains(&165),
            "an x86-64 number in the aarch64 filter"
        );
        assert!(constants(&progs[3]).contains(&u32::try_from(CLONE3[0].aarch64).unwrap()));
    }

    #[test]
    fn the_x86_64_filter_denies_by_x86_64_numbers_and_refuses_x32() {
        let progs = build_for(Arch::X86_64).unwrap();
        assert_eq!(progs.len(), 5);
        let denied = constants(&progs[0]);
        assert!(denied.contains(&AUDIT_X86_64));
        for call in DENIED_SYSCALLS {
            let n = u32::try_from(call.x86_64).unwrap();
            assert!(
                denied.contains(&n),
                "{} ({n}) is not in the filter",
                call.name
            );
        }
    }

    #[test]
    fn the_host_numbers_are_the_c_librarys() {
        let host = Arch::host().unwrap();
        assert_eq!(host.number(&CLONE[0]), libc::SYS_clone);
        assert_eq!(host.number(&SOCKET[0]), libc::SYS_socket);
        let ptrace = DENIED_SYSCALLS.iter().find(|c| c.name == "ptrace").unwrap();
        assert_eq!(host.number(ptrace), libc::SYS_ptrace);
    }
}
