//! Which gateway instance a connecting process belongs to.
//!
//! Every gateway program runs under its own keeper (see the supervisor), which is a child
//! subreaper: the program and everything it starts stay its descendants, however they detach.
//! A peer (its pid from `SO_PEERCRED`) whose ancestors include the keeper of a running
//! instance speaks for that instance — and for no other, whatever its messages claim.

use super::Host;
use super::instance_of_child;
use crate::command_peer::{Caller, parent_of};
use std::collections::HashMap;

/// The instance whose gateway process tree contains process `pid`, if any. Unknown pids
/// belong to none.
pub fn instance_of_process(state: &dyn Host, pid: Option<i32>) -> Option<String> {
    let keepers: HashMap<i32, String> = state
        .supervisor()
        .list()
        .into_iter()
        .filter_map(|s| {
            let id = instance_of_child(&s.name)?.to_string();
            Some((i32::try_from(s.keeper_pid?).ok()?, id))
        })
        .collect();
    if keepers.is_empty() {
        return None;
    }
    let me = std::process::id() as i32;
    let mut pid = pid.filter(|&p| p > 0)?;
    for _ in 0..4096 {
        if let Some(id) = keepers.get(&pid) {
            return Some(id.clone());
        }
        match parent_of(pid) {
            Some(p) if p <= 1 || p == me => return None,
            Some(p) => pid = p,
            None => return None,
        }
    }
    None
}

/// Who is on the other end of a legacy connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// A process of the gateway of this instance.
    Gateway(String),
    /// Anyone else of our uid, as the control socket classes them.
    Local(Caller),
}

impl Identity {
    /// The caller kind access classes are checked against (a gateway is never a user).
    pub fn caller(&self) -> Caller {
        match self {
            Identity::Gateway(_) => Caller::Command,
            Identity::Local(c) => *c,
        }
    }
}
