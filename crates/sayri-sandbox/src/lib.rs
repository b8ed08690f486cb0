//! Linux isolation per sandbox level: Landlock, seccomp, namespaces, rlimits.
//!
//! The daemon side is [`LinuxSandbox`], an implementation of [`sayri_core::ports::Sandbox`]. It never
//! isolates anything in its own (multithreaded) process: every command is handed to a small,
//! single-threaded *exec helper* ([`exec_helper_main`]) that applies the level's mechanisms in a fixed
//! order and then runs `bash -c`. See `README.md` for the policy of each level.

pub mod background;
pub mod capabilities;
pub mod cgroup;
pub mod child_registry;
pub mod cli;
pub mod env_policy;
pub mod exec_helper;
pub mod fd_cleanup;
pub mod guarantees;
pub mod host_restrictions;
pub mod keeper;
pub mod landlock;
pub mod launcher;
pub mod mounts;
pub mod namespaces;
pub mod nondumpable;
pub mod output;
pub mod parent_death;
pub mod pkexec;
pub mod privileges;
pub mod process_tree;
pub mod rlimits;
pub mod seccomp;
pub mod settings;
pub mod spec;
pub mod spec_pipe;
pub mod stdio;

pub use capabilities::{CapabilityReport, KernelFeatures, LevelSupport};
pub use exec_helper::{EXEC_HELPER_ARG, exec_helper_main};
pub use launcher::{LinuxSandbox, RequestRefused};
pub use settings::{LinuxSandboxSettings, ResourceLimits};
