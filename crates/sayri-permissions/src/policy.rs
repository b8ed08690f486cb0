//! The policy layer: Sayri's compiled-in baseline plus system policy files.
//!
//! Policies only **tighten**: a policy `deny` denies, a policy `ask` asks (a real card where
//! someone can answer), and a policy `allow` can only lift a *rule-less default deny*. Within the
//! layer the last matching rule wins.
//!
//! Policy files (`/usr/share/sayri/policies.json`, then `/etc/sayri/policies.json`; the daemon
//! reads them and may override the paths for tests) hold `{"policies": [rule…]}` or a bare list
//! of rules; an object may carry a `"//"` key with a comment, and a list entry that is an object
//! with only `"//"` is a comment. Any other malformed content is an error naming the file and the
//! rule — a broken policy file is never half-applied.
//!
//! The baseline denies disk-wrecking and power programs (`mkfs*`, `dd`, `fdisk*`, `sfdisk*`,
//! `parted*`, `wipefs*`, `mkswap*`, `blkdiscard*`, `shutdown*`, `reboot*`, `halt*`, `poweroff*`,
//! `init 0`, `init 6`), `rm -rf /` spellings (and, read from the command by
//! [`super::recursive_delete`], any recursive `rm` of the root, a system directory or home), writes to block devices, reading `/etc/shadow`, and
//! every form of remote-script execution (see [`super::remote_exec`]). It asks before reading
//! SSH private keys, and at levels 3–4 (on the host) before writing the files a session runs at
//! the next login or shell start (autostart entries, systemd units, shell rc files; see
//! [`super::detach::PERSISTENCE_PATHS`]).

use super::detach::{PERSISTENCE_PATHS, SYSTEM_PERSISTENCE_PATHS};
use super::rule::{Action, Effect, Rule, RuleError, Source};
use sayri_protocol::SandboxLevel;

/// Programs denied with any arguments (rule `<p>` and `<p> *`).
const DENIED_PROGRAMS: &[&str] = &["dd"];
/// Prefix patterns denied as written.
const DENIED_SHELL: &[&str] = &[
    // Sayri's own management from inside a command: a model must not answer its own permission
    // cards, change its settings or policies, read or change secrets, or stop the daemon.
    // (A speed bump, not a boundary: a level-3 command runs as the user and could reach the
    // socket by other means; levels 1–2 cannot reach any Unix socket at all.)
    "sayri permissions answer*",
    "sayri permissions forget*",
    "sayri config set*",
    "sayri vault*",
    "sayri quit*",
    "sayri daemon*",
    "sayri sandbox*",
    "mkfs*",
    "fdisk*",
    "sfdisk*",
    "cfdisk*",
    "parted*",
    "wipefs*",
    "mkswap*",
    "blkdiscard*",
    "shutdown*",
    "reboot*",
    "halt*",
    "poweroff*",
    "init 0",
    "init 6",
    "telinit 0",
    "telinit 6",
    "systemctl poweroff*",
    "systemctl reboot*",
    "systemctl halt*",
    "rm -rf /",
    "rm -fr /",
    "rm -r -f /",
    "rm -f -r /",
    "rm -Rf /",
    "rm -fR /",
    "rm -rf ~",
    "rm -fr ~",
    "rm -rf ~/",
    "rm -rf $HOME",
    "rm -rf /home",
    "* --no-preserve-root*",
];
const DENIED_WRITES: &[&str] = &[
    "*/.config/sayri/*",
    "/dev/sd*",
    "/dev/hd*",
    "/dev/vd*",
    "/dev/xvd*",
    "/dev/nvme*",
    "/dev/mmcblk*",
    "/dev/mapper/*",
    "/dev/disk/*",
    "/dev/dm-*",
    "/dev/md*",
    "/dev/loop*",
    "/dev/mem",
    "/dev/kmem",
    "/dev/port",
];
const DENIED_READS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
];
const ASKED_READS: &[&str] = &["*.ssh/id_*"];

/// The resource shown for baseline remote-script-execution denials.
pub const REMOTE_EXEC_RULE: &str = "<download> | <shell or interpreter>";

/// A loaded policy layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySet {
    rules: Vec<Rule>,
    /// Baseline rules that apply only on the host (levels 3–4).
    host_rules: Vec<Rule>,
}

/// A policy file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Not JSON, or not an object/list.
    #[error(
        "policy file {path} is not valid: {problem}. Fix the file (format: {{\"policies\": [{{\"action\",\"resource\",\"effect\"}}…]}} or a bare list) or remove it"
    )]
    Format {
        /// File path.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// One rule is malformed.
    #[error(transparent)]
    Rule(#[from] RuleError),
}

impl PolicySet {
    /// The compiled-in baseline only.
    pub fn baseline() -> Self {
        let mut rules = Vec::new();
        let mut add = |action: Action, resource: &str, effect: Effect| {
            let index = rules.len();
            rules.push(Rule::new(action, resource, effect, Source::Baseline, index));
        };
        for p in DENIED_PROGRAMS {
            add(Action::Shell, p, Effect::Deny);
            add(Action::Shell, &format!("{p} *"), Effect::Deny);
        }
        for p in DENIED_SHELL {
            add(Action::Shell, p, Effect::Deny);
        }
        for p in DENIED_WRITES {
            add(Action::Write, p, Effect::Deny);
        }
        for p in ASKED_READS {
            add(Action::Read, p, Effect::Ask);
        }
        for p in DENIED_READS {
            add(Action::Read, p, Effect::Deny);
        }
        let mut host_rules = Vec::new();
        let patterns = PERSISTENCE_PATHS
            .iter()
            .flat_map(|p| [format!("*/{p}"), p.to_string()])
            .chain(SYSTEM_PERSISTENCE_PATHS.iter().map(|p| p.to_string()));
        for (index, p) in patterns.enumerate() {
            host_rules.push(Rule::new(
                Action::Write,
                &p,
                Effect::Ask,
                Source::Baseline,
                index,
            ));
        }
        PolicySet { rules, host_rules }
    }

    /// The baseline plus the given policy files, in order (later files win ties).
    ///
    /// # Errors
    /// [`PolicyError`] for the first file that is malformed.
    pub fn load<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, PolicyError> {
        let mut set = PolicySet::baseline();
        for (path, text) in files {
            set.rules.extend(parse_policy_file(path, text)?);
        }
        Ok(set)
    }

    /// Every rule, baseline first (without the host-only rules; see [`PolicySet::rules_at`]).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rules that apply at `level`, in evaluation order: at levels 3–4 the host-only
    /// baseline rules first, then every other rule.
    pub fn rules_at(&self, level: SandboxLevel) -> impl DoubleEndedIterator<Item = &Rule> {
        let host = matches!(level, SandboxLevel::HostUser | SandboxLevel::HostRoot);
        let host_rules: &[Rule] = if host { &self.host_rules } else { &[] };
        host_rules.iter().chain(self.rules.iter())
    }

    /// The pseudo-rule naming the baseline's remote-script-execution check.
    pub fn remote_exec_rule() -> Rule {
        Rule::new(
            Action::Shell,
            REMOTE_EXEC_RULE,
            Effect::Deny,
            Source::Baseline,
            0,
        )
    }
}

impl Default for PolicySet {
    fn default() -> Self {
        PolicySet::baseline()
    }
}

/// Parses the text of one policy file (`path` is only used to name the source).
///
/// # Errors
/// [`PolicyError`] naming the file, and the rule index for a malformed rule.
pub fn parse_policy_file(path: &str, text: &str) -> Result<Vec<Rule>, PolicyError> {
    let format = |problem: String| PolicyError::Format {
        path: path.to_string(),
        problem,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format(format!("not JSON ({e})")))?;
    let list = match &value {
        serde_json::Value::Array(items) => items.clone(),
        serde_json::Value::Object(map) => {
            for key in map.keys() {
                if key != "policies" && key != "//" {
                    return Err(format(format!(
                        "unknown key {key:?} (expected \"policies\")"
                    )));
                }
            }
            match map.get("policies") {
                Some(serde_json::Value::Array(items)) => items.clone(),
                Some(_) => return Err(format("\"policies\" must be a list".into())),
                None => Vec::new(),
            }
        }
        _ => return Err(format("expected an object or a list".into())),
    };
    let source = Source::PolicyFile(path.to_string());
    let mut rules = Vec::new();
    for (i, item) in list.iter().enumerate() {
        if let Some(obj) = item.as_object()
            && obj.len() == 1
            && obj.contains_key("//")
        {
            continue;
        }
        rules.push(Rule::from_json(item, source.clone(), i)?);
    }
    Ok(rules)
}
