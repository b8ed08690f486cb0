//! `client_hello`: a client narrowing what its own connection may do.
//!
//! A bridge that serves a less trusted front-end (the web bubble) limits its connection before
//! forwarding anything, so the daemon refuses what the bridge gave up even if the bridge's own
//! allow-list were wrong. Limits only add up (see [`SelfLimits`]): a connection never widens.
//!
//! [`SelfLimits`]: crate::daemon::dispatch::SelfLimits

use crate::daemon::dispatch::{Access, Ctx, SelfLimit};
use sayri_protocol::ProtocolError;
use sayri_protocol::params::ClientHelloParams;
use sayri_protocol::reply::runtime::ClientHelloReply;

/// `client_hello {access, allow}` → `{"access", "allow"}` (the limit just added).
pub async fn client_hello(
    p: ClientHelloParams,
    ctx: Ctx,
) -> Result<ClientHelloReply, ProtocolError> {
    let ceiling = Access::from(p.access);
    let limit = SelfLimit {
        ceiling,
        also: p.allow.into_iter().collect(),
    };
    tracing::debug!(client = ctx.client, ceiling = ceiling.name(), also = ?limit.also, "connection limited itself");
    let answer = ClientHelloReply {
        access: p.access,
        allow: limit.also.iter().cloned().collect(),
    };
    ctx.limits.add(limit);
    Ok(answer)
}
