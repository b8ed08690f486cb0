//! The agent engine (ReAct loop), its events, and the permission gate it asks.

pub mod agent;
pub mod broker;
pub mod delta_filter;
pub mod events;
pub mod gate;
pub mod interrupted;
pub mod routine_run;
pub mod rules_gate;
pub mod scheduler;

pub use agent::{
    AgentEngine, EnginePorts, EngineSettings, Refusal, TITLE_INSTRUCTION, TurnOutcome, TurnRequest,
};
pub use events::{CoreEvent, CoreState, EventSink, NullSink};
