//! `sayri permissions …`: check a command against an agent's rules, list and forget approvals.
//!
//! * `check [--agent ID | --profile FILE] [--policies DIR] [--action shell] --resource CMD [--json]`
//!   evaluates exactly as the daemon's gate does (rules → saved approvals → default → policies →
//!   analysis) at the profile's level, assuming a person can answer, and exits **0** (allow),
//!   **3** (ask) or **4** (deny); **2** for a usage or configuration error.
//! * `list [--agent ID] [--json]` prints saved "Allow always" approvals.
//! * `forget [--action A] [--agent ID]` removes approvals (no action: all of them).
//! * `answer REQUEST_ID --allow|--deny [--always]` answers an open permission question of the
//!   running daemon over IPC (`permission_answer`); exits 0 when the answer was delivered, 1 when
//!   the question is no longer open (answered, expired or unknown) or no daemon runs.
//!
//! `check` loads everything with the daemon's own loaders, so both decide alike: the config
//! directory of [`Paths`], `sayri.toml` ([`sayri_daemon::config_file`]), the agent profile with its
//! validation and defaults ([`sayri_daemon::agents`]), and the policy files ([`sayri_daemon::policies`]: the
//! system files and `permissions.policy_files`).
//! * Agent: `--agent ID`, else the configured `agent.default_agent` (as the daemon); an unknown
//!   agent is an error. `--profile FILE` checks that profile file instead. Either way an agent
//!   with a creator is judged by its effective profile (level, rules and ask switch bound by its
//!   creators), exactly as its turns run.
//! * Policies: those that apply under `sayri.toml`; `--policies DIR` tries every `*.json` file of
//!   DIR (name order) in their place.

use clap::{Args, Subcommand};
use sayri_client::paths::Paths;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::ports::ApprovalStore;
use sayri_daemon::agents::{self, FileAgents};
use sayri_daemon::{config_file, policies};
use sayri_permissions::Approval;
use sayri_permissions::{
    Action, AgentRules, Decision, Effect, EvalContext, PolicySet, evaluate_with_approvals,
};
use std::io::Write;
use std::path::PathBuf;

/// Exit code for `allow`.
pub(crate) const EXIT_ALLOW: i32 = 0;
/// Exit code for a usage or configuration error.
pub(crate) const EXIT_ERROR: i32 = 2;
/// Exit code for `ask`.
pub(crate) const EXIT_ASK: i32 = 3;
/// Exit code for `deny`.
pub(crate) const EXIT_DENY: i32 = 4;

/// `sayri permissions <command>`.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub(crate) enum PermissionsCommand {
    /// Decide whether an action would be allowed, asked or denied (exit 0 / 3 / 4).
    Check(CheckArgs),
    /// List saved "Allow always" approvals.
    List {
        /// Only this agent's approvals.
        #[arg(long)]
        agent: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget saved approvals (all of them when no --action is given).
    Forget {
        /// Only approvals of this action (shell, read, write, web, …).
        #[arg(long)]
        action: Option<String>,
        /// Agent whose approvals of --action are removed.
        #[arg(long, default_value = "")]
        agent: String,
    },
    /// Answer an open permission question of the running daemon (Allow / Allow always / Deny).
    Answer(AnswerArgs),
}

/// Arguments of `sayri permissions answer`.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct AnswerArgs {
    /// The question's id (12 hex characters, as shown by `sayri ask` or the app).
    pub request_id: String,
    /// Run the command.
    #[arg(long, conflicts_with = "deny", required_unless_present = "deny")]
    pub allow: bool,
    /// Do not run it.
    #[arg(long)]
    pub deny: bool,
    /// With --allow: remember the approval for this agent ("Allow always").
    #[arg(long, conflicts_with = "deny")]
    pub always: bool,
}

impl PermissionsCommand {
    /// True for subcommands that talk to the running daemon instead of the local database.
    pub(crate) fn needs_daemon(&self) -> bool {
        matches!(self, PermissionsCommand::Answer(_))
    }
}

/// `sayri permissions answer`: sends `permission_answer` to the running daemon (never starts
/// one: a new daemon has no open questions) and prints what happened.
///
/// # Errors
/// No daemon runs, the connection fails, or the question is no longer open — each with what to
/// do next.
pub(crate) async fn answer(
    paths: &sayri_client::paths::Paths,
    args: &AnswerArgs,
) -> anyhow::Result<()> {
    use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
    let mut client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) => anyhow::bail!(
            "the Sayri daemon is not running, so no permission question is open; nothing was answered"
        ),
        Err(e) => return Err(e.into()),
    };
    let reply = client
        .request_with(&sayri_protocol::params::PermissionAnswerParams {
            request_id: args.request_id.clone(),
            allow: args.allow,
            remember: args.allow && args.always,
        })
        .await?;
    if !reply.delivered {
        anyhow::bail!(
            "no open permission question has id {:?} (already answered, expired, unknown, or \
             asked before Sayri restarted); use the id of the latest permission request, or ask \
             again",
            args.request_id
        );
    }
    let verdict = match (args.allow, args.always) {
        (true, true) => "allowed (and remembered for this agent)",
        (true, false) => "allowed once",
        (false, _) => "denied",
    };
    println!("{}: {verdict}", args.request_id);
    Ok(())
}

/// Arguments of `sayri permissions check`.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub(crate) struct CheckArgs {
    /// Agent id (default: the configured `agent.default_agent`), as the daemon loads it.
    #[arg(long, conflicts_with = "profile")]
    pub agent: Option<String>,
    /// Agent profile file to check instead.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Directory whose `*.json` policy files are tried in place of the configured ones.
    #[arg(long)]
    pub policies: Option<PathBuf>,
    /// Rule action: shell, read, write, web, skill, subagent.
    #[arg(long, default_value = "shell")]
    pub action: String,
    /// The command (or path, URL, …) to check.
    #[arg(long)]
    pub resource: String,
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a permissions subcommand, printing to stdout/stderr; returns the exit code.
pub(crate) fn run(command: &PermissionsCommand, paths: &Paths, store: &dyn ApprovalStore) -> i32 {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    run_to(command, paths, store, &mut out, &mut err)
}

/// [`run`] with explicit output streams (for tests).
pub(crate) fn run_to(
    command: &PermissionsCommand,
    paths: &Paths,
    store: &dyn ApprovalStore,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let result = match command {
        PermissionsCommand::Check(args) => check(args, paths, store, out),
        PermissionsCommand::List { agent, json } => list(store, agent.as_deref(), *json, out),
        PermissionsCommand::Forget { action, agent } => store
            .forget_approvals(action.as_deref().filter(|a| !a.is_empty()), agent)
            .map_err(|e| format!("could not forget approvals: {e}"))
            .and_then(|n| {
                writeln!(out, "removed {n} approval(s)").map_err(|e| e.to_string())?;
                Ok(EXIT_ALLOW)
            }),
        PermissionsCommand::Answer(_) => Err(
            "`permissions answer` talks to the daemon; run it through the `sayri` command".into(),
        ),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "sayri permissions: {message}");
            EXIT_ERROR
        }
    }
}

/// The profile and policies `check` decides with, loaded as the daemon loads them.
fn load_inputs(args: &CheckArgs, paths: &Paths) -> Result<(AgentProfile, PolicySet), String> {
    let cfg = config_file::load(&paths.config_file())
        .map_err(|e| e.to_string())?
        .0;
    let agents = FileAgents::new(paths.agents_dir());
    let profile = match &args.profile {
        Some(path) => {
            // A profile file with a creator is judged as it would run: bound by its creators.
            let written = agents::load_profile_file(path)?;
            let creators = sayri_core::domain::agents::creators_of(&written, |i| agents.stored(i))
                .map_err(|e| e.to_string())?;
            sayri_core::domain::agents::effective_profile(&written, &creators)
        }
        None => {
            let id = args.agent.as_deref().unwrap_or(&cfg.agent.default_agent);
            agents.load(id)?.ok_or_else(|| {
                format!(
                    "agent not found: {id} — create {}/{id}.json, or pick another with --agent",
                    agents.dir().display()
                )
            })?
        }
    };
    let policy_files = match &args.policies {
        Some(dir) => policies::files_in_dir(dir).map_err(|e| e.to_string())?,
        None => policies::files_for(&cfg),
    };
    Ok((
        profile,
        policies::load(&policy_files).map_err(|e| e.to_string())?,
    ))
}

fn check(
    args: &CheckArgs,
    paths: &Paths,
    store: &dyn ApprovalStore,
    out: &mut dyn Write,
) -> Result<i32, String> {
    let action = Action::parse(&args.action).ok_or_else(|| {
        format!(
            "unknown action {:?}; use shell, read, write, web, skill, subagent, memory or mcp",
            args.action
        )
    })?;
    let (profile, policies) = load_inputs(args, paths)?;
    let agent = AgentRules::from_profile(&profile).map_err(|e| e.to_string())?;
    let approvals: Vec<Approval> = store
        .approvals_for(&agent.agent_id)
        .map_err(|e| format!("cannot read saved approvals: {e}"))?;
    let ctx = EvalContext {
        level: profile.sandbox.level,
        approver_available: true,
    };
    let decision =
        evaluate_with_approvals(action, &args.resource, &agent, &approvals, &policies, &ctx);
    print_decision(&decision, args.json, out).map_err(|e| e.to_string())?;
    Ok(match decision.effect {
        Effect::Allow => EXIT_ALLOW,
        Effect::Ask => EXIT_ASK,
        Effect::Deny => EXIT_DENY,
    })
}

fn print_decision(d: &Decision, json: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if json {
        let text = serde_json::to_string_pretty(d).map_err(std::io::Error::other)?;
        return writeln!(out, "{text}");
    }
    writeln!(out, "{}: {}", d.effect, d.message())?;
    for s in &d.subjects {
        writeln!(
            out,
            "  {:<5} {}  — {}",
            s.effect.name(),
            s.command,
            s.reason
        )?;
    }
    Ok(())
}

fn list(
    store: &dyn ApprovalStore,
    agent: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<i32, String> {
    let approvals = match agent {
        Some(a) => store.approvals_for(a),
        None => store.all_approvals(),
    }
    .map_err(|e| format!("cannot read saved approvals: {e}"))?;
    let io = |e: std::io::Error| e.to_string();
    if json {
        let text = serde_json::to_string_pretty(&approvals).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(io)?;
    } else if approvals.is_empty() {
        writeln!(out, "no saved approvals").map_err(io)?;
    } else {
        for a in &approvals {
            writeln!(
                out,
                "{:<12} {:<6} {}",
                a.agent_id,
                a.action,
                sayri_client::terminal_text::terminal_safe(&a.resource)
            )
            .map_err(io)?;
        }
    }
    Ok(EXIT_ALLOW)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sayri_store::Store;
    use std::path::Path;

    /// A real approval store and empty config/state directories under `dir`.
    fn rig(dir: &Path) -> (Paths, Store) {
        let paths = Paths {
            config_dir: dir.join("config"),
            state_dir: dir.join("state"),
            runtime_dir: dir.join("state"),
        };
        std::fs::create_dir_all(&paths.state_dir).unwrap();
        let store = Store::open(paths.database()).unwrap();
        (paths, store)
    }

    fn write_profile(dir: &Path, rules: &str) -> PathBuf {
        let path = dir.join("agent.json");
        let text = format!(
            r#"{{"id":"tester","name":"Tester","sandbox":{{"level":"LEVEL_3_HOST_USER","ask_before_run":true,"blocked_binaries":[],"permission_rules":{rules}}}}}"#
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn check_cmd(profile: &Path, policies: &Path, resource: &str) -> PermissionsCommand {
        PermissionsCommand::Check(CheckArgs {
            agent: None,
            profile: Some(profile.to_path_buf()),
            policies: Some(policies.to_path_buf()),
            action: "shell".into(),
            resource: resource.into(),
            json: true,
        })
    }

    fn run_json(
        cmd: &PermissionsCommand,
        paths: &Paths,
        store: &Store,
    ) -> (i32, serde_json::Value) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_to(cmd, paths, store, &mut out, &mut err);
        let v = serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null);
        (code, v)
    }

    #[test]
    fn check_exit_codes_and_json() {
        let dir = tempfile::tempdir().unwrap();
        let pol = dir.path().join("policies");
        std::fs::create_dir(&pol).unwrap();
        std::fs::write(
            pol.join("10-site.json"),
            r#"{"policies":[{"action":"shell","resource":"npm publish*","effect":"ask"}]}"#,
        )
        .unwrap();
        let profile = write_profile(
            dir.path(),
            r#"[{"action":"shell","resource":"*","effect":"allow"},{"action":"shell","resource":"git clean*","effect":"deny"}]"#,
        );
        let (paths, store) = rig(dir.path());
        let (code, v) = run_json(&check_cmd(&profile, &pol, "git status"), &paths, &store);
        assert_eq!((code, v["effect"].as_str()), (EXIT_ALLOW, Some("allow")));
        let (code, v) = run_json(
            &check_cmd(&profile, &pol, "git fetch && git clean -fd"),
            &paths,
            &store,
        );
        assert_eq!(code, EXIT_DENY);
        assert_eq!(v["rule"]["resource"], "git clean*");
        assert_eq!(v["source"], "agent");
        assert_eq!(v["segments"][1]["command"], "git clean -fd");
        let (code, v) = run_json(&check_cmd(&profile, &pol, "npm publish"), &paths, &store);
        assert_eq!(code, EXIT_ASK);
        assert!(v["source"].as_str().unwrap().ends_with("10-site.json"));
    }

    #[test]
    fn broken_inputs_exit_2_with_a_message() {
        let dir = tempfile::tempdir().unwrap();
        let pol = dir.path().join("p");
        std::fs::create_dir(&pol).unwrap();
        std::fs::write(pol.join("bad.json"), "[{\"action\":\"shell\"}]").unwrap();
        let profile = write_profile(dir.path(), "[]");
        let (paths, store) = rig(dir.path());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_to(
            &check_cmd(&profile, &pol, "ls"),
            &paths,
            &store,
            &mut out,
            &mut err,
        );
        assert_eq!(code, EXIT_ERROR);
        let msg = String::from_utf8(err).unwrap();
        assert!(msg.contains("bad.json") && msg.contains("#0"), "{msg}");
    }

    #[test]
    fn list_and_forget() {
        let dir = tempfile::tempdir().unwrap();
        let (paths, store) = rig(dir.path());
        store
            .add_approval(&Approval {
                agent_id: "a".into(),
                action: "shell".into(),
                resource: "make".into(),
                created_at: 0.0,
            })
            .unwrap();
        let (code, v) = run_json(
            &PermissionsCommand::List {
                agent: None,
                json: true,
            },
            &paths,
            &store,
        );
        assert_eq!(code, 0);
        assert_eq!(v[0]["resource"], "make");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let forget = PermissionsCommand::Forget {
            action: Some("shell".into()),
            agent: "a".into(),
        };
        assert_eq!(run_to(&forget, &paths, &store, &mut out, &mut err), 0);
        assert_eq!(
            String::from_utf8(out).unwrap().trim(),
            "removed 1 approval(s)"
        );
    }
}
