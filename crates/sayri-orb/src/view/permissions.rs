//! Permission cards: one per open `permission_request`, gone on `permission_resolved` from any
//! client (or when answering finds it already settled).

use super::{Request, Tag, ViewModel};
use crate::safe_text::visible;
use sayri_protocol::params::PermissionAnswerParams;
use sayri_protocol::reply::permissions::PermissionRequest;

/// One simple command (or file/web access) the daemon judged inside the asked command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// What was judged (visible form), e.g. `rm -rf ~/x` or `write /etc/hosts`.
    pub command: String,
    /// `allow`, `ask` or `deny`.
    pub effect: String,
    /// Why (visible form).
    pub reason: String,
}

/// An open permission question.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionCard {
    /// `request.id`.
    pub id: String,
    /// Rule action, e.g. `shell`.
    pub action: String,
    /// The whole command (visible form).
    pub resource: String,
    /// Why it asks (visible form).
    pub reason: String,
    /// Asking agent's display name (visible form).
    pub agent_name: String,
    /// Every judged part of the command, in order (empty when the daemon sent none).
    pub segments: Vec<Segment>,
    /// The ask came from a system policy: "Allow always" cannot widen it.
    pub policy: bool,
    /// When the command came from outside text: the earlier step whose output it came from
    /// (visible form); "Allow always" stores nothing for it.
    pub from_step: Option<String>,
    /// Monotonic ms when the question counts as "no".
    pub deadline_ms: u64,
    /// An answer was sent and not yet confirmed.
    pub answering: bool,
    /// Answering failed (visible form).
    pub error: Option<String>,
}

impl PermissionCard {
    /// Whole seconds left at `now_ms` (rounded up; 0 once expired).
    pub fn seconds_left(&self, now_ms: u64) -> u64 {
        self.deadline_ms.saturating_sub(now_ms).div_ceil(1000)
    }

    /// The card of a request (`permission_request.request` or a `permission_list` item);
    /// `None` for one without an id.
    pub fn from_request(r: &PermissionRequest, now_ms: u64) -> Option<PermissionCard> {
        if r.id.is_empty() {
            return None;
        }
        let s = |t: &str| visible(t).into_owned();
        let expires = Some(r.expires_in)
            .filter(|e| e.is_finite() && *e > 0.0)
            .unwrap_or(0.0);
        let segments = r
            .segments
            .iter()
            .map(|seg| Segment {
                command: s(&seg.command),
                effect: s(&seg.effect),
                reason: s(&seg.reason),
            })
            .collect();
        Some(PermissionCard {
            id: r.id.clone(),
            action: s(&r.action),
            resource: s(&r.resource),
            reason: s(&r.reason),
            agent_name: s(&r.agent_name),
            segments,
            policy: r.policy,
            from_step: r.from_step.as_deref().map(s),
            deadline_ms: now_ms.saturating_add((expires.min(86_400.0) * 1000.0) as u64),
            answering: false,
            error: None,
        })
    }
}

impl ViewModel {
    pub(super) fn open_card(&mut self, request: &PermissionRequest, now_ms: u64) {
        let Some(card) = PermissionCard::from_request(request, now_ms) else {
            return;
        };
        match self.permissions.iter_mut().find(|c| c.id == card.id) {
            // Listed again after a reconnect: keep the answering state, refresh the rest.
            Some(existing) => {
                let answering = existing.answering;
                *existing = card;
                existing.answering = answering;
            }
            None => self.permissions.push(card),
        }
        self.changes.permissions = true;
        if !self.card_open {
            // A question nobody can see would just time out as a "no".
            self.card_open = true;
            self.changes.layout = true;
        }
    }

    pub(super) fn close_card(&mut self, request_id: &str) {
        let before = self.permissions.len();
        self.permissions.retain(|c| c.id != request_id);
        if self.permissions.len() != before {
            self.changes.permissions = true;
        }
    }

    pub(super) fn card_failed(&mut self, request_id: &str, message: &str) {
        if let Some(card) = self.permissions.iter_mut().find(|c| c.id == request_id) {
            card.answering = false;
            card.error = Some(visible(message).into_owned());
            self.changes.permissions = true;
        }
    }

    /// Sends the answer; the card stays (disabled) until `permission_resolved` removes it.
    pub(super) fn answer_card(
        &mut self,
        request_id: String,
        allow: bool,
        remember: bool,
    ) -> Vec<Request> {
        let Some(card) = self
            .permissions
            .iter_mut()
            .find(|c| c.id == request_id && !c.answering)
        else {
            return Vec::new();
        };
        card.answering = true;
        card.error = None;
        self.changes.permissions = true;
        vec![Request::typed(
            Tag::Answer {
                request_id: request_id.clone(),
            },
            &PermissionAnswerParams {
                request_id,
                allow,
                remember: allow && remember,
            },
        )]
    }
}
