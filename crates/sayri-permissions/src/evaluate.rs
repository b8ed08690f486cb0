//! The evaluation: one decision for one proposed action.
//!
//! # Order
//! 0. **Length.** Shell text over [`MAX_COMMAND_BYTES`] (16 KiB) is refused unread: nobody can
//!    review it on a card.
//! 1. **Subjects.** A `shell` resource is analysed ([`super::shell`]): every simple command, and
//!    every layer of it under wrappers, becomes a subject matched as its words joined by one space
//!    (leading `NAME=value` removed; `/usr/bin/rm` is also seen as `rm`); so does every command
//!    hidden in the arguments of a program that runs them ([`super::arg_programs`]). Its
//!    `read`/`write`/`web` targets ([`super::targets`]) are subjects too. Other actions are one
//!    subject: the resource.
//! 2. **Agent layer** per subject: the agent's `blocked_binaries` (as deny rules for the program
//!    with any arguments), then its `permission_rules` — the **last** matching rule wins. An
//!    agent with a creator has one such layer per creator before its own, each with its own
//!    default (step 4); the strictest of the layers' verdicts wins, so its own rules only
//!    tighten what its creators allow. Deny
//!    and ask rules match the base name and the written path of a command word; allow rules match
//!    the base name only for programs in the system directories (`/bin`, `/usr/bin`, `/sbin`,
//!    `/usr/sbin`, `/usr/local/bin`, `/usr/local/sbin`), otherwise the written path, so
//!    `./ls` is not allowed by `ls *`.
//! 3. **Saved approvals** (agent-scoped "Allow always") turn an `ask` of step 2 into `allow`;
//!    they never lift a deny.
//! 4. **Default** when no agent rule matched: `deny` at level 0; for an `mcp` call `deny` when
//!    the default is `deny`, `allow` when it is `allow`, otherwise `ask` at every level (the
//!    tool runs outside the agent's sandbox); else the agent's `sandbox.default_effect`: `allow`, `ask`, `deny`, or `read_only` (on the host, commands of
//!    the read-only table ([`super::read_only`]) are allowed, everything else and every file
//!    write asks; in a sandbox they run). Other targets without a matching rule add nothing.
//! 5. **Policy layer** ([`super::policy`]), last match wins, tighten-only: `deny` denies, `ask`
//!    raises to at least ask, `allow` lifts only a rule-less default deny. Remote-script execution
//!    is a baseline deny; on the host ([`super::detach`]) starting what outlives the turn or
//!    runs at the next login asks, and at level 3 programs that gain root are refused.
//! 6. **Analysis floors**: what cannot be analysed (parse errors, `eval`/`bash -c` of computed
//!    text, computed command words, `source`, heredoc-fed interpreters, `bash -i`, scripts read
//!    from files or data run as a program by argument-executing programs), dangerous assignments
//!    ([`super::assignments`]), non-ASCII command words, and paths known only at run time that
//!    a deny or ask rule might name are at least `ask`.
//! 7. **Settling asks per subject**: with `ask_before_run` off, an `ask` that came from the
//!    agent's own rules or its default is allowed without asking (`ask_before_run` is the
//!    agent's own switch for its own asks). Policy and analysis asks stay asks.
//! 8. **Strictest wins** over all subjects: deny > ask > allow.
//! 9. **Who can answer**: an `ask` stands (a card is shown) only at levels 3–4 and when a person
//!    can answer; otherwise it becomes a refusal saying it "needs approval in the Sayri app".
//!
//! Every refusal names the subject, the rule and its source.

use super::approval::approval_rules;
use super::assignments::assignment_risk;
use super::detach;
use super::pattern::{clean_relative, resolve_absolute, unanchored_glob};
use super::policy::PolicySet;
use super::read_only;
use super::recursive_delete;
use super::remote_exec;
use super::rule::{Action, Effect, Rule, RuleError, Source, rules_from_raw};
use super::shell::{self, Word, base_name};
use super::targets;
use crate::approval::Approval;
use crate::profile::{DefaultEffect, ProfileRules};
use sayri_protocol::SandboxLevel;
use serde::Serialize;

/// Shell reserved words and grouping tokens; as a program name they mean the text is not what it
/// seems (bash would refuse it or run something else).
const RESERVED: &[&str] = &[
    "{", "}", "(", ")", "!", "[[", "]]", "if", "then", "else", "elif", "fi", "case", "esac", "for",
    "select", "while", "until", "do", "done", "in", "function",
];

/// Directories whose programs are known by name: an allow rule for `ls *` also allows
/// `/usr/bin/ls`, and the read-only table applies to them.
pub(super) const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// The agent layer of one agent: blocked binaries and its own rules, plus its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRules {
    /// Agent id (approvals are scoped to it).
    pub agent_id: String,
    /// Display name (shown on cards).
    pub agent_name: String,
    /// The agent's own level.
    pub level: SandboxLevel,
    /// `sandbox.ask_before_run`: whether the agent's own `ask` rules raise a card.
    pub ask_before_run: bool,
    /// `sandbox.default_effect`: what happens when no agent rule matches at levels 1–4.
    pub default_effect: DefaultEffect,
    rules: Vec<Rule>,
    /// The rule layers inherited from the agent's creators, outermost first.
    creator_layers: Vec<CreatorLayer>,
}

/// A creator's layer: its rules and its default.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CreatorLayer {
    agent_id: String,
    rules: Vec<Rule>,
    default_effect: DefaultEffect,
}

/// What one rule layer says about one subject.
struct LayerSay<'a> {
    /// The last matching rule of the layer.
    hit: Option<&'a Rule>,
    /// When no rule matched: the layer's default for the subject (`None`: it says nothing).
    default: Option<Effect>,
    /// A stricter rule after `hit` (or any, when none matched) that a run-time value of the
    /// subject could match.
    doubt: Option<&'a Rule>,
    /// The layer's default setting, and the creator it belongs to (`None`: the agent's own).
    default_effect: DefaultEffect,
    creator: Option<&'a str>,
}

impl LayerSay<'_> {
    fn effect(&self) -> Option<Effect> {
        self.hit.map(|r| r.effect).or(self.default)
    }
}

/// One rule layer: every blocked program as deny rules (the program alone and with any
/// arguments), then the permission rules.
fn rule_layer(
    blocked: &[String],
    raw: &[crate::profile::RawRule],
    blocked_source: Source,
    rule_source: Source,
) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    for (i, bin) in blocked.iter().enumerate() {
        let name = bin.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(RuleError {
                index: i,
                source_label: blocked_source.label(),
                rule: format!("{bin:?}"),
                problem: "a blocked binary must be one program name".into(),
            });
        }
        for pattern in [name.to_string(), format!("{name} *")] {
            rules.push(Rule::new(
                Action::Shell,
                &pattern,
                Effect::Deny,
                blocked_source.clone(),
                i,
            ));
        }
    }
    rules.extend(rules_from_raw(raw, &rule_source)?);
    Ok(rules)
}

impl AgentRules {
    /// Builds the agent layer from a profile (`&AgentProfile` of `sayri-core`, or any
    /// [`ProfileRules`]).
    ///
    /// # Errors
    /// [`RuleError`] naming the first malformed `permission_rules` entry or an empty
    /// `blocked_binaries` entry.
    pub fn from_profile<'a>(profile: impl Into<ProfileRules<'a>>) -> Result<Self, RuleError> {
        let profile = profile.into();
        let rules = rule_layer(
            profile.blocked_binaries,
            profile.permission_rules,
            Source::BlockedBinaries,
            Source::Agent,
        )?;
        let creator_layers = profile
            .creator_rules
            .iter()
            .map(|c| {
                let source = |blocked_binaries| Source::Creator {
                    agent_id: c.agent_id.clone(),
                    blocked_binaries,
                };
                Ok(CreatorLayer {
                    agent_id: c.agent_id.clone(),
                    rules: rule_layer(
                        &c.blocked_binaries,
                        &c.permission_rules,
                        source(true),
                        source(false),
                    )?,
                    default_effect: c.default_effect,
                })
            })
            .collect::<Result<_, RuleError>>()?;
        Ok(AgentRules {
            agent_id: profile.agent_id.to_string(),
            agent_name: profile.agent_name.to_string(),
            level: profile.level,
            ask_before_run: profile.ask_before_run,
            default_effect: profile.default_effect,
            rules,
            creator_layers,
        })
    }

    /// Sets the effect used when no agent rule matches (levels 1–4).
    pub fn with_default(mut self, effect: Effect) -> Self {
        self.default_effect = match effect {
            Effect::Allow => DefaultEffect::Allow,
            Effect::Ask => DefaultEffect::Ask,
            Effect::Deny => DefaultEffect::Deny,
        };
        self
    }

    /// The blocked-binaries and agent rules, in evaluation order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The agent layer's say on `s`: in each rule layer (every creator's, then the agent's
    /// own) the last matching rule, else that layer's default; of those the strictest (the
    /// earliest layer on a tie, a rule over a default). So a later layer can add `ask` or `deny`
    /// but never turn an earlier `ask` or `deny` into `allow` (pinned by
    /// `a_child_rule_never_loosens_a_creator_rule`). `None` when no layer says anything.
    fn layer_say(&self, s: &Subject, level: SandboxLevel) -> Option<LayerSay<'_>> {
        let creators = self
            .creator_layers
            .iter()
            .map(|c| (&c.rules, c.default_effect, Some(c.agent_id.as_str())));
        let own = (&self.rules, self.default_effect, None);
        let mut best: Option<LayerSay<'_>> = None;
        let mut doubt = None;
        for (rules, default_effect, creator) in creators.chain([own]) {
            let say = say_of(rules, default_effect, creator, s, level);
            doubt = doubt.or(say.doubt);
            let Some(effect) = say.effect() else {
                continue;
            };
            let stricter = best.as_ref().and_then(LayerSay::effect).is_none_or(|old| {
                effect > old
                    || (effect == old
                        && say.hit.is_some()
                        && best.as_ref().is_some_and(|b| b.hit.is_none()))
            });
            if stricter {
                best = Some(say);
            }
        }
        best.map(|b| LayerSay { doubt, ..b })
    }
}

/// The effect of `default_effect` for a command no rule matches; `read_only` says whether the
/// read-only table classifies it as only reading.
fn default_for(default_effect: DefaultEffect, level: SandboxLevel, read_only: bool) -> Effect {
    match (level, default_effect) {
        (SandboxLevel::NoExec, _) => Effect::Deny,
        (_, DefaultEffect::Allow) => Effect::Allow,
        (_, DefaultEffect::Ask) => Effect::Ask,
        (_, DefaultEffect::Deny) => Effect::Deny,
        (_, DefaultEffect::ReadOnly) if read_only || !on_host(level) => Effect::Allow,
        (_, DefaultEffect::ReadOnly) => Effect::Ask,
    }
}

/// The effect of `default_effect` for an MCP call no rule matches: the tool runs in its own
/// server, outside the agent's sandbox, so the agent's level does not bound it and the
/// `read_only` default (which trusts a sandbox) asks. Conversation-only agents never call.
fn mcp_default(default_effect: DefaultEffect, level: SandboxLevel) -> Effect {
    match (level, default_effect) {
        (SandboxLevel::NoExec, _) | (_, DefaultEffect::Deny) => Effect::Deny,
        (_, DefaultEffect::Allow) => Effect::Allow,
        (_, DefaultEffect::Ask | DefaultEffect::ReadOnly) => Effect::Ask,
    }
}

/// Whether a file write no rule matches asks (the `read_only` default on the host).
fn asks_before_writes(default_effect: DefaultEffect, level: SandboxLevel) -> bool {
    default_effect == DefaultEffect::ReadOnly && on_host(level)
}

/// What one rule layer (`rules` with its `default_effect`) says about `s`.
fn say_of<'a>(
    rules: &'a [Rule],
    default_effect: DefaultEffect,
    creator: Option<&'a str>,
    s: &Subject,
    level: SandboxLevel,
) -> LayerSay<'a> {
    let hit_at = rules.iter().rposition(|r| matches(r, s));
    let hit = hit_at.map(|i| &rules[i]);
    let doubt = rules[hit_at.map_or(0, |i| i + 1)..]
        .iter()
        .rev()
        .find(|r| hit.is_none_or(|h| r.effect > h.effect) && possibly_matches(r, s));
    let default = match hit {
        Some(_) => None,
        None if s.primary && s.action == Action::Mcp => Some(mcp_default(default_effect, level)),
        None if s.primary => Some(default_for(default_effect, level, s.read_only)),
        None if s.action == Action::Write
            && asks_before_writes(default_effect, level)
            && !harmless_device(&s.display) =>
        {
            Some(Effect::Ask)
        }
        None => None,
    };
    LayerSay {
        hit,
        default,
        doubt,
        default_effect,
        creator,
    }
}

/// Levels 3–4: commands run on the host, not in a sandbox.
fn on_host(level: SandboxLevel) -> bool {
    matches!(level, SandboxLevel::HostUser | SandboxLevel::HostRoot)
}

/// Devices a command may write without writing anything (`2>/dev/null`).
fn harmless_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2" | "/dev/tty"
    )
}

/// Circumstances of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalContext {
    /// Level the command would run at.
    pub level: SandboxLevel,
    /// Whether a person can answer a question now (false for gateway and routine turns).
    pub approver_available: bool,
}

impl EvalContext {
    /// Whether an `ask` can be put to a person here: only at levels 3–4 (the levels that ask)
    /// and only when an approver is available. `Err` says why not and what to do instead, to
    /// be appended to the refusal's reason. The one place this rule lives.
    ///
    /// # Errors
    /// [`CannotAsk`]: the level does not ask, or nobody can answer.
    pub fn can_ask(&self) -> Result<(), CannotAsk> {
        if !matches!(self.level, SandboxLevel::HostUser | SandboxLevel::HostRoot) {
            return Err(CannotAsk::LevelDoesNotAsk(self.level));
        }
        if !self.approver_available {
            return Err(CannotAsk::NoApprover);
        }
        Ok(())
    }
}

/// Why an `ask` cannot be put to a person; the message continues a refusal's reason
/// ("it needs approval …") and says what to do instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CannotAsk {
    /// The command would run at a level that does not ask (0–2).
    #[error(
        "needs approval in the Sayri app, but {0} does not ask; add an allow rule to the agent or run it at level 3"
    )]
    LevelDoesNotAsk(SandboxLevel),
    /// Nobody can answer on this path (a gateway or routine turn).
    #[error(
        "needs approval in the Sayri app; nobody can answer on this path, so run it from the Sayri app or add an allow rule"
    )]
    NoApprover,
}

/// Where a subject's effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A rule (agent, blocked binaries, approval, baseline or policy file).
    Rule(Source),
    /// No agent rule matched: the level's or agent's default.
    Default,
    /// Static analysis (not analysable, dangerous assignment, remote-script execution…).
    Analysis,
}

impl Origin {
    /// Whether the effect came from the agent's own layer (its rules or its default). Only such
    /// an `ask` may be settled without asking (`ask_before_run` off) or remembered by "Allow
    /// always"; policy and analysis asks are asked every time.
    pub fn is_agent_layer(&self) -> bool {
        matches!(
            self,
            Origin::Default | Origin::Rule(Source::Agent | Source::Creator { .. })
        )
    }
}

/// Command text longer than this many bytes is refused unread: nobody can review it on a card.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

/// The refusal of a command longer than [`MAX_COMMAND_BYTES`].
fn too_long(resource: &str) -> Decision {
    let preview: String = resource.chars().take(60).collect();
    let reason = format!(
        "the command is {} bytes long, more than the {} bytes (16 KiB) a person can review; it was not run and not shown for approval. Split the work into shorter commands",
        resource.len(),
        MAX_COMMAND_BYTES
    );
    Decision {
        effect: Effect::Deny,
        reason: reason.clone(),
        rule: None,
        source: "analysis".into(),
        subjects: vec![SubjectDecision {
            command: format!("{preview}…"),
            effect: Effect::Deny,
            reason,
            action: Action::Shell,
            value: None,
            rule: None,
            origin: Origin::Analysis,
        }],
        policy: false,
        no_approver: false,
    }
}

/// The decision for one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubjectDecision {
    /// What was judged: a simple command, or `write /path`, `read /path`, `web URL`.
    pub command: String,
    /// Its effect (after settling its own `ask`).
    pub effect: Effect,
    /// Why, naming the rule and its source.
    pub reason: String,
    /// The action of the subject.
    #[serde(skip)]
    pub action: Action,
    /// The normalised value rules were matched against (`None` for analysis findings).
    #[serde(skip)]
    pub value: Option<String>,
    /// The deciding rule.
    #[serde(skip)]
    pub rule: Option<Rule>,
    /// Where the effect came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// The decision for a whole action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Final effect: `allow` (run), `ask` (show a card and wait), `deny` (refuse).
    pub effect: Effect,
    /// Why, naming the subject, rule and source.
    pub reason: String,
    /// The deciding rule, if a rule decided.
    pub rule: Option<Rule>,
    /// Source of the decision: a rule source, `default` or `analysis`.
    pub source: String,
    /// Every subject judged, in the order found. On the wire (`sayri permissions check --json`,
    /// the `segments` of a `permission_request`) this list is called `segments`: each entry is
    /// one judged segment of the command line.
    #[serde(rename = "segments")]
    pub subjects: Vec<SubjectDecision>,
    /// True when the deciding `ask`/`deny` came from the policy layer ("always" cannot lift it).
    pub policy: bool,
    /// True when this is a refusal only because the deciding `ask` could not be put to a person
    /// (no approver available on this path, or a level that does not ask; see
    /// [`EvalContext::can_ask`]).
    pub no_approver: bool,
}

impl Decision {
    /// `Blocked: …`, `Needs your approval: …` or `Allowed: …`.
    pub fn message(&self) -> String {
        let prefix = match self.effect {
            Effect::Deny => "Blocked",
            Effect::Ask => "Needs your approval",
            Effect::Allow => "Allowed",
        };
        format!("{prefix}: {}", self.reason)
    }
}

/// Short label of a rule: `agent rule #2: git clean*`, `baseline: dd *`,
/// `/etc/sayri/policies.json #0: read /etc/shadow`.
pub fn rule_label(rule: &Rule) -> String {
    let what = if rule.action == Action::Shell {
        rule.resource.clone()
    } else {
        format!("{} {}", rule.action, rule.resource)
    };
    match &rule.source {
        Source::Agent => format!("agent rule #{}: {what}", rule.index),
        Source::BlockedBinaries => format!("blocked_binaries #{}: {what}", rule.index),
        Source::Approval => format!("saved approval: {what}"),
        Source::Baseline => format!("baseline: {what}"),
        Source::PolicyFile(path) => format!("{path} #{}: {what}", rule.index),
        Source::Creator {
            agent_id,
            blocked_binaries: false,
        } => format!("creator {agent_id} rule #{}: {what}", rule.index),
        Source::Creator {
            agent_id,
            blocked_binaries: true,
        } => format!(
            "creator {agent_id} blocked_binaries #{}: {what}",
            rule.index
        ),
    }
}

struct Subject {
    action: Action,
    display: String,
    allow_forms: Vec<String>,
    all_forms: Vec<String>,
    primary: bool,
    /// `all_forms` hold shell globs: deny and ask rules match when they could name the same path.
    glob: bool,
    /// Globs of the values the subject may take at run time (a path with `$X` or `~` in it, or
    /// climbing out of an unknown directory). A deny or ask rule that could match one of them
    /// makes the subject at least `ask`: its value is not known, so it is neither allowed nor
    /// refused on a guess.
    uncertain: Vec<String>,
    /// A command the read-only table classifies as only reading.
    read_only: bool,
}

impl Subject {
    /// A subject judged as one value: a non-shell resource, or shell text with no command in it.
    fn whole(action: Action, value: &str) -> Subject {
        Subject {
            action,
            display: value.to_string(),
            allow_forms: vec![value.to_string()],
            all_forms: vec![value.to_string()],
            primary: true,
            glob: false,
            uncertain: Vec::new(),
            read_only: false,
        }
    }
}

fn shell_subject(words: &[Word]) -> Option<Subject> {
    let first = words.first()?;
    let args: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
    let join = |head: &str| {
        let mut v = vec![head];
        v.extend(args.iter().copied());
        Action::Shell.normalize(&v.join(" "))
    };
    let full = join(&first.text);
    let (allow_forms, all_forms) = if first.text.contains('/') {
        let base = join(base_name(&first.text));
        let dir = first.text.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        if SYSTEM_DIRS.contains(&dir) {
            (vec![base.clone(), full.clone()], vec![base, full])
        } else {
            (vec![full.clone()], vec![base, full])
        }
    } else {
        (vec![full.clone()], vec![full])
    };
    Some(Subject {
        action: Action::Shell,
        display: allow_forms[0].clone(),
        allow_forms,
        all_forms,
        primary: true,
        // A glob in the command word (`/???/?m`) may run any program it matches.
        glob: first.glob,
        uncertain: Vec::new(),
        read_only: read_only::is_read_only(words),
    })
}

/// Whether the deny or ask `rule` could match a value `s` may take at run time.
fn possibly_matches(rule: &Rule, s: &Subject) -> bool {
    rule.effect != Effect::Allow
        && rule.applies_to(s.action)
        && s.uncertain.iter().any(|f| rule.intersects_shape(f))
}

fn matches(rule: &Rule, s: &Subject) -> bool {
    if !rule.applies_to(s.action) {
        return false;
    }
    let forms = if rule.effect == Effect::Allow {
        &s.allow_forms
    } else {
        &s.all_forms
    };
    forms.iter().any(|v| {
        rule.matches_value(v) || (s.glob && rule.effect != Effect::Allow && rule.intersects_glob(v))
    })
}

/// The forms a `read`/`write` path is judged in by deny and ask rules: as written, resolved
/// lexically (`/etc/./shadow`, `//etc/x/../shadow`, `/proc/self/root/etc/shadow` are
/// `/etc/shadow`; `a//b/../c` is `a/c`), and a relative path joined to every directory the
/// command `cd`s or `pushd`s to (`cd /etc && cat shadow`, `cd secret && cat key`).
fn path_forms(value: &str, cd_dirs: &[String]) -> Vec<String> {
    let mut forms = vec![value.to_string()];
    let mut add = |f: String| {
        if !forms.contains(&f) {
            forms.push(f);
        }
    };
    let resolve = |p: &str| resolve_absolute(p).unwrap_or_else(|| clean_relative(p));
    add(resolve(value));
    if !value.starts_with(['/', '~', '$']) {
        for d in cd_dirs {
            add(resolve(&format!("{d}/{value}")));
        }
    }
    forms
}

/// Globs of the paths a target may name at run time: its shape (run-time parts as `*`), and
/// paths under a home directory or climbing out of an unknown directory.
fn uncertain_forms(value: &str, shape: Option<&str>, cd_dirs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |f: String| {
        if !out.contains(&f) {
            out.push(f);
        }
    };
    let shape_forms = shape.map(|s| path_forms(s, cd_dirs)).unwrap_or_default();
    for form in &shape_forms {
        add(Action::Read.normalize(form));
    }
    for form in path_forms(value, cd_dirs).iter().chain(&shape_forms) {
        if let Some(g) = unanchored_glob(&Action::Read.normalize(form)) {
            add(g);
        }
    }
    out
}

/// Literal directories given to `cd`/`pushd` anywhere in the analysed text (absolute, relative
/// or under `~`).
fn cd_dirs(analysis: &shell::Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            if let [first, dir, ..] = layer.as_slice()
                && matches!(first.text.as_str(), "cd" | "pushd")
                && !dir.dynamic
                && !dir.text.is_empty()
                && !dir.text.starts_with('-')
                && !out.contains(&dir.text)
            {
                out.push(dir.text.clone());
            }
        }
    }
    out
}

fn describe_subject(s: &Subject) -> String {
    if s.action == Action::Shell {
        format!("`{}`", s.display)
    } else {
        format!("{} `{}`", s.action, s.display)
    }
}

/// The decision on one subject: the agent's layers (rule, then default), a remembered approval
/// of an ask, the system policies (deny and ask override; an allow lifts a default deny), and a
/// doubt (a run-time value that may match a stricter rule) raising it to ask. `None` when no
/// layer has a say and nothing raised it.
fn judge(
    s: &Subject,
    agent: &AgentRules,
    approvals: &[Rule],
    policies: &PolicySet,
    level: SandboxLevel,
) -> Option<SubjectDecision> {
    let say = agent.layer_say(s, level);
    // A stricter rule of a layer, or a deny or ask policy, that a run-time value of the subject
    // could match.
    let doubt = say.as_ref().and_then(|l| l.doubt).or_else(|| {
        policies
            .rules_at(level)
            .rev()
            .find(|r| possibly_matches(r, s))
    });
    let (mut effect, mut rule, mut origin) = match &say {
        Some(LayerSay { hit: Some(r), .. }) => {
            (r.effect, Some((*r).clone()), Origin::Rule(r.source.clone()))
        }
        Some(LayerSay {
            default: Some(e), ..
        }) => (*e, None, Origin::Default),
        _ => (Effect::Allow, None, Origin::Analysis),
    };
    let neutral = say.as_ref().and_then(LayerSay::effect).is_none();
    let mut neutral_left = neutral;
    if effect == Effect::Ask
        && let Some(approval) = approvals
            .iter()
            .rev()
            .find(|r| r.effect == Effect::Allow && matches(r, s))
    {
        effect = Effect::Allow;
        rule = Some(approval.clone());
        origin = Origin::Rule(Source::Approval);
    }
    if let Some(p) = policies.rules_at(level).rev().find(|r| matches(r, s)) {
        match p.effect {
            Effect::Deny => {
                effect = Effect::Deny;
                rule = Some(p.clone());
                origin = Origin::Rule(p.source.clone());
                neutral_left = false;
            }
            Effect::Ask if effect <= Effect::Ask => {
                effect = Effect::Ask;
                rule = Some(p.clone());
                origin = Origin::Rule(p.source.clone());
                neutral_left = false;
            }
            Effect::Allow if origin == Origin::Default && effect == Effect::Deny => {
                effect = Effect::Allow;
                rule = Some(p.clone());
                origin = Origin::Rule(p.source.clone());
            }
            _ => {}
        }
    }
    let mut doubt_reason = None;
    if let Some(d) = doubt
        && effect < Effect::Ask
    {
        effect = Effect::Ask;
        origin = Origin::Analysis;
        neutral_left = false;
        doubt_reason = Some(format!(
            "{} is known only at run time and may name what {} refuses or asks for ({})",
            describe_subject(s),
            rule_label(d),
            d.effect
        ));
        rule = None;
    }
    if neutral_left {
        return None;
    }
    let reason = match (&rule, &origin) {
        _ if doubt_reason.is_some() => doubt_reason.unwrap_or_default(),
        (Some(r), _) => format!(
            "{} matches {} ({})",
            describe_subject(s),
            rule_label(r),
            r.effect
        ),
        (None, _) => default_reason(s, say.as_ref(), level, effect),
    };
    Some(decision(s, effect, reason, rule, origin))
}

/// The decision on subject `s`: its command as shown (an action other than shell is named
/// first) and the form an approval of it would allow.
fn decision(
    s: &Subject,
    effect: Effect,
    reason: String,
    rule: Option<Rule>,
    origin: Origin,
) -> SubjectDecision {
    SubjectDecision {
        command: if s.action == Action::Shell {
            s.display.clone()
        } else {
            format!("{} {}", s.action, s.display)
        },
        effect,
        reason,
        action: s.action,
        value: Some(s.allow_forms[0].clone()),
        rule,
        origin,
    }
}

/// Why a subject no rule matched got the default `effect` of the layer `say` (the agent's
/// own, or a creator's).
fn default_reason(
    s: &Subject,
    say: Option<&LayerSay<'_>>,
    level: SandboxLevel,
    effect: Effect,
) -> String {
    let what = describe_subject(s);
    let whose = match say.and_then(|l| l.creator) {
        Some(id) => format!("its creator {id}"),
        None => "this agent".to_string(),
    };
    let default_effect = say.map_or(DefaultEffect::Allow, |l| l.default_effect);
    if default_effect == DefaultEffect::ReadOnly && on_host(level) {
        return match (s.action, effect) {
            (Action::Write, _) => format!(
                "{what} matches no rule; {whose} asks before writing files (sandbox.default_effect is read_only)"
            ),
            (_, Effect::Ask) => format!(
                "{what} matches no rule and is not a read-only command; {whose} asks before anything that is not read-only (sandbox.default_effect is read_only)"
            ),
            _ => format!(
                "{what} matches no rule and only reads; {whose} runs read-only commands without asking"
            ),
        };
    }
    match say.and_then(|l| l.creator) {
        Some(id) => format!(
            "{what} matches no rule; the default of its creator {id} at {level} is {effect}"
        ),
        None => format!("{what} matches no rule; the default at {level} is {effect}"),
    }
}

fn floor(command: &str, effect: Effect, reason: String, rule: Option<Rule>) -> SubjectDecision {
    SubjectDecision {
        command: command.to_string(),
        effect,
        reason,
        action: Action::Shell,
        value: None,
        origin: match &rule {
            Some(r) => Origin::Rule(r.source.clone()),
            None => Origin::Analysis,
        },
        rule,
    }
}

/// Evaluates one proposed action: every subject is judged through the agent layer, saved
/// approvals, the default, the policy layer and the analysis floors; each subject's own `ask`
/// is settled; the strictest subject decides; an `ask` nobody can answer becomes a refusal.
/// The order is spelled out in this module's documentation.
///
/// ```
/// use sayri_protocol::SandboxLevel;
/// use sayri_permissions::{Action, AgentRules, DefaultEffect, Effect, EvalContext, PolicySet, ProfileRules, RawRule, evaluate};
///
/// let rules = vec![
///     RawRule { action: "shell".into(), resource: "*".into(), effect: "ask".into() },
///     RawRule { action: "shell".into(), resource: "git *".into(), effect: "allow".into() },
///     RawRule { action: "shell".into(), resource: "git clean*".into(), effect: "deny".into() },
/// ];
/// let profile = ProfileRules {
///     agent_id: "default",
///     agent_name: "Main Sayri",
///     level: SandboxLevel::HostUser,
///     ask_before_run: true,
///     default_effect: DefaultEffect::ReadOnly,
///     blocked_binaries: &["mkfs".to_string()],
///     permission_rules: &rules,
///     creator_rules: &[],
/// };
/// let agent = AgentRules::from_profile(profile).unwrap();
/// let ctx = EvalContext { level: SandboxLevel::HostUser, approver_available: true };
/// let d = evaluate(Action::Shell, "git fetch && git clean -fd", &agent, &[], &PolicySet::baseline(), &ctx);
/// assert_eq!(d.effect, Effect::Deny);
/// assert_eq!(d.rule.unwrap().resource, "git clean*");
/// ```
///
/// `approvals` are the agent's saved approvals (see [`approval_rules`]). Never fails; malformed
/// rules are rejected earlier, when [`AgentRules`] and [`PolicySet`] are built.
pub fn evaluate(
    action: Action,
    resource: &str,
    agent: &AgentRules,
    approvals: &[Rule],
    policies: &PolicySet,
    ctx: &EvalContext,
) -> Decision {
    if matches!(action, Action::Shell | Action::Any) && resource.len() > MAX_COMMAND_BYTES {
        return too_long(resource);
    }
    let mut judged = Judgement {
        agent,
        approvals,
        policies,
        level: ctx.level,
        subjects: Vec::new(),
    };
    if action == Action::Shell || action == Action::Any {
        judge_shell(resource, &mut judged);
    } else {
        judged.judge(&Subject::whole(action, &action.normalize(resource)));
    }
    let mut subjects = judged.subjects;
    if !agent.ask_before_run {
        allow_agent_asks(&mut subjects);
    }
    conclude(subjects, ctx)
}

/// The subjects judged so far for one evaluation: one decision per distinct subject (text and
/// action), the strictest seen.
struct Judgement<'a> {
    agent: &'a AgentRules,
    approvals: &'a [Rule],
    policies: &'a PolicySet,
    level: SandboxLevel,
    subjects: Vec<SubjectDecision>,
}

impl Judgement<'_> {
    /// Records `d`. A subject judged twice keeps the stricter decision; on a tie, a decision
    /// from a policy or the analysis replaces one from the agent layer (so it cannot be settled
    /// or remembered as the agent's own ask).
    fn add(&mut self, d: SubjectDecision) {
        match self
            .subjects
            .iter_mut()
            .find(|x| x.command == d.command && x.action == d.action)
        {
            Some(existing) => {
                if d.effect > existing.effect
                    || (d.effect == existing.effect
                        && existing.origin.is_agent_layer()
                        && !d.origin.is_agent_layer())
                {
                    *existing = d;
                }
            }
            None => self.subjects.push(d),
        }
    }

    /// Judges `s` against the rules; a target no rule mentions adds nothing.
    fn judge(&mut self, s: &Subject) {
        if let Some(d) = judge(s, self.agent, self.approvals, self.policies, self.level) {
            self.add(d);
        }
    }

    /// Records an analysis finding (or a baseline finding with its `rule`) about `command`.
    fn floor(&mut self, command: &str, effect: Effect, reason: String, rule: Option<Rule>) {
        self.add(floor(command, effect, reason, rule));
    }
}

/// A shell command: every layer of every simple command, the assignments, the `read`/`write`/
/// `web` targets, and the baseline's findings about the whole text. The order of the subjects
/// is the order the refusal reason is chosen in (the first strictest wins), so it is kept:
/// commands, standalone assignments, the whole text when no command was found, targets,
/// recursive deletes, remote-script execution, what cannot be analysed.
fn judge_shell(resource: &str, judged: &mut Judgement<'_>) {
    let analysis = shell::analyse(resource);
    let whole = Action::Shell.normalize(resource);
    let any_command = judge_commands(&analysis, judged);
    for a in &analysis.standalone_assignments {
        if let Some(risk) = assignment_risk(a) {
            let text = format!("{}={}", a.name, a.value.raw);
            judged.floor(&text, Effect::Ask, risk, None);
        }
    }
    if !any_command {
        // Only assignments or comments: nothing runs.
        let mut s = Subject::whole(Action::Shell, &whole);
        s.read_only = analysis.commands.is_empty() && analysis.opaque.is_empty();
        judged.judge(&s);
    }
    judge_targets(&analysis, judged);
    judge_baseline_findings(&analysis, &whole, judged);
    judge_host_findings(&analysis, &whole, judged);
}

/// The baseline's findings that depend on the level: at level 3 programs that gain root are
/// refused (`no_new_privs` makes them fail; level 4 is the level for root); at levels 3–4
/// starting a process that outlives the turn asks.
fn judge_host_findings(analysis: &shell::Analysis, whole: &str, judged: &mut Judgement<'_>) {
    if judged.level == SandboxLevel::HostUser {
        for name in detach::root_at_level_3(analysis) {
            let rule = Rule::new(
                Action::Shell,
                detach::ROOT_RULE,
                Effect::Deny,
                Source::Baseline,
                0,
            );
            judged.floor(
                &name,
                Effect::Deny,
                format!(
                    "`{name}` cannot gain root at level 3: commands run as the user with no_new_privs. Run it at level 4 ({}), where Sayri asks for root through a Polkit dialog, or do it without root (baseline)",
                    SandboxLevel::HostRoot
                ),
                Some(rule),
            );
        }
    }
    if on_host(judged.level) {
        for d in detach::findings(analysis) {
            let rule = Rule::new(
                Action::Shell,
                detach::RULE,
                Effect::Ask,
                Source::Baseline,
                0,
            );
            judged.floor(
                whole,
                Effect::Ask,
                format!(
                    "{d} (baseline: Sayri asks before starting anything that outlives the turn)"
                ),
                Some(rule),
            );
        }
    }
}

/// Judges each layer of each simple command (plus the doubts about its command word) and the
/// command's dangerous assignments. Returns whether any command was found.
fn judge_commands(analysis: &shell::Analysis, judged: &mut Judgement<'_>) -> bool {
    let mut any = false;
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            let Some(subject) = shell_subject(layer) else {
                continue;
            };
            any = true;
            judged.judge(&subject);
            if let Some(doubt) = command_word_doubt(&layer[0]) {
                judged.floor(&subject.display, Effect::Ask, doubt, None);
            }
        }
        for a in cmd
            .assignments
            .iter()
            .chain(cmd.unwrapped.assignments.iter())
        {
            if let Some(risk) = assignment_risk(a) {
                judged.floor(&cmd.text, Effect::Ask, risk, None);
            }
        }
    }
    any
}

/// Why a command word cannot be trusted to name the program that runs: a shell keyword where a
/// program belongs, a word computed at run time, or non-ASCII look-alike characters.
fn command_word_doubt(first: &Word) -> Option<String> {
    if RESERVED.contains(&first.raw.as_str()) {
        Some(format!(
            "cannot be analysed: the shell keyword `{}` stands where a program name belongs",
            first.raw
        ))
    } else if first.dynamic {
        Some(format!(
            "cannot be analysed: the command word `{}` is computed at run time",
            first.raw
        ))
    } else if !first.text.is_ascii() {
        Some(format!(
            "the command word `{}` contains non-ASCII characters that can imitate another program",
            first.text
        ))
    } else {
        None
    }
}

/// The files read or written and the URLs fetched, each judged as its own subject. Paths are
/// also judged resolved and joined to the directories the command changes to.
fn judge_targets(analysis: &shell::Analysis, judged: &mut Judgement<'_>) {
    let dirs = cd_dirs(analysis);
    for t in targets::targets(analysis) {
        let value = t.action.normalize(&t.value);
        let (all_forms, glob, uncertain) = if matches!(t.action, Action::Read | Action::Write) {
            (
                path_forms(&value, &dirs),
                value.contains(['*', '?', '[']),
                uncertain_forms(&value, t.shape.as_deref(), &dirs),
            )
        } else {
            (vec![value.clone()], false, Vec::new())
        };
        judged.judge(&Subject {
            action: t.action,
            display: value.clone(),
            allow_forms: vec![value],
            all_forms,
            primary: false,
            glob,
            uncertain,
            read_only: false,
        });
    }
}

/// The baseline's findings about the whole text: recursive deletes of the root, a system
/// directory or home and remote-script execution are denied; what cannot be analysed asks.
fn judge_baseline_findings(analysis: &shell::Analysis, whole: &str, judged: &mut Judgement<'_>) {
    for d in recursive_delete::findings(analysis) {
        let rule = Rule::new(
            Action::Shell,
            recursive_delete::RULE,
            Effect::Deny,
            Source::Baseline,
            0,
        );
        judged.floor(
            whole,
            Effect::Deny,
            format!(
                "{d} (baseline: a recursive delete of the root, a system directory or home is never allowed)"
            ),
            Some(rule),
        );
    }
    let found = remote_exec::findings(analysis);
    for d in found.denied {
        judged.floor(
            whole,
            Effect::Deny,
            format!("{d} (baseline: remote-script execution is never allowed)"),
            Some(PolicySet::remote_exec_rule()),
        );
    }
    for reason in analysis.opaque.iter().chain(found.opaque.iter()) {
        judged.floor(
            whole,
            Effect::Ask,
            format!("cannot be analysed: {reason}"),
            None,
        );
    }
}

/// With `ask_before_run` off, an `ask` from the agent's own rules or default is allowed without
/// asking. Policy and analysis asks stay asks.
fn allow_agent_asks(subjects: &mut [SubjectDecision]) {
    for d in subjects {
        if d.effect == Effect::Ask && d.origin.is_agent_layer() {
            d.effect = Effect::Allow;
            d.reason
                .push_str("; allowed without asking (ask_before_run is off)");
        }
    }
}

/// The strictest subject (the first one on a tie) decides; an `ask` that cannot be put to a
/// person becomes a refusal that says why. Nothing judged is a refusal.
fn conclude(subjects: Vec<SubjectDecision>, ctx: &EvalContext) -> Decision {
    let top = subjects
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.effect, std::cmp::Reverse(*i)))
        .map(|(_, s)| s.clone());
    let Some(top) = top else {
        return Decision {
            effect: Effect::Deny,
            reason: "nothing to evaluate (empty command); nothing was run".into(),
            rule: None,
            source: "analysis".into(),
            subjects,
            policy: false,
            no_approver: false,
        };
    };
    let policy = top.rule.as_ref().is_some_and(|r| r.source.is_policy());
    let source = match &top.origin {
        Origin::Rule(s) => s.label(),
        Origin::Default => "default".into(),
        Origin::Analysis => "analysis".into(),
    };
    let (effect, reason, no_approver) = match (top.effect, ctx.can_ask()) {
        (Effect::Ask, Err(why)) => (Effect::Deny, format!("{} — {why}", top.reason), true),
        (effect, _) => (effect, top.reason, false),
    };
    Decision {
        effect,
        reason,
        rule: top.rule,
        source,
        subjects,
        policy,
        no_approver,
    }
}

/// Convenience: evaluates with the saved approvals of the agent taken from `approvals`.
pub fn evaluate_with_approvals(
    action: Action,
    resource: &str,
    agent: &AgentRules,
    approvals: &[Approval],
    policies: &PolicySet,
    ctx: &EvalContext,
) -> Decision {
    let rules = approval_rules(approvals, &agent.agent_id);
    evaluate(action, resource, agent, &rules, policies, ctx)
}
