//! `gateway_list`, `gateway_save`, `gateway_start`, `gateway_stop`, `gateway_delete`,
//! `gateway_pin`, `gateway_peers`, `gateway_peer_add`, `gateway_peer_remove`.

use crate::daemon::dispatch::Ctx;
use crate::gateways::{self, GatewayError};
use crate::wire;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_protocol::params::{
    GatewayDeleteParams, GatewayListParams, GatewayPeerAddParams, GatewayPeerRemoveParams,
    GatewayPeersParams, GatewayPinParams, GatewaySaveParams, GatewayStartParams, GatewayStopParams,
    SaveMode,
};
use sayri_protocol::reply::gateways::{
    GatewayDeleteReply, GatewayListReply, GatewayPeer, GatewayPeerAddReply, GatewayPeerRemoveReply,
    GatewayPeersReply, GatewayPinReply, GatewaySaveReply, GatewayStartReply, GatewayStopReply,
};
use sayri_protocol::{ErrorCode, ProtocolError};
use sayri_store::InstanceSave;

fn gw_err(e: GatewayError) -> ProtocolError {
    let code = match &e {
        GatewayError::Unknown(_) => ErrorCode::NotFound,
        GatewayError::Supervisor(crate::supervisor::SupervisorError::ShuttingDown) => {
            ErrorCode::Busy
        }
        _ => ErrorCode::Internal,
    };
    ProtocolError::new(code, e.to_string())
}

/// `gateway_list` → every instance with `state`, `pid`, `restarts`, `last_error`,
/// `restart_in_ms`, `log_file`, `peers`, `last_delivery_error`.
pub async fn gateway_list(
    _: GatewayListParams,
    ctx: Ctx,
) -> Result<GatewayListReply, ProtocolError> {
    gateways::list(&*ctx.daemon).map_err(gw_err)
}

/// `gateway_save {instance, mode?}` → `{saved, instance_id, created, instance, restarted}`. The
/// agents it names must exist; a running instance is restarted with the new settings.
pub async fn gateway_save(
    p: GatewaySaveParams,
    ctx: Ctx,
) -> Result<GatewaySaveReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let id = p.instance.id.trim().to_string();
    let existing = brain
        .db(|s| s.gateway_instance(&id))
        .map_err(|e| ProtocolError::internal(e.to_string()))?
        .or_else(|| {
            (id == sayri_core::domain::gateway::instance::DEFAULT_ID)
                .then(GatewayInstance::implicit_default)
        });
    let inst = GatewayInstance::from_params(&p.instance, existing.as_ref())
        .map_err(|e| ProtocolError::invalid_params(e.to_string()))?;
    for agent in inst.allowed_agents() {
        brain.core.resolve(agent).map_err(|e| {
            ProtocolError::invalid_params(format!(
                "gateway {id}: agent {agent} cannot be used: {e} (see `sayri agents list`)"
            ))
        })?;
    }
    let mode = match p.mode {
        Some(SaveMode::Create) => InstanceSave::Create,
        Some(SaveMode::Update) => InstanceSave::Update,
        None => InstanceSave::Upsert,
    };
    let created = brain
        .db(|s| s.save_gateway_instance(&inst, mode, gateways::now()))
        .map_err(|e| ProtocolError::invalid_params(e.to_string()))?;
    let running = ctx
        .daemon
        .supervisor
        .status(&gateways::child_name(&id))
        .is_some_and(|s| {
            !matches!(
                s.state,
                crate::supervisor::ChildState::Stopped | crate::supervisor::ChildState::Failed
            )
        });
    if running {
        gateways::restart(&*ctx.daemon, &id).await.map_err(gw_err)?;
    }
    Ok(GatewaySaveReply {
        saved: true,
        instance_id: id,
        created,
        instance: wire::gateway_instance(&inst),
        restarted: running,
    })
}

/// `gateway_start {instance_id}` → `{started, already_running, instance_id, message,
/// gateway}`; a running instance is left as it is (`started` false, `already_running` true).
pub async fn gateway_start(
    p: GatewayStartParams,
    ctx: Ctx,
) -> Result<GatewayStartReply, ProtocolError> {
    let (status, already_running) = gateways::start(&*ctx.daemon, &p.instance_id)
        .await
        .map_err(gw_err)?;
    let id = &p.instance_id;
    let message = if already_running {
        format!(
            "Gateway instance '{id}' is already running (pid {}); nothing changed (`sayri gateway stop {id}` stops it)",
            status
                .pid
                .map_or_else(|| "unknown".into(), |p| p.to_string())
        )
    } else {
        format!("Started gateway instance '{id}'")
    };
    Ok(GatewayStartReply {
        started: !already_running,
        already_running,
        message,
        instance_id: p.instance_id,
        gateway: wire::child(&status),
    })
}

/// `gateway_stop {instance_id}` → `{stopped, instance_id}` (`stopped` false when it was not
/// running).
pub async fn gateway_stop(
    p: GatewayStopParams,
    ctx: Ctx,
) -> Result<GatewayStopReply, ProtocolError> {
    let stopped = gateways::stop(&*ctx.daemon, &p.instance_id)
        .await
        .map_err(gw_err)?;
    Ok(GatewayStopReply {
        stopped,
        instance_id: p.instance_id,
    })
}

/// `gateway_delete {instance_id, keep_secrets}` → `{deleted, instance_id, secrets_deleted}`.
pub async fn gateway_delete(
    p: GatewayDeleteParams,
    ctx: Ctx,
) -> Result<GatewayDeleteReply, ProtocolError> {
    let secrets = gateways::delete(&*ctx.daemon, &p.instance_id, p.keep_secrets)
        .await
        .map_err(gw_err)?;
    Ok(GatewayDeleteReply {
        deleted: true,
        instance_id: p.instance_id,
        secrets_deleted: secrets,
    })
}

/// `gateway_pin {instance_id}` → `{instance_id, pin, expires_at, expires_in}`.
pub async fn gateway_pin(p: GatewayPinParams, ctx: Ctx) -> Result<GatewayPinReply, ProtocolError> {
    gateways::load(&*ctx.daemon, &p.instance_id).map_err(gw_err)?;
    let now = gateways::now();
    let (pin, expires_at) = ctx.daemon.gateways.issue_pin(&p.instance_id, now);
    tracing::info!("gateway {}: a new pairing PIN was made", p.instance_id);
    Ok(GatewayPinReply {
        instance_id: p.instance_id,
        pin,
        expires_at,
        expires_in: (expires_at - now).round() as i64,
    })
}

/// `gateway_peers {instance_id}` → `[{peer_id, agent_id, authorized_at, via, name}]`.
pub async fn gateway_peers(
    p: GatewayPeersParams,
    ctx: Ctx,
) -> Result<GatewayPeersReply, ProtocolError> {
    gateways::load(&*ctx.daemon, &p.instance_id).map_err(gw_err)?;
    let peers = ctx
        .daemon
        .brain()?
        .db(|s| s.peers_of(&p.instance_id))
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(peers
        .into_iter()
        .filter(|p| p.authorized)
        .map(|p| GatewayPeer {
            peer_id: p.peer_id,
            agent_id: p.agent_id,
            authorized_at: p.authorized_at,
            via: p.via,
            name: p.name,
        })
        .collect())
}

/// `gateway_peer_add {instance_id, peer_id}` → `{instance_id, peer_id, added}` (`added` false
/// when it was paired already).
pub async fn gateway_peer_add(
    p: GatewayPeerAddParams,
    ctx: Ctx,
) -> Result<GatewayPeerAddReply, ProtocolError> {
    let inst = gateways::load(&*ctx.daemon, &p.instance_id).map_err(gw_err)?;
    let added = ctx
        .daemon
        .brain()?
        .db(|s| {
            s.authorize_peer(
                &p.peer_id,
                &inst.id,
                &inst.agent,
                gateways::now(),
                "desktop",
                "",
            )
        })
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    tracing::info!(
        "gateway {}: sender {} added at the desktop",
        inst.id,
        p.peer_id
    );
    Ok(GatewayPeerAddReply {
        instance_id: inst.id,
        peer_id: p.peer_id,
        added,
    })
}

/// `gateway_peer_remove {instance_id, peer_id}` → `{instance_id, peer_id, removed}`.
pub async fn gateway_peer_remove(
    p: GatewayPeerRemoveParams,
    ctx: Ctx,
) -> Result<GatewayPeerRemoveReply, ProtocolError> {
    let inst = gateways::load(&*ctx.daemon, &p.instance_id).map_err(gw_err)?;
    let removed = ctx
        .daemon
        .brain()?
        .db(|s| s.revoke_peer(&p.peer_id, &inst.id))
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(GatewayPeerRemoveReply {
        instance_id: inst.id,
        peer_id: p.peer_id,
        removed,
    })
}
