//! The ACL admin requests mqadmin sends, served as Java's broker does: the accounts and global
//! white addresses of the ACL files, edited atomically off the async workers.
//!
//! Owns: the handlers of codes 50-53. May import: `crate::acl` (the accounts), `crate::protocol`
//! (their headers), the broker's state (`BrokerInner`) and `processor`'s reply helpers. The check
//! every request passes is `broker/acl.rs`, which imports no handler.
//!
//! ```text
//! UPDATE_AND_CREATE_ACL_CONFIG (50)  -> 209 UPDATE_AND_CREATE_ACL_CONFIG_FAILED on failure
//! DELETE_ACL_CONFIG (51)             -> 210 DELETE_ACL_CONFIG_FAILED
//! GET_BROKER_CLUSTER_ACL_INFO (52)   -> versions of the files
//! UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) -> 211 UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
//! ```

use std::sync::Arc;

use tracing::warn;

use super::{ok, Handled};
use crate::acl::perm::AccountConfig;
use crate::acl::Acl;
use crate::broker::BrokerInner;
use crate::protocol::header::acl::{
    CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader, GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

const NOT_ENABLED: &str = "ACL is not enabled on this broker (aclEnable=false)";

fn not_enabled(req: &RemotingCommand, code: ResponseCode) -> Handled {
    Ok(Some(RemotingCommand::error_response(req, code, NOT_ENABLED)))
}

/// `UtilAll.split`: absent stays absent, blank is an empty list.
fn split(v: Option<&String>) -> Option<Vec<String>> {
    let v = v?;
    Some(if v.trim().is_empty() { Vec::new() } else { v.split(',').map(str::to_owned).collect() })
}

/// Runs an ACL file edit off the async workers; `Err` is the failure's message.
async fn blocking<T: Send + 'static>(
    acl: &Arc<Acl>,
    edit: impl FnOnce(&Acl) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let acl = acl.clone();
    tokio::task::spawn_blocking(move || edit(&acl)).await.unwrap_or_else(|e| Err(format!("ACL edit failed: {e}")))
}

/// The ACL and the request's header, or the answer refusing the request with `failed`.
fn prepare<H: CommandHeader>(
    b: &BrokerInner,
    req: &RemotingCommand,
    failed: ResponseCode,
) -> Result<(Arc<Acl>, H), Box<RemotingCommand>> {
    let acl = b.acl.clone().ok_or_else(|| Box::new(RemotingCommand::error_response(req, failed, NOT_ENABLED)))?;
    let h = H::decode(&req.ext_fields)
        .map_err(|e| Box::new(RemotingCommand::error_response(req, failed, e.to_string())))?;
    Ok((acl, h))
}

/// UPDATE_AND_CREATE_ACL_CONFIG (50).
pub async fn update_and_create_acl_config(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let failed = ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED;
    let (acl, h) = match prepare::<CreateAccessConfigRequestHeader>(b, req, failed) {
        Ok(p) => p,
        Err(refused) => return Ok(Some(*refused)),
    };
    let cfg = AccountConfig {
        access_key: Some(h.access_key.clone()),
        secret_key: h.secret_key,
        white_remote_address: h.white_remote_address,
        admin: h.admin,
        default_topic_perm: h.default_topic_perm,
        default_group_perm: h.default_group_perm,
        topic_perms: split(req.ext_fields.get("topicPerms")),
        group_perms: split(req.ext_fields.get("groupPerms")),
    };
    match blocking(&acl, move |acl| acl.update_account(&cfg)).await {
        Ok(()) => Ok(Some(ok(req))),
        Err(e) => {
            warn!(access_key = h.access_key, error = %e, "updateAclConfig refused");
            Ok(Some(RemotingCommand::error_response(req, failed, e)))
        }
    }
}

/// DELETE_ACL_CONFIG (51).
pub async fn delete_acl_config(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let failed = ResponseCode::DELETE_ACL_CONFIG_FAILED;
    let (acl, h) = match prepare::<DeleteAccessConfigRequestHeader>(b, req, failed) {
        Ok(p) => p,
        Err(refused) => return Ok(Some(*refused)),
    };
    let ak = h.access_key.clone();
    let remark = match blocking(&acl, move |acl| acl.delete_account(&ak)).await {
        Ok(true) => return Ok(Some(ok(req))),
        Ok(false) => format!("The accessKey[{}] corresponding to accessConfig has been deleted failed.", h.access_key),
        Err(e) => e,
    };
    warn!(access_key = h.access_key, reason = remark, "deleteAclConfig refused");
    Ok(Some(RemotingCommand::error_response(req, failed, remark)))
}

/// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).
pub async fn update_global_white_addrs_config(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let failed = ResponseCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED;
    let (acl, h) = match prepare::<UpdateGlobalWhiteAddrsConfigRequestHeader>(b, req, failed) {
        Ok(p) => p,
        Err(refused) => return Ok(Some(*refused)),
    };
    let addrs = split(Some(&h.global_white_addrs)).unwrap_or_default();
    let file = h.acl_file_full_path.clone();
    let remark = match blocking(&acl, move |acl| acl.update_global_white(&addrs, file.as_deref())).await {
        Ok(true) => return Ok(Some(ok(req))),
        Ok(false) => format!("The globalWhiteAddresses[{}] has been updated failed.", h.global_white_addrs),
        Err(e) => e,
    };
    warn!(addresses = h.global_white_addrs, reason = remark, "updateGlobalWhiteAddr refused");
    Ok(Some(RemotingCommand::error_response(req, failed, remark)))
}

/// GET_BROKER_CLUSTER_ACL_INFO (52): what `mqadmin clusterAclConfigVersion` prints. Both
/// versions are filled in (the 5.x broker leaves `allAclFileVersion` out, which the clients of
/// both generations then fail to parse).
pub fn get_broker_cluster_acl_info(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let Some(acl) = b.acl.as_ref() else { return not_enabled(req, ResponseCode::SYSTEM_ERROR) };
    let h = GetBrokerAclConfigResponseHeader {
        version: acl.version_json(),
        all_acl_file_version: acl.all_versions_json(),
        broker_name: b.config.broker_name.clone(),
        broker_addr: b.config.broker_addr(),
        cluster_name: b.config.broker_cluster_name.clone(),
    };
    let mut resp = ok(req);
    h.encode(&mut resp.ext_fields);
    Ok(Some(resp))
}
