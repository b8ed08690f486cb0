//! Port traits: the only way `sayri-core` reaches the outside world.

pub mod approvals;
pub mod chat;
pub mod clock;
pub mod redact;
pub mod sandbox;
pub mod store;

pub use approvals::{Approval, ApprovalStore, StoreError};
pub use chat::{
    ChatError, ChatEvent, ChatMessage, ChatModel, ChatRequest, ChatStream, FinishReason, Role,
    Usage,
};
pub use clock::Clock;
pub use redact::{NoSecrets, Redactor};
pub use sandbox::{ExecRequest, ExecResult, ExecStatus, OutputSize, Sandbox};
pub use store::{
    NewMessage, Preference, PreferenceUpdate, SearchHit, SessionInfo, SessionSeed, SessionStore,
    StoredMessage, ToolCallRecord,
};
