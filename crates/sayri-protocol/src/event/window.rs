//! Events for front-ends as a whole: the `ready` greeting, `show`, `hide`, `toggle`,
//! `settings_requested`, `shutdown`.

use crate::reply::runtime::StatusReply;
use serde::{Deserialize, Serialize};

/// `ready` → `{info}`: the greeting, each client's first frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    /// The status object at connect time.
    pub info: StatusReply,
}

/// `show`: the UI should show itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Show {}

/// `hide`: the UI should hide itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Hide {}

/// `toggle`: the UI should toggle its visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Toggle {}

/// `settings_requested`: the settings UI should open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SettingsRequested {}

/// `shutdown`: the daemon is stopping (the last frame before it closes connections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Shutdown {}
