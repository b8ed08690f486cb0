//! Settings mapping: how `sayri.toml` values become the settings of each adapter and of the
//! engine. Pure functions of the config (and the provider key); no adapter is built here.

use sayri_client::paths::Paths;
use sayri_core::domain::agents::delegation::Budget;
use sayri_core::domain::config::Config;
use sayri_core::domain::history::HistoryBudget;
use sayri_core::domain::memory::{DEFAULT_RECALL_TOKENS, MemorySettings};
use sayri_core::engine::EngineSettings;
use sayri_llm::{ClientConfig, InlineThink};
use sayri_sandbox::LinuxSandboxSettings;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The provider client's settings.
///
/// # Errors
/// A bad `provider.extra_headers` line, with what to do.
pub fn client_config(cfg: &Config, key: Option<String>) -> Result<ClientConfig, String> {
    let mut headers = Vec::new();
    for line in &cfg.provider.extra_headers {
        let header = sayri_llm::parse_header_line(line).map_err(|e| {
            format!(
                "provider.extra_headers: {e} — fix it with `sayri config set provider.extra_headers` (it reads the JSON list of headers from stdin or a hidden prompt; `'[]'` as an argument clears them)"
            )
        })?;
        headers.push(header);
    }
    let secs = |n: i64, dflt: u64| {
        Duration::from_secs(u64::try_from(n).ok().filter(|n| *n > 0).unwrap_or(dflt))
    };
    Ok(ClientConfig {
        base_url: cfg.provider.base_url.clone(),
        api_key: key.filter(|k| !k.is_empty()),
        connect_timeout: secs(cfg.provider.connect_timeout, 10),
        first_byte_timeout: secs(cfg.provider.timeout, 120),
        idle_timeout: secs(cfg.provider.idle_timeout, 60),
        retries: u32::try_from(cfg.provider.retries).unwrap_or(0),
        extra_headers: headers,
        native_tools: cfg.provider.native_tools,
        // Stream answer text at once; `<think>` tags are still split off (a missing opening
        // tag cannot be detected without holding the whole answer back).
        inline_think: InlineThink::Explicit,
        ..ClientConfig::default()
    })
}

/// Engine settings from the config.
pub fn engine_settings(cfg: &Config) -> EngineSettings {
    let history_tokens = usize::try_from(cfg.agent.history_tokens)
        .unwrap_or(2500)
        .max(200);
    EngineSettings {
        model: cfg.provider.model.clone(),
        max_tokens: u32::try_from(cfg.provider.max_tokens)
            .ok()
            .filter(|n| *n > 0),
        strip_patterns: cfg.provider.strip_patterns.clone(),
        history: HistoryBudget {
            verbatim_tokens: history_tokens * 4 / 5,
            summary_tokens: history_tokens / 5,
        },
        output_limit: output_limit(cfg),
        context_tokens: usize::try_from(cfg.provider.context_tokens)
            .ok()
            .filter(|n| *n > 0),
        generate_titles: cfg.agent.auto_title,
        runs_as_root: nix::unistd::geteuid().is_root(),
        desktop_tools: crate::desktop_tools::offered(),
        command_env: crate::desktop_tools::lookup_env(cfg),
        delegation_budget: Budget {
            calls: usize::try_from(cfg.agent.delegation_budget_calls)
                .unwrap_or(24)
                .max(1),
            tokens: u64::try_from(cfg.agent.delegation_budget_tokens)
                .unwrap_or(250_000)
                .max(1_000),
        },
        memory: MemorySettings {
            auto_accept: cfg.memory.auto_accept,
            recall_tokens: usize::try_from(cfg.memory.recall_tokens)
                .unwrap_or(DEFAULT_RECALL_TOKENS)
                .max(1),
            auto_recall: cfg.memory.auto_recall,
            shared_with_sub_agents: cfg.memory.shared_with_sub_agents.clone(),
        },
        ..EngineSettings::default()
    }
}

/// Bytes of command output kept per step (`agent.output_limit`, at least 1 KiB).
fn output_limit(cfg: &Config) -> usize {
    usize::try_from(cfg.agent.output_limit)
        .unwrap_or(65536)
        .max(1024)
}

/// How long a permission question stays open (`permissions.ask_timeout`, at least 1 s).
pub fn ask_timeout(cfg: &Config) -> Duration {
    Duration::from_secs(
        u64::try_from(cfg.permissions.ask_timeout)
            .unwrap_or(120)
            .max(1),
    )
}

/// File name of the exec helper program (built and installed next to `sayri`).
pub const EXEC_HELPER: &str = "sayri-exec";

/// Where the exec helper is looked for, in order, given the `sayri` executable: next to it
/// (a build's `target/<profile>/`, or an installed `bin/`), then `../libexec/sayri/` and
/// `../lib/sayri/` relative to it (packaged layouts).
pub fn exec_helper_candidates(exe: &Path) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else {
        return vec![PathBuf::from(EXEC_HELPER)];
    };
    let mut v = vec![dir.join(EXEC_HELPER)];
    if let Some(prefix) = dir.parent() {
        v.push(prefix.join("libexec/sayri").join(EXEC_HELPER));
        v.push(prefix.join("lib/sayri").join(EXEC_HELPER));
    }
    v
}

/// The exec helper for this `sayri` executable: the first candidate that exists (see
/// [`exec_helper_candidates`]). When none does, the first candidate is returned anyway: every
/// command is then refused with a message naming it (the sandbox fails closed), and
/// `sayri sandbox check` says what to install.
pub fn exec_helper_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sayri"));
    let candidates = exec_helper_candidates(&exe);
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or(&candidates[0])
        .clone()
}

/// A program that runs the exec helper and supervised programs' keepers:
/// `program args… exec|probe|keep …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperProgram {
    /// The program: `sayri-exec`, or a program that nests the helper's entry point.
    pub program: PathBuf,
    /// Arguments before the helper's mode word: none for `sayri-exec`;
    /// `[sayri_sandbox::EXEC_HELPER_ARG]` for a program that nests the helper behind it.
    pub args: Vec<OsString>,
}

/// The program set by [`use_helper_program`], if any.
static HELPER_PROGRAM: std::sync::OnceLock<HelperProgram> = std::sync::OnceLock::new();

/// Makes `helper` run the exec helpers and keepers of this process instead of the
/// `sayri-exec` found next to the current executable ([`exec_helper_path`]). For programs that
/// embed the daemon but do not live next to `sayri-exec` (test harnesses); call it before the
/// daemon starts. Returns false when a program was already set (the first one stays).
pub fn use_helper_program(helper: HelperProgram) -> bool {
    HELPER_PROGRAM.set(helper).is_ok()
}

/// The program that runs exec helpers (`… exec`, `… probe`) and supervised programs' keepers
/// (`… keep`): `sayri-exec` at [`exec_helper_path`], unless [`use_helper_program`] chose
/// another.
pub fn helper_program() -> HelperProgram {
    HELPER_PROGRAM
        .get()
        .cloned()
        .unwrap_or_else(|| HelperProgram {
            program: exec_helper_path(),
            args: Vec::new(),
        })
}

/// Sandbox settings for the daemon and `sayri sandbox`: the helper is [`helper_program`] (the
/// small `sayri-exec` program installed next to `sayri`); Sayri's own directories are denied
/// to levels 1–2.
pub fn sandbox_settings(paths: &Paths, cfg: &Config) -> LinuxSandboxSettings {
    let helper = helper_program();
    let mut s = LinuxSandboxSettings::from_env(helper.program, helper.args);
    s.state_dir = paths.state_dir.clone();
    s.config_dir = paths.config_dir.clone();
    s.extra_deny_read = cfg.sandbox.deny_read.iter().map(PathBuf::from).collect();
    s.default_output_limit = output_limit(cfg);
    s.child_registry = Some(sayri_sandbox::child_registry::ChildRegistry::new(
        paths.children_dir(),
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_is_looked_for_next_to_sayri_then_in_packaged_layouts() {
        assert_eq!(
            exec_helper_candidates(Path::new("/usr/bin/sayri")),
            vec![
                PathBuf::from("/usr/bin/sayri-exec"),
                PathBuf::from("/usr/libexec/sayri/sayri-exec"),
                PathBuf::from("/usr/lib/sayri/sayri-exec"),
            ]
        );
    }
}
