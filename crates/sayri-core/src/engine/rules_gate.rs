//! `RulesGate`: the [`PermissionGate`] built on the permission engine and the broker.
//!
//! For each request it builds the agent layer from the profile, loads the agent's saved
//! approvals, evaluates (rules → approvals → default → policies → analysis floors) at the
//! request's level, and then: `allow` → run; `deny` → refuse with the rule and its source;
//! `ask` → ask a person through the [`PermissionBroker`] and run only on "Allow". The verdict is
//! final — the sandbox does not evaluate again, so no second check can disagree with it.
//!
//! A command **from outside text** ([`GateRequest::outside`]) is never run on the strength of
//! an allow rule or a saved approval: whatever the evaluation allows becomes a card naming the
//! step it came from (`from_step`), "Allow always" stores nothing for it, and where nobody can
//! answer it is refused. A deny still wins, and its message names that step too.
//!
//! Fails closed: a malformed profile rule refuses; an unreadable approval
//! store is treated as "no approvals" (so the command asks instead of running).

use super::broker::{AskOutcome, AskedSegment, PermissionBroker, Question};
use super::gate::{Confirmation, GateRequest, GateVerdict, PermissionGate, RefusalKind};
use crate::domain::provenance::FromOutside;
use crate::ports::{ApprovalStore, Clock, SECRET_MARKER_PREFIX};
use crate::sync::{read, write};
use futures::future::BoxFuture;
use sayri_permissions::Approval;
use sayri_permissions::{
    AgentRules, Decision, Effect, EvalContext, PolicySet, evaluate_with_approvals, plan_approvals,
};
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

/// The single evaluation point between a proposed command and the sandbox.
pub struct RulesGate {
    policies: RwLock<Arc<PolicySet>>,
    approvals: Arc<dyn ApprovalStore>,
    broker: Arc<PermissionBroker>,
    clock: Arc<dyn Clock>,
}

impl RulesGate {
    /// A gate over `policies` (baseline + files), the approval store and the broker.
    pub fn new(
        policies: PolicySet,
        approvals: Arc<dyn ApprovalStore>,
        broker: Arc<PermissionBroker>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        RulesGate {
            policies: RwLock::new(Arc::new(policies)),
            approvals,
            broker,
            clock,
        }
    }

    /// Replaces the policy layer (e.g. after the policy files changed).
    pub fn set_policies(&self, policies: PolicySet) {
        let mut slot = write(&self.policies);
        *slot = Arc::new(policies);
    }

    /// The broker (for `permission_answer`, `permission_list`, `interrupt`).
    pub fn broker(&self) -> &Arc<PermissionBroker> {
        &self.broker
    }

    async fn decide(&self, request: GateRequest, cancel: CancellationToken) -> GateVerdict {
        let refuse = |kind: RefusalKind, message: String| GateVerdict::Refuse { kind, message };
        let agent = match AgentRules::from_profile(&*request.agent) {
            Ok(a) => a,
            Err(e) => return refuse(RefusalKind::Denied, format!("Blocked: {e}")),
        };
        let action = request.action;
        let approvals = usable_approvals(
            self.approvals
                .approvals_for(&agent.agent_id)
                .unwrap_or_default(),
        );
        let policies = Arc::clone(&read(&self.policies));
        let ctx = EvalContext {
            level: request.level,
            approver_available: request.approver_available,
        };
        let decision = evaluate_with_approvals(
            action,
            &request.resource,
            &agent,
            &approvals,
            &policies,
            &ctx,
        );
        if let Some(origin) = &request.outside {
            return self
                .decide_outside(&request, &agent, decision, origin, &ctx, cancel)
                .await;
        }
        match decision.effect {
            Effect::Allow => GateVerdict::Allow {
                reason: decision.message(),
            },
            Effect::Deny => refuse(
                if decision.no_approver {
                    RefusalKind::NoApprover
                } else {
                    RefusalKind::Denied
                },
                decision.message(),
            ),
            Effect::Ask => {
                let plan = plan_approvals(&decision, &agent.agent_id, self.clock.now_unix());
                let question = question_for(&request, &agent, &decision, plan.approvals);
                self.ask_person(question, &decision.reason, cancel).await
            }
        }
    }

    /// The verdict on a command from outside text: a deny stays a deny (its message names the
    /// step the command came from); anything else is a card, never remembered, or a refusal
    /// where nobody can answer.
    async fn decide_outside(
        &self,
        request: &GateRequest,
        agent: &AgentRules,
        decision: Decision,
        origin: &FromOutside,
        ctx: &EvalContext,
        cancel: CancellationToken,
    ) -> GateVerdict {
        let why = origin.reason();
        if decision.effect == Effect::Deny && !decision.no_approver {
            return GateVerdict::Refuse {
                kind: RefusalKind::Denied,
                message: format!("{}; besides, {why}", decision.message()),
            };
        }
        if ctx.can_ask().is_err() {
            return GateVerdict::Refuse {
                kind: RefusalKind::NoApprover,
                message: format!(
                    "Not run: {why}. A command from outside text runs only when a person approves it, and nobody can approve it here; ask for it in the Sayri app if it should run"
                ),
            };
        }
        let reason = format!(
            "{why}; a command from outside text needs your approval whatever the rules allow ({})",
            decision.reason
        );
        let mut question = question_for(request, agent, &decision, Vec::new());
        question.reason = reason.clone();
        question.from_step = Some(origin.step.clone());
        self.ask_person(question, &reason, cancel).await
    }

    /// Puts `question` to a person and turns the answer into a verdict; `reason` is repeated
    /// in it.
    async fn ask_person(
        &self,
        question: Question,
        reason: &str,
        cancel: CancellationToken,
    ) -> GateVerdict {
        let refuse = |kind: RefusalKind, message: String| GateVerdict::Refuse { kind, message };
        let secs = self.broker.timeout().as_secs();
        match self.broker.ask(question, cancel).await {
            AskOutcome::Allowed { .. } => GateVerdict::Allow {
                reason: format!("Allowed by a person: {reason}"),
            },
            AskOutcome::Denied => refuse(
                RefusalKind::NotApproved,
                format!("Not run: a person denied it ({reason})"),
            ),
            AskOutcome::TimedOut => refuse(
                RefusalKind::NotApproved,
                format!(
                    "Not run: nobody answered within {secs} s ({reason}); ask again when someone can approve it in the Sayri app"
                ),
            ),
            AskOutcome::Cancelled => refuse(
                RefusalKind::Cancelled,
                format!("Not run: the turn was interrupted while waiting for approval ({reason})"),
            ),
            AskOutcome::Shutdown => refuse(
                RefusalKind::Cancelled,
                format!("Not run: Sayri is shutting down ({reason})"),
            ),
        }
    }
}

/// The card for `request` as `decision` judged it; "Allow always" stores `remember`.
fn question_for(
    request: &GateRequest,
    agent: &AgentRules,
    decision: &Decision,
    remember: Vec<Approval>,
) -> Question {
    Question {
        action: request.action.name().to_string(),
        resource: request.resource.clone(),
        reason: decision.reason.clone(),
        agent_id: agent.agent_id.clone(),
        agent_name: agent.agent_name.clone(),
        session_id: request.session_id.clone(),
        policy: decision.policy,
        remember,
        segments: decision
            .subjects
            .iter()
            .map(|s| AskedSegment {
                command: s.command.clone(),
                effect: s.effect,
                reason: s.reason.clone(),
            })
            .collect(),
        from_step: None,
    }
}

/// Approvals that may match. One whose pattern holds a redaction marker (stored, or rewritten,
/// after a secret was redacted out of it) no longer says what the person approved, so it never
/// matches: the command is asked again. Pinned by `an_approval_that_held_a_secret_asks_again`.
fn usable_approvals(all: Vec<Approval>) -> Vec<Approval> {
    all.into_iter()
        .filter(|a| !a.resource.contains(SECRET_MARKER_PREFIX))
        .collect()
}

impl PermissionGate for RulesGate {
    fn authorize(
        &self,
        request: GateRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        Box::pin(self.decide(request, cancel))
    }

    fn confirm(
        &self,
        change: Confirmation,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        Box::pin(self.confirm_change(change, cancel))
    }
}

impl RulesGate {
    /// A [`Confirmation`]: refused when the asking agent's rules or a policy deny the action
    /// (or nobody can answer); otherwise always a card, and only "Allow" lets it happen.
    async fn confirm_change(&self, change: Confirmation, cancel: CancellationToken) -> GateVerdict {
        let refuse = |kind: RefusalKind, message: String| GateVerdict::Refuse { kind, message };
        let agent = match AgentRules::from_profile(&*change.agent) {
            Ok(a) => a,
            Err(e) => return refuse(RefusalKind::Denied, format!("Blocked: {e}")),
        };
        let policies = Arc::clone(&read(&self.policies));
        let ctx = EvalContext {
            level: change.level,
            approver_available: change.approver_available,
        };
        let decision =
            evaluate_with_approvals(change.action, &change.subject, &agent, &[], &policies, &ctx);
        if decision.effect == Effect::Deny && !decision.no_approver {
            return refuse(RefusalKind::Denied, decision.message());
        }
        if let Err(why) = ctx.can_ask() {
            return refuse(RefusalKind::NoApprover, format!("Not done: it {why}"));
        }
        let question = Question {
            action: change.action.name().to_string(),
            resource: change.resource,
            reason: change.reason.clone(),
            agent_id: agent.agent_id.clone(),
            agent_name: agent.agent_name.clone(),
            session_id: change.session_id,
            policy: false,
            remember: Vec::new(),
            segments: change
                .lines
                .into_iter()
                .map(|(command, reason)| AskedSegment {
                    command,
                    effect: Effect::Ask,
                    reason,
                })
                .collect(),
            from_step: None,
        };
        match self.broker.ask(question, cancel).await {
            AskOutcome::Allowed { .. } => GateVerdict::Allow {
                reason: format!("Allowed by a person: {}", change.reason),
            },
            AskOutcome::Denied => refuse(RefusalKind::NotApproved, "a person said no".into()),
            AskOutcome::TimedOut => refuse(
                RefusalKind::NotApproved,
                format!(
                    "nobody answered within {} s",
                    self.broker.timeout().as_secs()
                ),
            ),
            AskOutcome::Cancelled | AskOutcome::Shutdown => {
                refuse(RefusalKind::Cancelled, "the request was interrupted".into())
            }
        }
    }
}
