//! The statistics mqadmin reads (`AdminBrokerProcessor`): VIEW_BROKER_STATS_DATA (315,
//! `statsAll`), GET_BROKER_CONSUME_STATS (317, `brokerConsumeStats`), GET_ALL_PRODUCER_INFO
//! (328, `producer`). The figures come from `core::stats`, which both doors feed.
//!
//! May import: `core`, `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;

use super::{fail, ok, Handled};
use crate::broker::BrokerInner;
use crate::core::stats::{format::java_double, Window};
use crate::protocol::body::admin::{mq_keyed, OffsetWrapper};
use crate::protocol::body::client::MessageQueue;
use crate::protocol::body::stats::{
    consume_stats_list, BrokerStatsData, BrokerStatsItem, ProducerInfo, ProducerTableInfo,
};
use crate::protocol::body::to_vec;
use crate::protocol::header::stats::{GetConsumeStatsInBrokerHeader, ViewBrokerStatsDataRequestHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

/// VIEW_BROKER_STATS_DATA: one statistic's minute, hour and day (`statsName` one of the sets of
/// `core::stats`, `statsKey` a topic, `topic@group`, ...). SYSTEM_ERROR "The stats <n> <k> not
/// exist" when nothing was counted under that key (mqadmin `statsAll` then shows zero).
pub fn view_broker_stats_data(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ViewBrokerStatsDataRequestHeader::decode(&req.ext_fields)?;
    let Some(item) = b.stats.set(&h.stats_name).and_then(|s| s.get(&h.stats_key)) else {
        let (name, key) = (crate::model::name::shown(&h.stats_name), crate::model::name::shown(&h.stats_key));
        return fail(ResponseCode::SYSTEM_ERROR, format!("The stats <{name}> <{key}> not exist"));
    };
    let window = |w| {
        let s = item.snapshot(w);
        BrokerStatsItem { avgpt: s.avgpt, sum: s.sum, tps: s.tps }
    };
    let data = BrokerStatsData {
        stats_day: window(Window::Day),
        stats_hour: window(Window::Hour),
        stats_minute: window(Window::Minute),
    };
    Ok(Some(ok(req).with_body(to_vec(&data))))
}

/// The `ConsumeStats` of `group` on `topic` as GET_BROKER_CONSUME_STATS gives it (every write
/// queue), with the sum of its lags.
fn consume_stats(b: &BrokerInner, group: &str, topic: &str, queues: i32) -> (String, i64) {
    let mut table = BTreeMap::new();
    let mut diff = 0;
    for q in 0..queues {
        let broker_offset = b.store.max_offset_in_queue(topic, q).max(0);
        let consumer_offset = b.offsets.query(group, topic, q).max(0);
        let last = match consumer_offset {
            0 => 0,
            o => b.store.message_store_timestamp(topic, q, o - 1).filter(|t| *t > 0).unwrap_or(0),
        };
        diff += broker_offset - consumer_offset;
        // Java leaves the pull offset at 0 here, so its totalInflightDiff counts every consumed
        // message negative; the consumer offset makes it 0.
        let v = OffsetWrapper { broker_offset, consumer_offset, last_timestamp: last, pull_offset: consumer_offset };
        let mq = MessageQueue { broker_name: b.config.broker_name.clone(), queue_id: q, topic: topic.to_owned() };
        table.insert(mq, serde_json::to_string(&v).unwrap_or_default());
    }
    let tps = java_double(b.stats.group_get_tps(group, topic));
    (mq_keyed("offsetTable", &table, &[("consumeTps", tps)]), diff)
}

/// GET_BROKER_CONSUME_STATS (`fetchAllConsumeStatsInBroker`): every subscription group with
/// the topics it has offsets on (those it subscribes to, when it is online with
/// subscriptions; ordered topics only with `isOrder`), and the total lag.
pub fn get_broker_consume_stats(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GetConsumeStatsInBrokerHeader::decode(&req.ext_fields)?;
    let mut groups = Vec::new();
    let mut total_diff = 0;
    for group in b.groups.all().into_keys() {
        let subscribed = b.consumers.group(&group).map(|g| g.subscriptions).filter(|s| !s.is_empty());
        let mut list = Vec::new();
        for topic in b.offsets.topics_of_group(&group) {
            let Some(tc) = b.topics.get(&topic) else { continue };
            if (h.is_order && !tc.order) || subscribed.as_ref().is_some_and(|s| !s.contains_key(&topic)) {
                continue;
            }
            let (stats, diff) = consume_stats(b, &group, &topic, tc.write_queue_nums);
            total_diff += diff;
            list.push(stats);
        }
        groups.push((group, list));
    }
    let body = consume_stats_list(&b.config.broker_addr(), &groups, total_diff, 0);
    Ok(Some(ok(req).with_body(body)))
}

/// GET_ALL_PRODUCER_INFO (`ProducerManager.getProducerTable`): every producer connection by
/// group; the address as Netty prints it (`/ip:port`).
pub fn get_all_producer_info(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let now = crate::core::stats::now_ms() as i64;
    let mut table = ProducerTableInfo::default();
    for (group, channels) in b.producers.table() {
        let infos = channels
            .into_iter()
            .map(|c| ProducerInfo {
                client_id: c.client_id.clone(),
                language: c.language.name().to_owned(),
                last_update_timestamp: now - c.last_update.elapsed().as_millis() as i64,
                remote_ip: format!("/{}", c.link.peer()),
                version: c.version,
            })
            .collect();
        table.data.insert(group, infos);
    }
    Ok(Some(ok(req).with_body(to_vec(&table))))
}
