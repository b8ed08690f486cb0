//! Port traits: the only way `sayri-core` reaches the outside world.

pub mod agents;
pub mod approvals;
pub mod audio;
pub mod chat;
pub mod clock;
pub mod entropy;
pub mod mcp;
pub mod memory;
pub mod notify;
pub mod redact;
pub mod sandbox;
pub mod skills;
pub mod speech;
pub mod store;

pub use agents::{AgentDirError, AgentDirectory, StaticAgents, effective_agent, sub_agents};
pub use approvals::{ApprovalStore, StoreError};
pub use chat::{
    ChatError, ChatEvent, ChatImage, ChatMessage, ChatModel, ChatRequest, ChatStream, FinishReason,
    ModelEndpoint, Role, Usage,
};
pub use clock::{Clock, SystemZone};
pub use entropy::Entropy;
pub use mcp::{McpCallError, McpOutput, McpTools};
pub use memory::{MemoryBook, Proposed, RecalledFact};
pub use notify::{NoNotifier, Notifier, NotifyError, SpeakError, Speaker};
pub use redact::{NoSecrets, Redactor, SECRET_MARKER_PREFIX, redacted_prefix};
pub use sandbox::{ExecRequest, ExecResult, ExecStatus, OutputSize, Sandbox};
pub use skills::{SkillLibrary, SkillReadError};
pub use store::{
    Delegated, NewMessage, OpenTurn, Preference, PreferenceUpdate, SearchHit, SessionInfo,
    SessionSeed, SessionStore, StoredMessage, ToolCallRecord,
};
