//! Non-escalation: an agent's effective profile never exceeds its creator's on any dimension
//! (level, permission decisions, ask switch, network, timeout, workspace, blocked programs,
//! secrets, skills, plugins, tools), along whole creator chains, and tightening a creator
//! tightens its children at once.

use proptest::prelude::*;
use sayri_core::SandboxLevel;
use sayri_core::domain::agents::allow::{is_subset, permits};
use sayri_core::domain::agents::{ChainError, effective_profile, narrowings, resolve};
use sayri_core::domain::profile::{AgentProfile, secret_key};
use sayri_permissions::{Action, AgentRules, Decision, Effect, EvalContext, PolicySet, evaluate};
use sayri_permissions::{DefaultEffect, RawRule};

fn rule(resource: &str, effect: &str) -> RawRule {
    RawRule {
        action: "shell".into(),
        resource: resource.into(),
        effect: effect.into(),
    }
}

fn agent(id: &str, parent: Option<&str>, level: SandboxLevel) -> AgentProfile {
    let mut p = AgentProfile::builtin_default();
    p.id = id.into();
    p.name = id.into();
    p.parent = parent.map(String::from);
    p.sandbox.level = level;
    p.sandbox.blocked_binaries.clear();
    p
}

fn decide(p: &AgentProfile, command: &str) -> Decision {
    let rules = AgentRules::from_profile(p).unwrap();
    let ctx = EvalContext {
        level: p.sandbox.level,
        approver_available: true,
    };
    evaluate(
        Action::Shell,
        command,
        &rules,
        &[],
        &PolicySet::baseline(),
        &ctx,
    )
}

#[test]
fn a_child_rule_never_loosens_a_creator_rule() {
    let mut builder = agent("builder", None, SandboxLevel::HostUser);
    builder.sandbox.ask_before_run = true;
    builder.sandbox.permission_rules = vec![rule("*", "ask"), rule("rm *", "deny")];
    let mut child = agent("helper", Some("builder"), SandboxLevel::HostRoot);
    child.sandbox.permission_rules = vec![rule("*", "allow"), rule("rm *", "allow")];
    let e = effective_profile(&child, std::slice::from_ref(&builder));

    let d = decide(&e, "git push origin main");
    assert_eq!(d.effect, Effect::Ask, "{}", d.reason);
    assert!(d.reason.contains("creator builder rule #0"), "{}", d.reason);
    let d = decide(&e, "rm -rf build");
    assert_eq!(d.effect, Effect::Deny, "{}", d.reason);
    assert!(d.reason.contains("creator builder rule #1"), "{}", d.reason);

    // A child may tighten what its creator allows.
    builder.sandbox.permission_rules = vec![rule("*", "allow")];
    child.sandbox.permission_rules = vec![rule("curl *", "deny"), rule("git push*", "ask")];
    let e = effective_profile(&child, &[builder]);
    assert_eq!(decide(&e, "ls").effect, Effect::Allow);
    assert_eq!(decide(&e, "curl http://x").effect, Effect::Deny);
    assert_eq!(decide(&e, "git push").effect, Effect::Ask);
}

#[test]
fn a_creators_default_binds_its_child() {
    // The built-in `default` agent asks before anything that is not read-only; a child it
    // created with a permissive default of its own still asks.
    let mut boss = agent("default", None, SandboxLevel::HostUser);
    boss.sandbox.default_effect = DefaultEffect::ReadOnly;
    boss.sandbox.ask_before_run = true;
    let mut kid = agent("kid", Some("default"), SandboxLevel::HostUser);
    kid.sandbox.default_effect = DefaultEffect::Allow;
    let e = effective_profile(&kid, &[boss]);
    assert_eq!(e.sandbox.default_effect, DefaultEffect::ReadOnly);
    let d = decide(&e, "touch notes.txt");
    assert_eq!(d.effect, Effect::Ask, "{}", d.reason);
    assert!(d.reason.contains("its creator default"), "{}", d.reason);
    assert_eq!(decide(&e, "ls -la").effect, Effect::Allow);
}

#[test]
fn a_same_level_child_asks_what_its_creator_must_ask() {
    // The original's bug: a level-3 child of an asking level-3 creator got no rules and
    // `ask_before_run: false`, so it could do silently what its creator had to ask for.
    let mut builder = agent("builder", None, SandboxLevel::HostUser);
    builder.sandbox.ask_before_run = true;
    builder.sandbox.permission_rules = vec![rule("*", "ask")];
    let child = agent("quiet", Some("builder"), SandboxLevel::HostUser);
    let e = effective_profile(&child, &[builder]);
    assert!(e.sandbox.ask_before_run);
    assert_eq!(decide(&e, "touch /tmp/x").effect, Effect::Ask);
}

#[test]
fn the_cap_is_the_minimum_along_the_whole_chain_and_creators_are_named() {
    let root = agent("default", None, SandboxLevel::HostUser);
    let mid = agent("builder", Some("default"), SandboxLevel::IsolatedDev);
    let leaf = agent("leaf", Some("builder"), SandboxLevel::HostRoot);
    let e = effective_profile(&leaf, &[mid.clone(), root.clone()]);
    assert_eq!(e.sandbox.level, SandboxLevel::IsolatedDev);
    let ids: Vec<&str> = e
        .creator_rules
        .iter()
        .map(|c| c.agent_id.as_str())
        .collect();
    assert_eq!(ids, ["default", "builder"]);
    let n = narrowings(&leaf, &e);
    assert!(
        n.iter().any(|n| n.field == "sandbox.level"
            && n.written == "LEVEL_4_HOST_ROOT"
            && n.effective == "LEVEL_2_ISOLATED_DEV"),
        "{n:?}"
    );
}

#[test]
fn resolve_walks_the_creators_and_fails_closed() {
    let agents = [
        agent("default", None, SandboxLevel::HostUser),
        agent("a", Some("b"), SandboxLevel::HostUser),
        agent("b", Some("a"), SandboxLevel::HostUser),
        agent("orphan", Some("gone"), SandboxLevel::HostUser),
        agent("ok", Some("default"), SandboxLevel::HostRoot),
    ];
    let lookup = |id: &str| -> Result<Option<AgentProfile>, String> {
        if id == "broken" {
            return Err("broken.json: field `sandbox.level`: unknown".into());
        }
        Ok(agents.iter().find(|a| a.id == id).cloned())
    };
    assert!(matches!(resolve("a", lookup), Err(ChainError::Loop { .. })));
    let e = resolve("orphan", lookup).unwrap_err().to_string();
    assert!(
        e.contains("creator gone does not exist") && e.contains("detach"),
        "{e}"
    );
    assert_eq!(
        resolve("ok", lookup).unwrap().unwrap().sandbox.level,
        SandboxLevel::HostUser
    );
    assert_eq!(resolve("nobody", lookup).unwrap(), None);
    let mut child_of_broken = agent("c", Some("broken"), SandboxLevel::HostUser);
    child_of_broken.parent = Some("broken".into());
    let e = sayri_core::domain::agents::creators_of(&child_of_broken, lookup)
        .unwrap_err()
        .to_string();
    assert!(e.contains("broken.json"), "{e}");
}

#[test]
fn a_sandboxed_creators_child_cannot_choose_a_workspace_outside_the_creators() {
    let mut creator = agent("boxed", None, SandboxLevel::IsolatedDev);
    creator.sandbox.isolated_dir = Some("/home/u/work".into());
    let mut child = agent("kid", Some("boxed"), SandboxLevel::IsolatedDev);
    child.sandbox.isolated_dir = Some("/home/u".into());
    let e = effective_profile(&child, std::slice::from_ref(&creator));
    assert_eq!(e.sandbox.isolated_dir, None);
    child.sandbox.isolated_dir = Some("/home/u/work/../../u".into());
    assert_eq!(
        effective_profile(&child, std::slice::from_ref(&creator))
            .sandbox
            .isolated_dir,
        None
    );
    child.sandbox.isolated_dir = Some("/home/u/work/kid".into());
    assert_eq!(
        effective_profile(&child, &[creator]).sandbox.isolated_dir,
        Some("/home/u/work/kid".into())
    );
}

#[test]
fn a_child_without_a_model_of_its_own_uses_its_creators_endpoint_and_key() {
    let mut creator = agent("local", None, SandboxLevel::HostUser);
    creator.model.base_url = Some("http://127.0.0.1:11434/v1".into());
    creator.model.api_key_secret = Some("OLLAMA_KEY".into());
    creator.model.model_name = "qwen".into();
    let child = agent("kid", Some("local"), SandboxLevel::HostUser);
    let e = effective_profile(&child, &[creator]);
    assert_eq!(
        e.model.base_url.as_deref(),
        Some("http://127.0.0.1:11434/v1")
    );
    assert_eq!(e.model.api_key_secret.as_deref(), Some("OLLAMA_KEY"));
    assert_eq!(e.model.model_name, "qwen");
}

// ---------------------------------------------------------------------------------------------
// Properties

const SECRETS: &[&str] = &["GITHUB_TOKEN", "api key", "MAIL_PASS"];
const TOOLS: &[&str] = &["bash", "search_history", "web"];
const BINS: &[&str] = &["curl", "rm", "git", "mkfs"];
const PATTERNS: &[&str] = &["*", "git *", "git push*", "rm *", "ls*", "curl *", "echo *"];
const COMMANDS: &[&str] = &[
    "git status",
    "git push origin main",
    "rm -rf build",
    "ls -la",
    "curl http://example.com",
    "echo hi",
    "touch notes.txt",
    "ls && rm x",
];

fn level() -> impl Strategy<Value = SandboxLevel> {
    (0usize..5).prop_map(|i| SandboxLevel::ALL[i])
}

fn subset(pool: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(prop::sample::select(pool), 0..=pool.len()).prop_map(|mut v| {
        v.sort();
        v.dedup();
        v.into_iter().map(String::from).collect()
    })
}

/// An allow-list: everything (`[]`), nothing (`["none"]`), or some names.
fn allow_list(pool: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        Just(Vec::new()),
        Just(vec!["none".to_string()]),
        subset(pool).prop_filter("some names", |v| !v.is_empty()),
    ]
}

fn rules() -> impl Strategy<Value = Vec<RawRule>> {
    let one = (
        prop::sample::select(PATTERNS),
        prop::sample::select(&["allow", "ask", "deny"][..]),
    )
        .prop_map(|(p, e)| rule(p, e));
    prop::collection::vec(one, 0..5)
}

fn default_effect() -> impl Strategy<Value = DefaultEffect> {
    prop::sample::select(vec![
        DefaultEffect::Allow,
        DefaultEffect::ReadOnly,
        DefaultEffect::Ask,
        DefaultEffect::Deny,
    ])
}

fn profile(id: &'static str) -> impl Strategy<Value = AgentProfile> {
    (
        (
            level(),
            any::<bool>(),
            any::<bool>(),
            1u64..60,
            default_effect(),
        ),
        (
            subset(SECRETS),
            allow_list(TOOLS),
            allow_list(TOOLS),
            allow_list(TOOLS),
        ),
        (
            subset(BINS),
            rules(),
            prop::option::of(Just("/w/ws".to_string())),
        ),
    )
        .prop_map(
            move |(
                (lvl, ask, net, timeout, dflt),
                (secrets, tools, skills, plugins),
                (bins, r, dir),
            )| {
                let mut p = agent(id, None, lvl);
                p.sandbox.default_effect = dflt;
                p.sandbox.ask_before_run = ask;
                p.sandbox.allow_network = net;
                p.sandbox.timeout_seconds = timeout;
                p.sandbox.isolated_dir = dir;
                p.sandbox.blocked_binaries = bins;
                p.sandbox.permission_rules = r;
                p.allowed_secrets = secrets;
                p.allowed_tools = tools;
                p.allowed_skills = skills;
                p.allowed_plugins = plugins;
                p
            },
        )
}

/// Every way `child` could be more privileged than `creator` (both effective).
fn escalations(child: &AgentProfile, creator: &AgentProfile) -> Vec<String> {
    let mut out = Vec::new();
    let (c, p) = (&child.sandbox, &creator.sandbox);
    if c.level > p.level {
        out.push(format!("level {} > {}", c.level, p.level));
    }
    if p.ask_before_run && !c.ask_before_run {
        out.push("ask_before_run off".into());
    }
    if c.allow_network && !p.allow_network {
        out.push("network on".into());
    }
    if c.timeout_seconds > p.timeout_seconds {
        out.push("longer timeout".into());
    }
    if let Some(b) = p
        .blocked_binaries
        .iter()
        .find(|b| !c.blocked_binaries.contains(b))
    {
        out.push(format!("{b} not blocked"));
    }
    if let Some(s) = child.allowed_secrets.iter().find(|s| {
        !creator
            .allowed_secrets
            .iter()
            .any(|x| secret_key(x) == secret_key(s))
    }) {
        out.push(format!("secret {s}"));
    }
    for (name, mine, theirs) in [
        ("tools", &child.allowed_tools, &creator.allowed_tools),
        ("skills", &child.allowed_skills, &creator.allowed_skills),
        ("plugins", &child.allowed_plugins, &creator.allowed_plugins),
    ] {
        if !is_subset(mine, theirs) {
            out.push(format!("{name} {mine:?} ⊄ {theirs:?}"));
        }
        for t in TOOLS {
            if permits(mine, t) && !permits(theirs, t) {
                out.push(format!("{name}: {t}"));
            }
        }
    }
    if c.level <= SandboxLevel::IsolatedDev
        && let Some(d) = &c.isolated_dir
        && p.level <= SandboxLevel::IsolatedDev
        && p.isolated_dir.as_deref() != Some(d.as_str())
    {
        out.push(format!("workspace {d}"));
    }
    if c.default_effect < p.default_effect {
        out.push(format!(
            "default {:?} < {:?}",
            c.default_effect, p.default_effect
        ));
    }
    // Decisions compare at one level: at a lower level the same command is more confined
    // (a level-2 child runs in a sandbox what its level-3 creator would ask about on the host).
    let same_level = c.level == p.level;
    for cmd in COMMANDS.iter().filter(|_| same_level) {
        let (dc, dp) = (decide(child, cmd), decide(creator, cmd));
        if dc.effect < dp.effect {
            out.push(format!(
                "`{cmd}`: child {} ({}) but creator {} ({})",
                dc.effect, dc.reason, dp.effect, dp.reason
            ));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A child, and a grandchild, are never more privileged than their creators.
    #[test]
    fn an_effective_child_never_exceeds_its_creator(
        root in profile("root"),
        child in profile("child"),
        grandchild in profile("grandchild"),
    ) {
        let mut child = child;
        child.parent = Some("root".into());
        let mut grandchild = grandchild;
        grandchild.parent = Some("child".into());
        let root_e = effective_profile(&root, &[]);
        let child_e = effective_profile(&child, std::slice::from_ref(&root));
        let grand_e = effective_profile(&grandchild, &[child.clone(), root.clone()]);
        let e = escalations(&child_e, &root_e);
        prop_assert!(e.is_empty(), "child over root: {e:?}");
        let e = escalations(&grand_e, &child_e);
        prop_assert!(e.is_empty(), "grandchild over child: {e:?}");
        let e = escalations(&grand_e, &root_e);
        prop_assert!(e.is_empty(), "grandchild over root: {e:?}");
    }

    /// Tightening the creator (lower level, ask on, network off, a secret and a tool taken away,
    /// a deny rule and a blocked program added) tightens its existing children.
    #[test]
    fn tightening_the_creator_tightens_the_child(
        root in profile("root"),
        child in profile("child"),
        grandchild in profile("grandchild"),
        deny in prop::sample::select(PATTERNS),
        bin in prop::sample::select(BINS),
    ) {
        let mut child = child;
        child.parent = Some("root".into());
        let mut grandchild = grandchild;
        grandchild.parent = Some("child".into());
        let mut tight = root.clone();
        tight.sandbox.level = SandboxLevel::ALL[root.sandbox.level.number().saturating_sub(1) as usize];
        tight.sandbox.ask_before_run = true;
        tight.sandbox.allow_network = false;
        tight.allowed_secrets.pop();
        tight.allowed_tools = match tight.allowed_tools.len() {
            0 => vec!["bash".into()],
            _ => vec!["none".into()],
        };
        tight.sandbox.permission_rules.push(rule(deny, "deny"));
        tight.sandbox.blocked_binaries.push(bin.to_string());
        for (before, after, what) in [
            (
                effective_profile(&child, std::slice::from_ref(&root)),
                effective_profile(&child, std::slice::from_ref(&tight)),
                "child",
            ),
            (
                effective_profile(&grandchild, &[child.clone(), root.clone()]),
                effective_profile(&grandchild, &[child.clone(), tight.clone()]),
                "grandchild",
            ),
        ] {
            let e = escalations(&after, &before);
            prop_assert!(e.is_empty(), "{what} widened by tightening its creator: {e:?}");
            prop_assert!(after.sandbox.level <= tight.sandbox.level);
            prop_assert!(after.sandbox.ask_before_run && !after.sandbox.allow_network);
            let d = decide(&after, &deny.replace('*', "x"));
            prop_assert_eq!(d.effect, Effect::Deny, "{}", d.reason);
        }
    }
}
