//! Cold-read flow control requests (`mqadmin getColdDataFlowCtrInfo`,
//! `updateColdDataFlowCtrGroupConfig`, `removeColdDataFlowCtrGroupConfig`) and the pull path's
//! two hooks (Java's `PullMessageProcessor` with `coldDataFlowControlEnable`).
//!
//! ```text
//! 2001 UPDATE_COLD_DATA_FLOW_CTR_CONFIG  body: properties text, group=threshold per line
//! 2002 REMOVE_COLD_DATA_FLOW_CTR_CONFIG  body: the group name
//! 2003 GET_COLD_DATA_FLOW_CTR_INFO       answer: JSON runtimeTable, configTable,
//!                                        cgColdReadThreshold, globalColdReadThreshold, globalAcc
//! ```
//!
//! Stricter than Java: a bad entry (a name groups may not have, a threshold that is not a
//! number >= 0) refuses the whole body where Java skips it and answers SUCCESS.
//!
//! May import what `broker/processor` may (its module doc); the tables are `broker::coldctr`.

use std::sync::Arc;

use super::{check_group, fail, ok, BrokerError, Handled};
use crate::broker::coldctr::{self, COLD_HOLD, FLOW_CTR_REMARK};
use crate::broker::BrokerInner;
use crate::protocol::header::broker::PullMessageRequestHeader;
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::store::GetMessageResult;

/// UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001): every `group=threshold` entry, or none.
pub fn update_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let mut entries = Vec::new();
    for (group, value) in crate::properties::parse_properties(&req.body) {
        check_group(&group)?;
        let Some(threshold) = value.trim().parse::<i64>().ok().filter(|t| *t >= 0) else {
            let why = format!("the cold read threshold of group {group} is not a number >= 0: {value:?}");
            return Err(BrokerError::InvalidParameter(why));
        };
        entries.push((group, threshold));
    }
    if let Err(e) = b.cold_ctr.update_config(&entries) {
        return fail(ResponseCode::SYSTEM_ERROR, e.to_string());
    }
    tracing::info!(groups = entries.len(), "cold data flow control config updated");
    Ok(Some(ok(req)))
}

/// REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002).
pub fn remove_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let Ok(group) = std::str::from_utf8(&req.body) else {
        return Err(BrokerError::InvalidParameter("the group name is not UTF-8".into()));
    };
    check_group(group)?;
    b.cold_ctr.remove_config(group);
    tracing::info!(group, "cold data flow control config removed");
    Ok(Some(ok(req)))
}

/// GET_COLD_DATA_FLOW_CTR_INFO (2003).
pub fn get_info(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let c = b.live.config();
    let json = b.cold_ctr.info_json(c.cg_cold_read_threshold, c.global_cold_read_threshold);
    Ok(Some(ok(req).with_body(json.into_bytes())))
}

/// What a pull may read, decided before it reads (called only with the feature on).
pub enum Gate {
    /// As asked.
    Read,
    /// One message (a pull consumer's cold pull after its hold).
    OneMessage,
}

/// Java's check before reading: a group over its threshold whose pull starts in the cold area
/// is answered SYSTEM_BUSY (push consumers, and groups with no consumer connected), or held for
/// [`COLD_HOLD`] and then given one message (pull consumers; SYSTEM_BUSY when 10,000 pulls are
/// held already).
pub async fn before_pull(b: &Arc<BrokerInner>, h: &PullMessageRequestHeader) -> Result<Gate, BrokerError> {
    let group = h.consumer_group.as_str();
    if !throttled(b, h) {
        return Ok(Gate::Read);
    }
    let pull_consumer = b.consumers.group(group).is_some_and(|g| g.consume_type == "CONSUME_ACTIVELY");
    let slot = if pull_consumer { b.cold_ctr.hold_slot() } else { None };
    let Some(_slot) = slot else {
        return fail(ResponseCode::SYSTEM_BUSY, FLOW_CTR_REMARK);
    };
    crate::remoting::park_current_request();
    tokio::time::sleep(COLD_HOLD).await;
    // Java runs the pull again, not to be held twice: one message if it is still throttled.
    Ok(if throttled(b, h) { Gate::OneMessage } else { Gate::Read })
}

/// `isCgNeedColdDataFlowCtr` and `isMsgInColdArea` of the pull's first message.
fn throttled(b: &BrokerInner, h: &PullMessageRequestHeader) -> bool {
    let c = b.live.config();
    b.cold_ctr.needs_flow_ctr(&h.consumer_group, c.cg_cold_read_threshold, c.global_cold_read_threshold)
        && b.store.is_msg_in_cold_area(&h.topic, h.queue_id, h.queue_offset, c.access_message_in_memory_hot_ratio)
}

/// Java's `coldAcc` after a read: the bytes of the cold messages `r` holds, for its group.
pub fn account(b: &BrokerInner, h: &PullMessageRequestHeader, r: &GetMessageResult) {
    if coldctr::is_sys_pull_group(&h.consumer_group) || r.messages.is_empty() {
        return;
    }
    let ratio = b.live.config().access_message_in_memory_hot_ratio;
    let bytes = coldctr::cold_bytes(&r.messages, |phy| b.store.is_cold_commit_offset(phy, ratio));
    b.cold_ctr.cold_acc(&h.consumer_group, bytes, crate::store::now_ms());
}
