//! A pull whose subscription the broker holds in an older version than the consumer names
//! (`subVersion`): the consumer is asked for its subscriptions before the pull is refused.
//!
//! Java answers SUBSCRIPTION_NOT_LATEST and the consumer retries every 3 s until its next
//! heartbeat (up to 30 s) brings the new version. The Java client bumps the version at every
//! rebalance that changes its queues and announces it with a heartbeat that it skips when
//! another heartbeat holds its lock (`sendHeartbeatToAllBrokerWithLockV2`: "lock heartBeat, but
//! failed"), which a new push consumer's first rebalance and first scheduled heartbeat, both
//! due 1 s after start, sometimes do: its first messages then came ~20 s late. ferrocket asks the
//! consumer itself with GET_CONSUMER_RUNNING_INFO (307), whose `subscriptionSet` is what the
//! heartbeat would have carried, and takes it under the heartbeat's rule (newer version wins).
//! If the consumer does not answer in time, the pull gets Java's answer.
//!
//! May import: the broker's state, the protocol's headers and bodies, remoting.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info};

use crate::broker::BrokerInner;
use crate::protocol::body::client::{running_info_subscriptions, SubscriptionData};
use crate::protocol::header::broker::GetConsumerRunningInfoRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::Connection;

/// How long the consumer has to answer before the pull is refused as in Java.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// The subscription of `group` to `topic` at version `wanted` or newer, asking the consumer on
/// `conn` for it if the broker's copy is older; `None` if it cannot be had.
pub(super) async fn latest_subscription(
    b: &BrokerInner,
    conn: &Arc<Connection>,
    group: &str,
    topic: &str,
    wanted: i64,
) -> Option<SubscriptionData> {
    let fresh = |s: &SubscriptionData| s.sub_version >= wanted;
    // Waiting here (for the gate, then for the client) must not hold up the connection: the
    // client's answer arrives on it.
    crate::remoting::park_current_request();
    let gate = b.consumers.refresh_gate(conn.id());
    let _asking = gate.lock().await;
    // Another pull of this connection may have asked meanwhile, or a heartbeat arrived.
    if let Some(s) = b.consumers.subscription(group, topic).filter(fresh) {
        return Some(s);
    }
    let member = b.consumers.member(group, conn.id())?;
    let mut ask = RemotingCommand::request(RequestCode::GET_CONSUMER_RUNNING_INFO);
    GetConsumerRunningInfoRequestHeader {
        consumer_group: group.to_owned(),
        client_id: member.client_id.clone(),
        jstack_enable: false,
    }
    .encode(&mut ask.ext_fields);
    let answer = match conn.invoke(ask, ASK_TIMEOUT).await {
        Ok(a) if a.response_code() == ResponseCode::SUCCESS => a,
        Ok(a) => {
            debug!(group, client = %member.client_id, code = a.code, remark = ?a.remark, "consumer did not give its running info");
            return None;
        }
        Err(e) => {
            debug!(group, client = %member.client_id, error = %e, "consumer did not give its running info");
            return None;
        }
    };
    let subs = match running_info_subscriptions(&answer.body) {
        Ok(subs) => subs,
        Err(e) => {
            debug!(group, client = %member.client_id, error = %e, "unreadable consumer running info");
            return None;
        }
    };
    let sub = subs.into_iter().find(|s| s.topic == topic)?;
    let stored = b.consumers.update_subscription(group, conn.id(), sub)?;
    if fresh(&stored) {
        info!(group, topic, client = %member.client_id, sub_version = stored.sub_version,
            "subscription taken from the consumer's running info (its heartbeat with it was skipped)");
    }
    Some(stored).filter(fresh)
}
