//! Events of the permission broker: `permission_request`, `permission_resolved`.

use crate::reply::permissions::PermissionRequest;
use serde::{Deserialize, Serialize};

/// `permission_request` → `{request}`: a permission question opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequested {
    /// The question.
    pub request: PermissionRequest,
}

/// `permission_resolved` → `{request_id}`: it is settled (answer, timeout, cancel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionResolved {
    /// The question.
    pub request_id: String,
}
