//! The agent engine (ReAct loop) and the permission broker.

pub mod gate;
