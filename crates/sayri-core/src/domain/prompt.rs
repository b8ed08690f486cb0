//! The system prompt, written for token economy: the default agent's fixed prompt stays at most
//! 700 `o200k_base` tokens (asserted by `default_agent_prompt_fits_700_tokens`).
//!
//! Order: identity and agent, where commands run (the level in plain words), restrictions,
//! skills (one line each), the block protocol, memory/preferences, truthfulness rules, then the
//! agent's own `system_prompt` and `custom_instructions`. No secret values, no history.

use super::profile::AgentProfile;
use sayri_protocol::SandboxLevel;
use std::fmt::Write;

/// One installed skill as the prompt lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    /// Skill id (directory name).
    pub id: String,
    /// Display name.
    pub name: String,
    /// One-line description (cut to 100 characters in the prompt).
    pub description: String,
}

/// At most this many skills are listed.
pub const MAX_SKILLS: usize = 15;

/// Facts about the machine the prompt states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Host {
    /// Commands at the host levels run as root (the daemon's effective user is root).
    pub root: bool,
}

/// The level in plain words: where a command runs, as whom, and what it can touch.
pub fn describe_level(level: SandboxLevel, allow_network: bool, host: &Host) -> String {
    let net = if allow_network {
        "network allowed"
    } else {
        "no network"
    };
    match level {
        SandboxLevel::NoExec => {
            "You cannot run commands: this agent is conversation only. Never write command blocks."
                .into()
        }
        SandboxLevel::ReadOnly => format!(
            "Commands run in a read-only sandbox: they can read system files but change nothing (a private /tmp is discarded after each command); the user's secrets and Sayri's own files are hidden; {net}."
        ),
        SandboxLevel::IsolatedDev => format!(
            "Commands run in a sandbox: the system is read-only and the only writable place is your workspace (the current directory), which persists between commands; the user's secrets and Sayri's own files are hidden; {net}."
        ),
        SandboxLevel::HostUser if host.root => {
            "Commands run on this machine as root (Sayri itself runs as root), with every file and the network. Start GUI apps in the background with `&`.".into()
        }
        SandboxLevel::HostUser => {
            "Commands run on the user's desktop as the user (not root), with the user's files and network. Start GUI apps in the background with `&`.".into()
        }
        SandboxLevel::HostRoot if host.root => {
            "Commands run on this machine as root (Sayri itself runs as root), with every file and the network.".into()
        }
        SandboxLevel::HostRoot => {
            "Commands run on the user's desktop as the user; prefix a command with `pkexec` when it truly needs root (the user must approve a dialog).".into()
        }
    }
}

/// Builds the system prompt for `profile` (at `profile.sandbox.level`) with `skills`.
pub fn build_system_prompt(profile: &AgentProfile, skills: &[SkillSummary], host: &Host) -> String {
    let level = profile.sandbox.level;
    let can_run = level != SandboxLevel::NoExec;
    let mut p = String::with_capacity(2048);
    let _ = writeln!(
        p,
        "You are Sayri, a local assistant on the user's Linux desktop (agent: {}, id {}).",
        profile.name, profile.id
    );
    let _ = writeln!(
        p,
        "\nWHERE COMMANDS RUN\n{}",
        describe_level(level, profile.sandbox.allow_network, host)
    );
    if can_run {
        let tools: Vec<&str> = profile
            .allowed_tools
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        if !tools.is_empty() {
            let _ = writeln!(p, "Use only these tools: {}.", tools.join(", "));
        }
        p.push_str("Some commands need the user's approval or are refused by policy.\n");

        let listed: Vec<&SkillSummary> = skills
            .iter()
            .filter(|s| {
                profile.allowed_skills.is_empty()
                    || profile
                        .allowed_skills
                        .iter()
                        .any(|a| *a == s.id || *a == s.name)
            })
            .take(MAX_SKILLS)
            .collect();
        if !listed.is_empty() {
            p.push_str("\nSKILLS (installed helpers)\n");
            for s in listed {
                let one_line = s
                    .description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let d: String = one_line.chars().take(100).collect();
                let _ = writeln!(p, "- {}: {}", s.name, d);
            }
        }

        p.push_str(
            "\nHOW TO ACT\n\
- To run a command, end your reply with exactly one block:\n```bash\n<command>\n```\n\
- Only the first block of a reply runs. Never use a bash block for examples; show examples as plain text.\n\
- After a block you receive an observation with the exit code and output; then continue. You have a few steps per request.\n\
- Run commands only when the request needs an action or a fact you must not guess. Otherwise answer directly.\n\
- When you have the answer, reply without any block.\n",
        );
        if profile.investigation_loop {
            p.push_str("- Never guess program names: check first (`which`, `ls /usr/share/applications`), then act. If a command fails, investigate and try a corrected command.\n");
        } else {
            p.push_str("- If a command fails, explain the error and how to fix it; do not silently work around it.\n");
        }
    }
    p.push_str("\nMEMORY\nOlder messages may be summarised. To recall details, reply with only:\n```search_history\n<keyword>\n```\n");
    if profile.reinforcement_learning && can_run {
        p.push_str("To see commands that worked before for a similar request, run `sayri pref query \"<words>\"`.\n");
    }
    p.push_str(
        "\nRULES\n\
1. Never claim success unless an observation shows exit code 0 without errors.\n\
2. If a command was refused or not approved, say so and what you would have run; do not retry it or work around it.\n\
3. Reply in the user's language, briefly (1–3 sentences), as plain text that reads well aloud.\n",
    );
    let own = profile.system_prompt.trim();
    if !own.is_empty() {
        let _ = write!(p, "\nAGENT PROMPT\n{own}\n");
    }
    let extra = profile.custom_instructions.trim();
    if !extra.is_empty() {
        let _ = write!(p, "\nAGENT INSTRUCTIONS\n{extra}\n");
    }
    p.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::tokens;

    #[test]
    fn default_agent_prompt_fits_700_tokens() {
        let p = build_system_prompt(&AgentProfile::builtin_default(), &[], &Host::default());
        let n = tokens::count(&p);
        println!(
            "default agent fixed prompt: {n} tokens (o200k_base), {} bytes",
            p.len()
        );
        assert!(n <= 700, "{n} tokens:\n{p}");
        let mut loop_on = AgentProfile::builtin_default();
        loop_on.investigation_loop = true;
        loop_on.reinforcement_learning = true;
        let n2 = tokens::count(&build_system_prompt(&loop_on, &[], &Host::default()));
        println!("with investigation_loop + reinforcement_learning: {n2} tokens");
        assert!(n2 <= 700, "{n2}");
    }

    #[test]
    fn level_zero_has_no_block_protocol_and_levels_differ() {
        let mut p = AgentProfile::builtin_default();
        p.sandbox.level = SandboxLevel::NoExec;
        let text = build_system_prompt(&p, &[], &Host::default());
        assert!(!text.contains("```bash"));
        assert!(text.contains("cannot run commands"));
        let descs: std::collections::HashSet<_> = SandboxLevel::ALL
            .iter()
            .map(|l| describe_level(*l, false, &Host::default()))
            .collect();
        assert_eq!(descs.len(), 5);
    }

    #[test]
    fn skills_are_filtered_and_one_line_each_and_instructions_included() {
        let mut p = AgentProfile::builtin_default();
        p.allowed_skills = vec!["weather".into()];
        p.custom_instructions = "Always answer in French.".into();
        let skills = vec![
            SkillSummary {
                id: "weather".into(),
                name: "Weather".into(),
                description: "Forecasts\nfor your city".repeat(20),
            },
            SkillSummary {
                id: "mail".into(),
                name: "Mail".into(),
                description: "Send mail".into(),
            },
        ];
        let text = build_system_prompt(&p, &skills, &Host::default());
        assert!(text.contains("- Weather: Forecasts"));
        assert!(!text.contains("Mail"));
        assert!(text.contains("Always answer in French."));
    }

    #[test]
    fn the_prompt_says_whether_commands_run_as_root() {
        let p = AgentProfile::builtin_default();
        assert_eq!(p.sandbox.level, SandboxLevel::HostUser);
        let user = build_system_prompt(&p, &[], &Host { root: false });
        let root = build_system_prompt(&p, &[], &Host { root: true });
        assert!(user.contains("as the user (not root)"), "{user}");
        assert!(
            !root.contains("not root") && root.contains("as root"),
            "{root}"
        );
    }
}
