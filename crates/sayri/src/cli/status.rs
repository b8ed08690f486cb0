//! `sayri status [--json]`.

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::params::{PluginsListParams, StatusParams};
use sayri_protocol::reply::desktop::Plugin;
use sayri_protocol::reply::runtime::{LocalModelStatus, SandboxStatus, StatusReply};

/// Runs `sayri status`.
pub(crate) async fn run(paths: &Paths, allow_start: bool, json: bool) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let status = client.request_with(&StatusParams {}).await?;
    if json {
        return crate::cli::print_json(&status);
    }
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    println!(
        "Sayri {} (protocol {}), daemon pid {}",
        status.version, status.protocol_version, status.pid
    );
    println!("state:    {} (busy: {})", status.state, status.busy);
    println!(
        "agent:    {}   session: {}",
        status.agent,
        dash(&status.session_id)
    );
    let provider = &status.provider;
    if provider.local {
        println!(
            "provider: local model {}",
            local_model_line(status.local_model.as_ref())
        );
    } else {
        println!(
            "provider: {} model {} (api key {})",
            provider.base_url.as_deref().unwrap_or("null"),
            provider.model.as_deref().unwrap_or("null"),
            if provider.api_key_set {
                "set"
            } else {
                "not set"
            }
        );
    }
    print_sandbox(&status);
    if let Some(v) = status.vault.as_ref().filter(|v| !v.available) {
        println!(
            "vault:    unavailable: {} — see `sayri vault status`",
            v.error.as_deref().unwrap_or("?")
        );
    }
    if let Some(line) = status
        .database
        .as_ref()
        .and_then(crate::cli::db::status_line)
    {
        println!("database: {}", terminal_safe(&line));
    }
    // A daemon that cannot list its plugins has no service line to show.
    if let Ok(plugins) = client.request_with(&PluginsListParams {}).await {
        for line in plugins.iter().filter_map(service_line) {
            println!("service:  {}", terminal_safe(&line));
        }
    }
    for server in &status.mcp {
        println!("mcp:      {}", terminal_safe(&mcp_line(server)));
    }
    println!("config:   {}", status.config_dir.display());
    println!("data:     {}", status.state_dir.display());
    println!("socket:   {}", status.socket.display());
    Ok(())
}

/// One `mcp:` line: the server, whether it runs, its approved tools, its last failure.
fn mcp_line(s: &sayri_protocol::reply::runtime::McpServerState) -> String {
    let state = if !s.enabled {
        "disabled"
    } else if s.connected {
        "connected"
    } else {
        "not connected"
    };
    let mut line = format!(
        "{} ({}): {state}, {} tool{} approved",
        s.name,
        s.transport,
        s.tools_approved,
        if s.tools_approved == 1 { "" } else { "s" }
    );
    if let Some(n) = s.tools_offered {
        line.push_str(&format!(", {n} offered at the last turn"));
    }
    if s.enabled && s.tools_approved == 0 {
        line.push_str(&format!(" (approve with `sayri mcp approve {}`)", s.name));
    }
    if let Some(e) = &s.last_error {
        line.push_str(&format!("; last error: {e}"));
    }
    line
}

/// The `sandbox:` line: the levels that do not hold here, the probe's error, or that it runs.
fn print_sandbox(status: &StatusReply) {
    match &status.sandbox {
        Some(SandboxStatus::Probed { levels, .. }) => {
            let off: Vec<String> = levels
                .iter()
                .filter(|l| !l.available)
                .map(|l| format!("{} ({})", l.level, l.missing.join("; ")))
                .collect();
            if off.is_empty() {
                println!("sandbox:  every level available");
            } else {
                println!(
                    "sandbox:  unavailable here: {} — see `sayri sandbox check`",
                    off.join(", ")
                );
            }
        }
        Some(SandboxStatus::Failed { error }) => {
            println!("sandbox:  could not be probed: {error}");
        }
        Some(SandboxStatus::Probing { probing: true }) => println!(
            "sandbox:  probing what each level can guarantee here… (run `sayri status` again in a moment)"
        ),
        Some(SandboxStatus::Probing { probing: false }) | None => {}
    }
}

/// `NAME: ready on 127.0.0.1:PORT` / `starting…` / `failed: WHY` for the local model.
fn local_model_line(lm: Option<&LocalModelStatus>) -> String {
    let lm = lm.cloned().unwrap_or_default();
    let name = lm
        .model
        .as_deref()
        .filter(|m| !m.is_empty())
        .unwrap_or(&lm.configured);
    let state = match lm.state.as_str() {
        "ready" => format!("ready on 127.0.0.1:{}", lm.port.unwrap_or(0)),
        "starting" => format!("starting… (log {})", lm.log_file),
        "failed" => format!("failed: {}", lm.error.as_deref().unwrap_or("")),
        other => other.to_string(),
    };
    format!("{name}: {}", terminal_safe(&state))
}

/// `ID  STATE  pid PID` / `ID  failed — WHY` for a plugin's background service (`off` after the
/// state when it is turned off); `None` for a plugin without one.
fn service_line(p: &Plugin) -> Option<String> {
    let s = p.service.as_ref()?;
    let mut line = format!("{}  {}", p.id, s.state);
    if p.service_enabled == Some(false) {
        line.push_str(" (off)");
    }
    if let Some(pid) = s.pid {
        line.push_str(&format!("  pid {pid}"));
    }
    if s.restarts > 0 {
        line.push_str(&format!("  restarts {}", s.restarts));
    }
    if let Some(e) = &s.last_error {
        line.push_str(&format!(" — {e}"));
    }
    Some(line)
}
