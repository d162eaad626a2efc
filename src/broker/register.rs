//! Registration with the NameServers (`BrokerOuterAPI.registerBrokerAll`): at start, every
//! `registerNameServerPeriod`, and at once when topics change; UNREGISTER_BROKER on shutdown.
//!
//! May import: `model`, `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::BrokerInner;
use crate::model::perm;
use crate::protocol::body::register::{RegisterBrokerBody, TopicConfigSerializeWrapper};
use crate::protocol::header::namesrv::{BrokerIdentityHeader, RegisterBrokerRequestHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};

/// Registers now with every NameServer, in parallel.
pub async fn register_all(inner: &Arc<BrokerInner>) {
    let c = &inner.config;
    let (data_version, mut table) = inner.topics.snapshot();
    let broker_perm = inner.live.broker_permission();
    if !perm::is_writeable(broker_perm) || !perm::is_readable(broker_perm) {
        for tc in table.values_mut() {
            tc.perm &= broker_perm;
        }
    }
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper { data_version, topic_config_table: table },
    };
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let header = RegisterBrokerRequestHeader {
        broker_name: c.broker_name.clone(),
        broker_addr: c.broker_addr(),
        cluster_name: c.broker_cluster_name.clone(),
        ha_server_addr: Some(c.ha_server_addr()),
        broker_id: c.broker_id,
        heartbeat_timeout_millis: None,
        enable_acting_master: Some(false),
        compressed: false,
        body_crc32: Some((crc32fast::hash(&body) & 0x7FFF_FFFF) as i32),
    };
    let timeout = Duration::from_millis(c.register_broker_timeout_mills);
    let calls = c.namesrv_addrs().into_iter().map(|addr| {
        let mut req = RemotingCommand::request(RequestCode::REGISTER_BROKER).with_body(body.clone());
        header.encode(&mut req.ext_fields);
        let inner = inner.clone();
        async move {
            match inner.outbound.invoke(&addr, req, timeout).await {
                Ok(r) if r.response_code() == ResponseCode::SUCCESS => {
                    debug!(namesrv = addr, "registered");
                    learn_master(&inner, &r);
                }
                Ok(r) => warn!(
                    namesrv = addr,
                    code = r.code,
                    remark = r.remark.as_deref().unwrap_or(""),
                    "NameServer refused the registration"
                ),
                Err(e) => warn!(namesrv = addr, error = %e, "registration failed"),
            }
        }
    });
    futures_util::future::join_all(calls).await;
}

/// A slave learns its master's broker and HA addresses from registration answers.
fn learn_master(inner: &BrokerInner, resp: &RemotingCommand) {
    let Some(client) = &inner.ha_client else { return };
    if let Some(ha) = resp.ext_fields.get("haServerAddr").filter(|a| !a.is_empty()) {
        if inner.config.ha_master_address.is_empty() {
            client.update_master(ha);
        }
    }
    if let Some(master) = resp.ext_fields.get("masterAddr").filter(|a| !a.is_empty()) {
        *inner.master_addr.lock().unwrap_or_else(|e| e.into_inner()) = Some(master.clone());
    }
}

/// Runs until `shutdown`: registers at start, periodically, and when asked to.
pub async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    use std::sync::atomic::Ordering::SeqCst;
    let period = Duration::from_millis(inner.config.register_name_server_period.clamp(10_000, 60_000));
    inner.registering.store(true, SeqCst);
    // Each round covers the topic changes asked for before it starts (`topics_changed`).
    let round = || async {
        let asked = inner.register_asked.load(SeqCst);
        register_all(&inner).await;
        inner.register_done.send_modify(|done| *done = (*done).max(asked));
    };
    round().await;
    info!(namesrv = inner.config.namesrv_addr, "registered with the NameServers");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(period) => {},
            _ = inner.register_now.notified() => {},
        }
        round().await;
    }
    inner.registering.store(false, SeqCst);
    // Nobody waits past the end of the loop.
    inner.register_done.send_modify(|done| *done = u64::MAX);
}

/// UNREGISTER_BROKER to every NameServer (shutdown).
pub async fn unregister_all(inner: &Arc<BrokerInner>) {
    let c = &inner.config;
    let header = BrokerIdentityHeader {
        broker_name: c.broker_name.clone(),
        broker_addr: c.broker_addr(),
        cluster_name: c.broker_cluster_name.clone(),
        broker_id: c.broker_id,
    };
    for addr in c.namesrv_addrs() {
        let mut req = RemotingCommand::request(RequestCode::UNREGISTER_BROKER);
        header.encode(&mut req.ext_fields);
        if let Err(e) = inner.outbound.invoke(&addr, req, Duration::from_secs(3)).await {
            warn!(namesrv = addr, error = %e, "unregister failed");
        }
    }
}
