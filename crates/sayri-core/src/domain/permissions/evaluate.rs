//! The evaluation: one decision for one proposed action.
//!
//! # Order
//! 1. **Subjects.** A `shell` resource is analysed ([`super::shell`]): every simple command, and
//!    every layer of it under wrappers, becomes a subject matched as its words joined by one space
//!    (leading `NAME=value` removed; `/usr/bin/rm` is also seen as `rm`). Its `read`/`write`/`web`
//!    targets ([`super::targets`]) are subjects too. Other actions are one subject: the resource.
//! 2. **Agent layer** per subject: the agent's `blocked_binaries` (as deny rules for the program
//!    with any arguments), then its `permission_rules` — the **last** matching rule wins. An
//!    agent with a creator has one such layer per creator before its own; the strictest of the
//!    layers' verdicts wins, so its own rules only tighten what its creators allow. Deny
//!    and ask rules match the base name and the written path of a command word; allow rules match
//!    the base name only for programs in the system directories (`/bin`, `/usr/bin`, `/sbin`,
//!    `/usr/sbin`, `/usr/local/bin`, `/usr/local/sbin`), otherwise the written path, so
//!    `./ls` is not allowed by `ls *`.
//! 3. **Saved approvals** (agent-scoped "Allow always") turn an `ask` of step 2 into `allow`;
//!    they never lift a deny.
//! 4. **Default** when no agent rule matched: `deny` at level 0, else `allow` unless the agent
//!    sets another default (e.g. `ask`). Targets without a matching rule add nothing.
//! 5. **Policy layer** ([`super::policy`]), last match wins, tighten-only: `deny` denies, `ask`
//!    raises to at least ask, `allow` lifts only a rule-less default deny. Remote-script execution
//!    is a baseline deny.
//! 6. **Analysis floors**: what cannot be analysed (parse errors, `eval`/`bash -c` of computed
//!    text, computed command words, `source`, heredoc-fed interpreters, `bash -i`), dangerous
//!    assignments ([`super::assignments`]) and non-ASCII command words are at least `ask`.
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
use super::pattern::resolve_absolute;
use super::policy::PolicySet;
use super::recursive_delete;
use super::remote_exec;
use super::rule::{Action, Effect, Rule, RuleError, Source, rules_from_raw};
use super::shell::{self, Word, base_name};
use super::targets;
use crate::domain::profile::AgentProfile;
use crate::ports::Approval;
use sayri_protocol::SandboxLevel;
use serde::Serialize;

/// Shell reserved words and grouping tokens; as a program name they mean the text is not what it
/// seems (bash would refuse it or run something else).
const RESERVED: &[&str] = &[
    "{", "}", "(", ")", "!", "[[", "]]", "if", "then", "else", "elif", "fi", "case", "esac", "for",
    "select", "while", "until", "do", "done", "in", "function",
];

const SYSTEM_DIRS: &[&str] = &[
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
    /// Effect when no agent rule matches at levels 1–4; `None` = allow.
    pub default_effect: Option<Effect>,
    rules: Vec<Rule>,
    /// The rule layers inherited from the agent's creators, outermost first.
    creator_layers: Vec<Vec<Rule>>,
}

/// What the agent layer says about one subject.
enum Verdict<'a> {
    /// This rule decides.
    Rule(&'a Rule),
    /// No rule decides: the default applies.
    Default,
    /// No layer says anything.
    Silent,
}

/// One rule layer: every blocked program as deny rules (the program alone and with any
/// arguments), then the permission rules.
fn rule_layer(
    blocked: &[String],
    raw: &[crate::domain::profile::RawRule],
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
    /// Builds the agent layer from a profile.
    ///
    /// # Errors
    /// [`RuleError`] naming the first malformed `permission_rules` entry or an empty
    /// `blocked_binaries` entry.
    pub fn from_profile(profile: &AgentProfile) -> Result<Self, RuleError> {
        let rules = rule_layer(
            &profile.sandbox.blocked_binaries,
            &profile.sandbox.permission_rules,
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
                rule_layer(
                    &c.blocked_binaries,
                    &c.permission_rules,
                    source(true),
                    source(false),
                )
            })
            .collect::<Result<_, _>>()?;
        Ok(AgentRules {
            agent_id: profile.id.clone(),
            agent_name: profile.name.clone(),
            level: profile.sandbox.level,
            ask_before_run: profile.sandbox.ask_before_run,
            default_effect: None,
            rules,
            creator_layers,
        })
    }

    /// Sets the effect used when no agent rule matches (levels 1–4).
    pub fn with_default(mut self, effect: Effect) -> Self {
        self.default_effect = Some(effect);
        self
    }

    /// The blocked-binaries and agent rules, in evaluation order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The agent layer's verdict on `s`: in each rule layer (every creator's, then the agent's
    /// own) the last matching rule — or, in a creator's layer that has none, that creator's
    /// default for a command — and of those the strictest (the earliest layer on a tie, a rule
    /// over a default). So a later layer can add `ask` or `deny` but never turn an earlier `ask`
    /// or `deny` into `allow` (pinned by `a_child_rule_never_loosens_a_creator_rule`).
    fn verdict(&self, s: &Subject, level: SandboxLevel) -> Verdict<'_> {
        let effect = |v: &Verdict<'_>| match v {
            Verdict::Rule(r) => Some(r.effect),
            Verdict::Default => Some(self.default_for(level)),
            Verdict::Silent => None,
        };
        let mut best = Verdict::Silent;
        let creators = self.creator_layers.iter().map(|l| (l, true));
        for (layer, inherited) in creators.chain([(&self.rules, false)]) {
            let v = match layer.iter().rev().find(|r| matches(r, s)) {
                Some(r) => Verdict::Rule(r),
                None if inherited && s.primary => Verdict::Default,
                None => continue,
            };
            let stricter = match (effect(&v), effect(&best)) {
                (Some(new), Some(old)) => {
                    new > old
                        || (new == old
                            && matches!(best, Verdict::Default)
                            && matches!(v, Verdict::Rule(_)))
                }
                (Some(_), None) => true,
                (None, _) => false,
            };
            if stricter {
                best = v;
            }
        }
        best
    }

    fn default_for(&self, level: SandboxLevel) -> Effect {
        if level == SandboxLevel::NoExec {
            Effect::Deny
        } else {
            self.default_effect.unwrap_or(Effect::Allow)
        }
    }
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
    pub fn can_ask(&self) -> Result<(), String> {
        if !matches!(self.level, SandboxLevel::HostUser | SandboxLevel::HostRoot) {
            return Err(format!(
                "needs approval in the Sayri app, but {} does not ask; add an allow rule to the agent or run it at level 3",
                self.level
            ));
        }
        if !self.approver_available {
            return Err("needs approval in the Sayri app; nobody can answer on this path, so run it from the Sayri app or add an allow rule".into());
        }
        Ok(())
    }
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
        glob: false,
    })
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
/// `/etc/shadow`), and a relative path joined to every directory the command `cd`s or `pushd`s
/// to (`cd /etc && cat shadow`).
fn path_forms(value: &str, cd_dirs: &[String]) -> Vec<String> {
    let mut forms = vec![value.to_string()];
    let mut add = |f: String| {
        if !forms.contains(&f) {
            forms.push(f);
        }
    };
    if let Some(r) = resolve_absolute(value) {
        add(r);
    } else if !value.starts_with(['~', '$']) {
        for d in cd_dirs {
            if let Some(r) = resolve_absolute(&format!("{d}/{value}")) {
                add(r);
            }
        }
    }
    forms
}

/// Literal absolute directories given to `cd`/`pushd` anywhere in the analysed text.
fn cd_dirs(analysis: &shell::Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            if let [first, dir, ..] = layer.as_slice()
                && matches!(first.text.as_str(), "cd" | "pushd")
                && !dir.dynamic
                && dir.text.starts_with('/')
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

fn judge(
    s: &Subject,
    agent: &AgentRules,
    approvals: &[Rule],
    policies: &PolicySet,
    level: SandboxLevel,
) -> Option<SubjectDecision> {
    let verdict = agent.verdict(s, level);
    let (mut effect, mut rule, mut origin) = match verdict {
        Verdict::Rule(r) => (r.effect, Some(r.clone()), Origin::Rule(r.source.clone())),
        _ if s.primary => (agent.default_for(level), None, Origin::Default),
        _ => (Effect::Allow, None, Origin::Analysis),
    };
    let neutral = !matches!(verdict, Verdict::Rule(_)) && !s.primary;
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
    if let Some(p) = policies.rules().iter().rev().find(|r| matches(r, s)) {
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
    if neutral_left {
        return None;
    }
    let reason = match (&rule, &origin) {
        (Some(r), _) => format!(
            "{} matches {} ({})",
            describe_subject(s),
            rule_label(r),
            r.effect
        ),
        (None, _) => format!(
            "{} matches no rule; the default at {level} is {effect}",
            describe_subject(s)
        ),
    };
    Some(SubjectDecision {
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
    })
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
/// use sayri_core::SandboxLevel;
/// use sayri_core::domain::permissions::{Action, AgentRules, Effect, EvalContext, PolicySet, evaluate};
/// use sayri_core::domain::profile::{AgentProfile, RawRule};
///
/// let mut profile = AgentProfile::builtin_default();
/// profile.sandbox.ask_before_run = true;
/// profile.sandbox.permission_rules = vec![
///     RawRule { action: "shell".into(), resource: "*".into(), effect: "ask".into() },
///     RawRule { action: "shell".into(), resource: "git *".into(), effect: "allow".into() },
///     RawRule { action: "shell".into(), resource: "git clean*".into(), effect: "deny".into() },
/// ];
/// let agent = AgentRules::from_profile(&profile).unwrap();
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
    let analysis = shell::analyze(resource);
    let whole = Action::Shell.normalize(resource);
    let any_command = judge_commands(&analysis, judged);
    for a in &analysis.standalone_assignments {
        if let Some(risk) = assignment_risk(a) {
            let text = format!("{}={}", a.name, a.value.raw);
            judged.floor(&text, Effect::Ask, risk, None);
        }
    }
    if !any_command {
        judged.judge(&Subject::whole(Action::Shell, &whole));
    }
    judge_targets(&analysis, judged);
    judge_baseline_findings(&analysis, &whole, judged);
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
        let (all_forms, glob) = if matches!(t.action, Action::Read | Action::Write) {
            (path_forms(&value, &dirs), value.contains(['*', '?', '[']))
        } else {
            (vec![value.clone()], false)
        };
        judged.judge(&Subject {
            action: t.action,
            display: value.clone(),
            allow_forms: vec![value],
            all_forms,
            primary: false,
            glob,
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
