//! Channel gateways: instances (a channel bound to an agent at a level cap), the decision of
//! who an instance answers, pairing PINs and the limits around strangers.
//!
//! * [`instance`] — [`GatewayInstance`]: fields, validation, the level a message runs at.
//! * [`gate`] — [`gate::decide`]: the one authorization decision, from the sender id alone.
//! * [`limits`] — [`limits::PinBook`] (one-time PINs, attempts per sender) and
//!   [`limits::ReplyLimiter`] (one refusal per hour).

pub mod gate;
pub mod instance;
pub mod limits;

pub use gate::{ChatCommand, ChatKind, Update, Verdict, decide};
pub use instance::{GatewayInstance, InstanceError};
pub use limits::{PairOutcome, PinBook, PinPolicy, ReplyLimiter};
