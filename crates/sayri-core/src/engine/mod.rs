//! The agent engine (ReAct loop) and the permission broker.

pub mod broker;
pub mod gate;
pub mod rules_gate;
