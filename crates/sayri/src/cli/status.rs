//! `sayri status [--json]`.

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::params::StatusParams;
use serde_json::Value;

/// Runs `sayri status`.
pub(crate) async fn run(paths: &Paths, allow_start: bool, json: bool) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let status = client.request_with(&StatusParams {}).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(());
    }
    let s = |k: &str| match status.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(v) => v.to_string(),
    };
    let provider = status.get("provider").cloned().unwrap_or(Value::Null);
    let p = |k: &str| match provider.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    };
    println!(
        "Sayri {} (protocol {}), daemon pid {}",
        s("version"),
        s("protocol_version"),
        s("pid")
    );
    println!("state:    {} (busy: {})", s("state"), s("busy"));
    println!("agent:    {}   session: {}", s("agent"), s("session_id"));
    if provider.get("local") == Some(&Value::Bool(true)) {
        println!("provider: local model {}", local_model_line(&status));
    } else {
        println!(
            "provider: {} model {} (api key {})",
            p("base_url"),
            p("model"),
            if provider.get("api_key_set") == Some(&Value::Bool(true)) {
                "set"
            } else {
                "not set"
            }
        );
    }
    let sb = status.get("sandbox").cloned().unwrap_or(Value::Null);
    if let Some(levels) = sb.get("levels").and_then(Value::as_array) {
        let off: Vec<String> = levels
            .iter()
            .filter(|l| l.get("available") == Some(&Value::Bool(false)))
            .map(|l| {
                format!(
                    "{} ({})",
                    l.get("level").and_then(Value::as_str).unwrap_or("?"),
                    l.get("missing")
                        .and_then(Value::as_array)
                        .map(|m| m
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("; "))
                        .unwrap_or_default()
                )
            })
            .collect();
        if off.is_empty() {
            println!("sandbox:  every level available");
        } else {
            println!(
                "sandbox:  unavailable here: {} — see `sayri sandbox check`",
                off.join(", ")
            );
        }
    } else if let Some(e) = sb.get("error").and_then(Value::as_str) {
        println!("sandbox:  could not be probed: {e}");
    } else if sb.get("probing") == Some(&Value::Bool(true)) {
        println!(
            "sandbox:  probing what each level can guarantee here… (run `sayri status` again in a moment)"
        );
    }
    if let Some(v) = status
        .get("vault")
        .filter(|v| v.get("available") == Some(&Value::Bool(false)))
    {
        println!(
            "vault:    unavailable: {} — see `sayri vault status`",
            v.get("error").and_then(Value::as_str).unwrap_or("?")
        );
    }
    if let Some(line) = crate::cli::db::status_line(status.get("database")) {
        println!("database: {}", terminal_safe(&line));
    }
    println!("config:   {}", s("config_dir"));
    println!("data:     {}", s("state_dir"));
    println!("socket:   {}", s("socket"));
    Ok(())
}

/// `NAME: ready on 127.0.0.1:PORT` / `starting…` / `failed: WHY` for the local model.
fn local_model_line(status: &Value) -> String {
    let lm = status.get("local_model").cloned().unwrap_or(Value::Null);
    let get = |k: &str| lm.get(k).and_then(Value::as_str).unwrap_or("");
    let name = match get("model") {
        "" => get("configured"),
        m => m,
    };
    let state = match get("state") {
        "ready" => format!(
            "ready on 127.0.0.1:{}",
            lm.get("port").and_then(Value::as_u64).unwrap_or(0)
        ),
        "starting" => format!("starting… (log {})", get("log_file")),
        "failed" => format!("failed: {}", get("error")),
        other => other.to_string(),
    };
    format!("{name}: {}", terminal_safe(&state))
}
