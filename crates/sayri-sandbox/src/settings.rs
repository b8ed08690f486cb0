//! Construction-time settings of [`crate::LinuxSandbox`].

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Resource limits applied to every command (levels 1–3; level 4 inherits them through the helper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// `RLIMIT_AS`: address space in bytes.
    pub address_space_bytes: u64,
    /// `RLIMIT_FSIZE`: largest file a command may write, in bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_NPROC` budget: processes the command may have at once (levels 1–2 count only the
    /// sandbox's own processes because they run in a fresh user namespace; level 3 adds this budget
    /// to the user's current process count). For root, a `pids` cgroup enforces the same number.
    pub processes: u64,
    /// Size of the private `/tmp` (tmpfs) at levels 1–2, in bytes.
    pub tmp_size_bytes: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            address_space_bytes: 4 << 30,
            file_size_bytes: 1 << 30,
            processes: 256,
            tmp_size_bytes: 256 << 20,
        }
    }
}

/// Everything [`crate::LinuxSandbox`] needs to know about this installation.
#[derive(Debug, Clone, PartialEq)]
pub struct LinuxSandboxSettings {
    /// Sayri's state directory (`$SAYRI_STATE_DIR`, default `~/.local/share/sayri`): hidden at
    /// levels 1–2, and parent of the default level-2 workspaces (`<state>/sandboxes/<agent_id>`).
    pub state_dir: PathBuf,
    /// Sayri's config directory (`$SAYRI_CONFIG_DIR`, default `~/.config/sayri`): hidden at levels 1–2.
    pub config_dir: PathBuf,
    /// The user's home directory (for the default deny-read list and level-3 working directory).
    pub home_dir: PathBuf,
    /// Additional paths hidden at levels 1–2. Only ever tightens the default list.
    pub extra_deny_read: Vec<PathBuf>,
    /// Output cap used when a request asks for 0 bytes.
    pub default_output_limit: usize,
    /// Program that runs the exec helper (e.g. the `sayri` binary).
    pub helper_program: PathBuf,
    /// Arguments placed before the helper's own arguments (e.g. `[EXEC_HELPER_ARG]`, see
    /// [`crate::EXEC_HELPER_ARG`]).
    pub helper_args: Vec<OsString>,
    /// Resource limits for every command.
    pub limits: ResourceLimits,
    /// Where running helpers are written down for the clean-up after a crash (the daemon's
    /// `$STATE/children`); `None` records nothing (the `sayri-sandbox` CLI).
    pub child_registry: Option<crate::child_registry::ChildRegistry>,
}

/// Default output cap: 64 KiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;

impl LinuxSandboxSettings {
    /// Settings from the environment, with the given helper program and argument prefix: the state
    /// directory is `$SAYRI_STATE_DIR` or `$HOME/.local/share/sayri`, the config directory
    /// `$SAYRI_CONFIG_DIR` or `$HOME/.config/sayri`. An unset or empty `HOME` is the home
    /// directory of the effective user's account (`/` when it has none).
    pub fn from_env(helper_program: PathBuf, helper_args: Vec<OsString>) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::geteuid())
                    .ok()
                    .flatten()
                    .map(|u| u.dir)
            })
            .unwrap_or_else(|| PathBuf::from("/"));
        let state_dir = std::env::var_os("SAYRI_STATE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".local/share/sayri"));
        let config_dir = std::env::var_os("SAYRI_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config/sayri"));
        LinuxSandboxSettings {
            state_dir,
            config_dir,
            home_dir: home,
            extra_deny_read: Vec::new(),
            default_output_limit: DEFAULT_OUTPUT_LIMIT,
            helper_program,
            helper_args,
            limits: ResourceLimits::default(),
            child_registry: None,
        }
    }

    /// The full deny-read list: Sayri's config and state dirs, the user's key stores and browser
    /// profiles, `/etc/shadow` and `/etc/gshadow`, then [`Self::extra_deny_read`].
    pub fn deny_read_paths(&self) -> Vec<PathBuf> {
        let h = &self.home_dir;
        let mut v = vec![self.config_dir.clone(), self.state_dir.clone()];
        for rel in [
            ".ssh",
            ".gnupg",
            ".password-store",
            ".mozilla",
            ".thunderbird",
            ".config/google-chrome",
            ".config/chromium",
            ".config/BraveSoftware",
            ".config/vivaldi",
            ".config/microsoft-edge",
            ".var/app/org.mozilla.firefox",
            ".local/share/keyrings",
            ".aws",
            ".kube",
            ".docker",
            ".netrc",
        ] {
            v.push(h.join(rel));
        }
        v.push(PathBuf::from("/etc/shadow"));
        v.push(PathBuf::from("/etc/gshadow"));
        v.extend(self.extra_deny_read.iter().cloned());
        v
    }

    /// Root of the default level-2 workspaces: `<state>/sandboxes`.
    pub fn sandboxes_root(&self) -> PathBuf {
        self.state_dir.join("sandboxes")
    }

    /// The default level-2 workspace of `agent_id`, or `None` when the id is not a plain name
    /// (empty, `.`/`..`, or containing `/` or NUL).
    pub fn default_workspace(&self, agent_id: &str) -> Option<PathBuf> {
        let ok = !agent_id.is_empty()
            && agent_id != "."
            && agent_id != ".."
            && !agent_id.contains('/')
            && !agent_id.contains('\0');
        ok.then(|| self.sandboxes_root().join(agent_id))
    }
}

/// Whether `inner` equals `outer` or lies below it (component-wise, no I/O).
pub fn is_within(inner: &Path, outer: &Path) -> bool {
    inner.starts_with(outer)
}
