//! "Allow always": approvals are exactly what was approved, scoped to the agent, and never lift
//! a deny or a policy ask.

use super::common::{L3, decide_at, profile};
use sayri_permissions::Approval;
use sayri_permissions::Effect::{Allow, Ask, Deny};
use sayri_permissions::{
    Action, AgentRules, EvalContext, PolicySet, approval_rules, evaluate_with_approvals,
    plan_approvals,
};

#[test]
fn approvals_are_narrow_and_cannot_lift_denies() {
    let b = r#"[{"action":"shell","resource":"*","effect":"ask"},
                {"action":"shell","resource":"cd *","effect":"allow"},
                {"action":"shell","resource":"rm *","effect":"deny"}]"#;
    let d = decide_at(L3, b, "cd /tmp/proj && python3 run.py");
    assert_eq!(d.effect, Ask);
    let plan = plan_approvals(&d, "default", 5.0);
    let patterns: Vec<_> = plan.approvals.iter().map(|a| a.resource.as_str()).collect();
    assert_eq!(patterns, vec!["python3 run.py"]);

    let agent = AgentRules::from_profile(&profile(L3, b)).unwrap();
    let ctx = EvalContext {
        level: L3,
        approver_available: true,
    };
    let saved = plan.approvals.clone();
    let run = |cmd: &str, saved: &[Approval]| {
        evaluate_with_approvals(
            Action::Shell,
            cmd,
            &agent,
            saved,
            &PolicySet::baseline(),
            &ctx,
        )
        .effect
    };
    assert_eq!(run("cd /tmp/proj && python3 run.py", &saved), Allow);
    assert_eq!(run("python3 run.py --evil", &saved), Ask);
    assert_eq!(run("python3 run.py; python3 other.py", &saved), Ask);

    // Another agent's approvals do not apply.
    let foreign: Vec<Approval> = saved
        .iter()
        .map(|a| Approval {
            agent_id: "other".into(),
            ..a.clone()
        })
        .collect();
    assert_eq!(run("python3 run.py", &foreign), Ask);

    // An approval never lifts an agent deny.
    let rm = vec![Approval {
        agent_id: "default".into(),
        action: "shell".into(),
        resource: "rm -rf /tmp/x".into(),
        created_at: 0.0,
    }];
    assert_eq!(run("rm -rf /tmp/x", &rm), Deny);

    // Wildcard characters cannot be approved exactly.
    let d = decide_at(L3, b, "ls *.txt");
    let plan = plan_approvals(&d, "default", 0.0);
    assert!(plan.approvals.is_empty());
    assert_eq!(plan.not_remembered.len(), 1);

    // Analysis asks are not remembered.
    let d = decide_at(L3, b, "eval $X");
    assert!(
        plan_approvals(&d, "default", 0.0)
            .approvals
            .iter()
            .all(|a| a.resource != "eval $X")
    );
    assert_eq!(approval_rules(&rm, "default").len(), 1);
}
