//! Replies of `permission_list`, `permission_answer`, `permission_forget`, and the permission
//! request object (also the `request` of the `permission_request` event).
//!
//! All text in a request comes from the model: a client shows it as text, never as markup or
//! terminal control sequences.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An open permission question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// 12 lower-case hex characters.
    pub id: String,
    /// The rule action, e.g. `shell`, `subagent`.
    pub action: String,
    /// The whole resource (the full command; secrets shown as `$SECRET:<KEY>`).
    pub resource: String,
    /// Why it needs approval (names the rule and its source).
    pub reason: String,
    /// The agent asking.
    pub agent_id: String,
    /// Its display name.
    pub agent_name: String,
    /// The session of the turn.
    pub session_id: String,
    /// A system policy asks, so "Allow always" cannot widen it.
    pub policy: bool,
    /// Seconds left before the question counts as "no", one decimal.
    pub expires_in: f64,
    /// Every subject judged inside the resource, in order.
    pub segments: Vec<AskedSegment>,
    /// When the command comes from outside text: the earlier step of the request whose
    /// output it came from (e.g. `sayri lookup "widget"`), else `null`.
    pub from_step: Option<String>,
}

/// One judged part of an asked resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskedSegment {
    /// What was judged: a simple command, or `write /path`, `read /path`, `web URL`.
    pub command: String,
    /// Its own effect: `allow`, `ask` or `deny`.
    pub effect: String,
    /// Why, naming the rule and its source.
    pub reason: String,
}

/// A remembered approval ("Allow always").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// The agent it belongs to.
    pub agent_id: String,
    /// The rule action.
    pub action: String,
    /// The whole-value pattern approved.
    pub resource: String,
    /// When it was stored, Unix seconds.
    pub created_at: f64,
}

/// `permission_list` → `{pending, approvals}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionListReply {
    /// The open questions.
    pub pending: Vec<PermissionRequest>,
    /// The remembered approvals, by action.
    pub approvals: BTreeMap<String, Vec<Approval>>,
}

/// `permission_answer` → `{delivered, request_id, allow}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionAnswerReply {
    /// The question was open and got the answer (false for an unknown, settled or
    /// pre-restart id).
    pub delivered: bool,
    /// The question.
    pub request_id: String,
    /// The answer given.
    pub allow: bool,
}

/// `permission_forget` → `{removed}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionForgetReply {
    /// Approvals removed.
    pub removed: u64,
}
