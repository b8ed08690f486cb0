//! The permission gate: the one evaluation point between "the model proposed a command" and
//! "the sandbox runs it". The agent engine asks the gate; the gate evaluates rules, policies and
//! saved approvals and, where someone can answer, asks a person through the permission broker.
//! Whatever it decides travels to the sandbox unchanged — there is no second check that could
//! disagree.

use crate::domain::profile::AgentProfile;
use crate::domain::provenance::FromOutside;
use futures::future::BoxFuture;
use sayri_permissions::Action;
use sayri_protocol::SandboxLevel;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One authorisation question.
#[derive(Debug, Clone)]
pub struct GateRequest {
    /// The agent whose rules apply.
    pub agent: Arc<AgentProfile>,
    /// Level the command would run at (may be lower than the agent's own for remote turns).
    pub level: SandboxLevel,
    /// Session the turn belongs to (shown on the card; `interrupt` cancels its questions).
    pub session_id: String,
    /// What is to be done, e.g. [`Action::Shell`] for a command.
    pub action: Action,
    /// The resource, e.g. the full command text.
    pub resource: String,
    /// Whether a person can answer a question now (false for gateway and routine turns).
    pub approver_available: bool,
    /// Set when the command comes from outside text (see `domain::provenance`): then no allow
    /// rule and no saved approval lets it run; a person is asked, or it is refused.
    pub outside: Option<FromOutside>,
}

/// Why a command was not authorised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// A rule or policy denies it.
    Denied,
    /// A person was asked and said no, or did not answer in time.
    NotApproved,
    /// It needs approval but nobody can answer on this path.
    NoApprover,
    /// The turn was interrupted while waiting.
    Cancelled,
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    /// Run it. `reason` names the rule (or default) that allowed it.
    Allow {
        /// Human-readable reason, e.g. `Allowed: agent rule shell "git *"`.
        reason: String,
    },
    /// Do not run it. `message` names the rule and its source and says what to do.
    Refuse {
        /// Category.
        kind: RefusalKind,
        /// Message fit for the model and the user.
        message: String,
    },
}

/// A change only a person may approve, such as creating an agent: shown on a card whatever
/// the rules say (an `allow` rule does not skip it; a `deny` rule refuses it unasked), never
/// remembered ("Allow always" stores nothing).
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The agent asking (its rules are checked for a `deny`).
    pub agent: Arc<AgentProfile>,
    /// Level the asking turn runs at.
    pub level: SandboxLevel,
    /// Session of the turn.
    pub session_id: String,
    /// The rule action, e.g. [`Action::Subagent`].
    pub action: Action,
    /// What rules are matched against (e.g. the new agent's id).
    pub subject: String,
    /// One-line summary shown as the card's resource.
    pub resource: String,
    /// Why the person is asked.
    pub reason: String,
    /// One card line per detail: `(what, why)`.
    pub lines: Vec<(String, String)>,
    /// Whether a person can answer now.
    pub approver_available: bool,
}

/// Decides whether a proposed command may run, asking a person when the rules say `ask`.
pub trait PermissionGate: Send + Sync {
    /// Answers `request`. Cancelling `cancel` ends any open question with
    /// [`RefusalKind::Cancelled`].
    fn authorize(
        &self,
        request: GateRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict>;

    /// Asks a person to confirm `change` (see [`Confirmation`]). The default refuses: a gate
    /// that cannot show a card never confirms anything.
    fn confirm(
        &self,
        change: Confirmation,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        let _ = (change, cancel);
        Box::pin(std::future::ready(GateVerdict::Refuse {
            kind: RefusalKind::NoApprover,
            message: "Not done: this change needs a person's approval in the Sayri app, and nobody can be asked here".into(),
        }))
    }
}
