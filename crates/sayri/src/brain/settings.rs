//! Settings mapping: how `sayri.toml` values become the settings of each adapter and of the
//! engine. Pure functions of the config (and the provider key); no adapter is built here.

use crate::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_core::domain::history::HistoryBudget;
use sayri_core::engine::EngineSettings;
use sayri_llm::{ClientConfig, InlineThink};
use sayri_sandbox::LinuxSandboxSettings;
use std::ffi::OsString;
use std::path::PathBuf;
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
                "provider.extra_headers: {e} — fix it with `sayri config set provider.extra_headers …`"
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
        generate_titles: cfg.agent.auto_title,
        runs_as_root: nix::unistd::geteuid().is_root(),
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

/// The program set by [`use_helper_program`], if any.
static HELPER_PROGRAM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes `program` (a `sayri` binary) run the exec helpers and keepers of this process instead
/// of the current executable. For programs that embed the daemon but cannot nest the helper
/// mode in their own `main` (test harnesses); call it before the daemon starts. Returns false
/// when a program was already set (the first one stays).
pub fn use_helper_program(program: PathBuf) -> bool {
    HELPER_PROGRAM.set(program).is_ok()
}

/// The program that runs exec helpers (`PROGRAM __sandbox-exec exec …`) and supervised
/// programs' keepers (`… keep …`): this very binary, unless [`use_helper_program`] chose another.
pub fn helper_program() -> PathBuf {
    HELPER_PROGRAM
        .get()
        .cloned()
        .unwrap_or_else(|| std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sayri")))
}

/// Sandbox settings for the daemon and `sayri sandbox`: the helper is [`helper_program`]
/// (`sayri __sandbox-exec`), Sayri's own directories are denied to levels 1–2.
pub fn sandbox_settings(paths: &Paths, cfg: &Config) -> LinuxSandboxSettings {
    let mut s = LinuxSandboxSettings::from_env(
        helper_program(),
        vec![OsString::from(sayri_sandbox::EXEC_HELPER_ARG)],
    );
    s.state_dir = paths.state_dir.clone();
    s.config_dir = paths.config_dir.clone();
    s.extra_deny_read = cfg.sandbox.deny_read.iter().map(PathBuf::from).collect();
    s.default_output_limit = output_limit(cfg);
    s.child_registry = Some(sayri_sandbox::child_registry::ChildRegistry::new(
        paths.children_dir(),
    ));
    s
}
