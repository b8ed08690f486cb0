//! The `ApprovalStore` port: durable "Allow always" approvals ("security authorizations").

use sayri_permissions::Approval;

/// Error from a storage adapter, as a message fit for a user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Durable storage of approvals (SQLite in production, memory in unit tests).
pub trait ApprovalStore: Send + Sync {
    /// Approvals of one agent, oldest first (so "last match wins" favours newer ones).
    fn approvals_for(&self, agent_id: &str) -> Result<Vec<Approval>, StoreError>;
    /// Every approval of every agent, oldest first.
    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError>;
    /// Stores an approval; an identical (agent, action, resource) replaces the older one.
    fn add_approval(&self, approval: &Approval) -> Result<(), StoreError>;
    /// Removes approvals: all of them when `action` is `None`, else those of `action` for
    /// `agent_id`. Returns how many were removed.
    fn forget_approvals(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError>;
}
