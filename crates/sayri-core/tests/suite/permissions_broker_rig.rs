//! The permission broker wired to the fakes of `sayri-testkit`: a fan-out to subscribed
//! "clients", an in-memory approval store and a fixed clock.

use sayri_core::engine::broker::{PermissionBroker, PermissionRequest};
use sayri_testkit::fakes::{FixedClock, MemoryApprovals, PermissionEvent, PermissionFanout};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The time every approval and question is stamped with.
pub const NOW: f64 = 1_800_000_000.0;

/// A broker and the fakes behind it.
pub struct Rig {
    pub sink: Arc<PermissionFanout>,
    pub store: Arc<MemoryApprovals>,
    pub broker: Arc<PermissionBroker>,
}

/// A broker whose questions wait `timeout` for an answer.
pub fn rig(timeout: Duration) -> Rig {
    let sink = Arc::new(PermissionFanout::default());
    let store = Arc::new(MemoryApprovals::default());
    let broker = Arc::new(
        PermissionBroker::new(sink.clone(), store.clone(), Arc::new(FixedClock::at(NOW)))
            .with_timeout(timeout),
    );
    Rig {
        sink,
        store,
        broker,
    }
}

/// The next `permission_request` a subscriber receives (within 5 s).
pub async fn next_request(rx: &mut mpsc::UnboundedReceiver<PermissionEvent>) -> PermissionRequest {
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(PermissionEvent::Request(r))) => *r,
        other => panic!("expected a permission_request, got {other:?}"),
    }
}

/// The next `permission_resolved` a subscriber receives (within 5 s).
pub async fn next_resolved(rx: &mut mpsc::UnboundedReceiver<PermissionEvent>) -> String {
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(PermissionEvent::Resolved(id))) => id,
        other => panic!("expected permission_resolved, got {other:?}"),
    }
}
