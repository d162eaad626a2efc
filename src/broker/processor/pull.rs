//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361) with long polling (`PullMessageProcessor`).
//! On a queue that has held Kafka transactions a pull reads committed records only (the core's
//! `get_committed`): nothing at or past the last stable offset (held like a pull at the queue's
//! end), no transaction marker, no aborted record (skipped like a tag filter's misses).

use std::sync::Arc;
use std::time::Duration;

use super::{fail, BrokerError, Handled};
use crate::broker::convert;
use crate::broker::filter::PullFilter;
use crate::broker::BrokerInner;
use crate::model::group::SubscriptionGroupConfig;
use crate::model::perm;
use crate::protocol::body::client::SubscriptionData;
use crate::protocol::header::broker::{PullMessageRequestHeader, PullMessageResponseHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::remoting::Connection;
use crate::store::{GetMessageResult, GetMessageStatus};

/// `PullSysFlag` bits.
const FLAG_COMMIT_OFFSET: i32 = 0x1;
const FLAG_SUSPEND: i32 = 0x2;
const FLAG_SUBSCRIPTION: i32 = 0x4;

/// Java answers a suspended pull at most this late after its suspend time (re-check period).
const MAX_SUSPEND: Duration = Duration::from_secs(60);

/// How long a slave with a live master holds a pull before sending the consumer to the master.
const SLAVE_REDIRECT_HOLD: Duration = Duration::from_secs(1);

pub async fn pull_message(b: &Arc<BrokerInner>, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
    let h = PullMessageRequestHeader::decode(&req.ext_fields)?;
    let (filter, group) = check(b, conn, &h).await?;
    let max_bytes = h.max_msg_bytes.filter(|m| *m > 0).map_or(usize::MAX, |m| m as usize);
    let mut max_nums = h.max_msg_nums.max(1) as usize;
    // Cold-read flow control (off by default): one relaxed load when off.
    let cold_ctr = b.live.cold_data_flow_control_enable();
    if cold_ctr {
        if let super::cold_data::Gate::OneMessage = super::cold_data::before_pull(b, &h).await? {
            max_nums = 1;
        }
    }
    // The commit offset is stored on arrival (Java: first execution only), before any hold, so a
    // held pull that completes later never overwrites a newer commit. A slave never stores it
    // (Java 4.x's `storeOffsetEnable`): its offsets come from the master's sync only.
    if h.sys_flag & FLAG_COMMIT_OFFSET != 0 && !b.config.is_slave() {
        if let Some(commit) = h.commit_offset {
            b.offsets.commit(&h.consumer_group, &h.topic, h.queue_id, commit);
        }
    }
    // Messages acknowledged before this pull are dispatched before it reads.
    b.store.await_dispatched(super::READ_AFTER_SEND_WAIT).await;
    // Committed records only: never past a Kafka transaction still open, never a marker or an
    // aborted record (the core's committed read; a queue without transactions reads as ever).
    let get = || b.get_committed(&h.topic, h.queue_id, h.queue_offset, max_nums, max_bytes, &filter);
    let started = std::time::Instant::now();
    let mut result = get();
    b.stats.store.get_elapsed(started.elapsed().as_millis() as u64);
    // A slave (without offsetCheckInSlave) never moves a consumer's offset (Java's
    // nextOffsetCorrection): what it lacks may be data the master had and it has not received,
    // so PULL_OFFSET_MOVED becomes PULL_RETRY_IMMEDIATELY at the same offset, as in Java. Java
    // answers at once, so a consumer ahead of a slave whose master is gone spins; ferrocket holds
    // such a pull like one at the end of the queue first.
    let slave_keeps = b.config.is_slave() && !b.live.config().offset_check_in_slave;
    let code_of = |r: &GetMessageResult| {
        let code = convert::pull_status_code(r.status, h.queue_offset);
        if slave_keeps && code == ResponseCode::PULL_OFFSET_MOVED {
            ResponseCode::PULL_RETRY_IMMEDIATELY
        } else {
            code
        }
    };
    let holdable = |r: &GetMessageResult| {
        let code = convert::pull_status_code(r.status, h.queue_offset);
        code == ResponseCode::PULL_NOT_FOUND || (slave_keeps && code == ResponseCode::PULL_OFFSET_MOVED)
    };
    // A slave whose master is up sends consumers back to it, as Java 5.x does: it suggests the
    // master, and anything but FOUND becomes PULL_RETRY_IMMEDIATELY, so the consumer's next pull
    // goes to the master. Java answers at once; a consumer whose route does not list the master
    // yet (up to 30 s after the master returns) then spins on the slave, so ferrocket first holds
    // the pull for up to a second. With the master down the slave serves pulls like a master.
    let master_up = b.ha_client.as_ref().is_some_and(|c| c.master_connected());
    if master_up && !result.suggest_pulling_from_slave {
        if h.sys_flag & FLAG_SUSPEND != 0 && holdable(&result) {
            let hold = Duration::from_millis(h.suspend_timeout_millis.unwrap_or(15_000).max(0) as u64);
            result = long_poll(b, &h, hold.min(SLAVE_REDIRECT_HOLD), get).await;
        }
        let code = if result.status == GetMessageStatus::Found {
            ResponseCode::SUCCESS
        } else {
            ResponseCode::PULL_RETRY_IMMEDIATELY
        };
        let next = kept_offset(b, &h, &result);
        return Ok(Some(response(req, result, code, next, 0, (b.as_ref(), &h))));
    }
    // Read per pull, as Java does: UPDATE_BROKER_CONFIG changes these live.
    let live = b.live.config();
    let suspend = h.sys_flag & FLAG_SUSPEND != 0 && live.long_polling_enable;
    if suspend && holdable(&result) {
        let hold = Duration::from_millis(h.suspend_timeout_millis.unwrap_or(15_000).max(0) as u64).min(MAX_SUSPEND);
        result = long_poll(b, &h, hold, get).await;
    } else if h.sys_flag & FLAG_SUSPEND != 0 && !live.long_polling_enable && result.status != GetMessageStatus::Found {
        crate::remoting::park_current_request();
        tokio::time::sleep(Duration::from_millis(live.short_polling_time_mills)).await;
        result = get();
    }
    // With slaveReadEnable, a consumer reading data no longer in memory is sent to a slave.
    let suggest = match (live.slave_read_enable, result.suggest_pulling_from_slave) {
        (true, true) => group.which_broker_when_consume_slowly,
        (true, false) => group.broker_id,
        _ => 0,
    };
    if cold_ctr {
        super::cold_data::account(b, &h, &result);
    }
    let code = code_of(&result);
    if let Some(node) = b.metrics.as_deref().filter(|_| code == ResponseCode::SUCCESS) {
        if !crate::model::group::is_retry_or_dlq_topic(&h.topic) {
            let system = b.is_system_topic(&h.topic);
            let (count, bytes) = (result.messages.len() as u64, result.buffer_total_size as u64);
            let protocol = crate::telemetry::Protocol::Remoting;
            crate::telemetry::messages_out(node, protocol, &h.topic, &h.consumer_group, system, count, bytes);
        }
        b.offsets.record_pull(&h.consumer_group, &h.topic, h.queue_id, result.next_begin_offset);
    }
    let next = kept_offset(b, &h, &result);
    Ok(Some(response(req, result, code, next, suggest, (b.as_ref(), &h))))
}

/// Java's `nextOffsetCorrection` on a slave without `offsetCheckInSlave`: statuses that would
/// move the consumer (too small, overflow, empty or missing queue) leave its offset as asked.
fn kept_offset(b: &BrokerInner, h: &PullMessageRequestHeader, r: &GetMessageResult) -> Option<i64> {
    let corrected = !matches!(
        r.status,
        GetMessageStatus::Found | GetMessageStatus::NoMatchedMessage | GetMessageStatus::MessageWasRemoving
    );
    (b.config.is_slave() && !b.live.config().offset_check_in_slave && corrected).then_some(h.queue_offset)
}

/// Waits for a matching message on the queue, or for `hold` to pass; then reads again
/// (the core's [`wait_for_arrivals`](crate::core::Core::wait_for_arrivals), counted as held).
async fn long_poll(
    b: &BrokerInner,
    h: &PullMessageRequestHeader,
    hold: Duration,
    get: impl Fn() -> GetMessageResult,
) -> GetMessageResult {
    let deadline = tokio::time::Instant::now() + hold;
    // A held pull must not hold up the connection's other requests (a client process shares
    // one connection between all its consumers and producers).
    crate::remoting::park_current_request();
    let found = b
        .wait_for_arrivals([(h.topic.as_str(), h.queue_id)], deadline, || {
            let result = get();
            // The end of a Kafka transaction that only uncovered markers and aborted records
            // moves the consumer past them at once instead of at the end of the hold.
            let moved = result.status == GetMessageStatus::NoMatchedMessage
                && result.next_begin_offset > h.queue_offset
                && b.txn.has_transactions(&h.topic, h.queue_id);
            std::future::ready((result.status == GetMessageStatus::Found || moved).then_some(result))
        })
        .await;
    found.unwrap_or_else(get)
}

fn response(
    req: &RemotingCommand,
    r: GetMessageResult,
    code: ResponseCode,
    next_override: Option<i64>,
    suggest: i64,
    (b, h): (&BrokerInner, &PullMessageRequestHeader),
) -> RemotingCommand {
    let mut resp = RemotingCommand::response_to(req, code).with_remark(convert::status_name(r.status));
    let next = next_override.unwrap_or(match r.status {
        GetMessageStatus::NoMessageInQueue | GetMessageStatus::NoMatchedLogicQueue => 0,
        _ => r.next_begin_offset,
    });
    PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: next,
        min_offset: r.min_offset,
        max_offset: r.max_offset,
        topic_sys_flag: None,
        group_sys_flag: None,
    }
    .encode(&mut resp.ext_fields);
    let count = if code == ResponseCode::SUCCESS { r.messages.len() as u64 } else { 0 };
    let system = b.is_system_topic(&h.topic);
    b.stats.pulled(&h.consumer_group, &h.topic, count, r.buffer_total_size as u64, system);
    if code == ResponseCode::SUCCESS {
        // The stored records themselves, straight from the mapped CommitLog.
        resp.body_parts = r.messages.into_iter().map(|m| m.into_bytes()).collect();
    }
    resp
}

/// The checks before reading, in Java's order; returns the subscription to filter with.
async fn check(
    b: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    h: &PullMessageRequestHeader,
) -> Result<(PullFilter, SubscriptionGroupConfig), BrokerError> {
    if !perm::is_readable(b.live.broker_permission()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] pulling message is forbidden", b.config.broker_name),
        );
    }
    // A pull may create its group (autoCreateSubscriptionGroup): the group rules apply.
    super::check_group(&h.consumer_group)?;
    let group = super::pop::consuming_group(b, &h.consumer_group).await?;
    let Some(tc) = b.topics.view(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{}] not exist, apply first please!", h.topic));
    };
    if !perm::is_readable(tc.perm) {
        return fail(ResponseCode::NO_PERMISSION, format!("the topic[{}] pulling message is forbidden", h.topic));
    }
    if h.queue_id < 0 || h.queue_id >= tc.read_queue_nums {
        return Err(BrokerError::InvalidParameter(format!(
            "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
            h.queue_id, h.topic, tc.read_queue_nums
        )));
    }
    let sub = if h.sys_flag & FLAG_SUBSCRIPTION != 0 {
        let expr = h.subscription.as_deref().unwrap_or("*");
        SubscriptionData::build(&h.topic, expr, h.expression_type.as_deref())
    } else {
        let Some((sub, broadcasting)) = b.consumers.pull_view(&h.consumer_group, &h.topic) else {
            return fail(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's group info not exist, group: {}", h.consumer_group),
            );
        };
        if !group.consume_broadcast_enable && broadcasting {
            return fail(
                ResponseCode::NO_PERMISSION,
                format!("the consumer group[{}] can not consume by broadcast way", h.consumer_group),
            );
        }
        let Some(sub) = sub else {
            return fail(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's subscription not exist, group: {}, topic: {}", h.consumer_group, h.topic),
            );
        };
        let wanted = h.sub_version.unwrap_or(0);
        if sub.sub_version < wanted {
            match super::sub_refresh::latest_subscription(b, conn, &h.consumer_group, &h.topic, wanted).await {
                Some(latest) => latest,
                None => return fail(ResponseCode::SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"),
            }
        } else {
            sub
        }
    };
    if sub.is_tag_type() {
        return Ok((PullFilter { sub, sql: None }, group));
    }
    // Java checks the filter data before `enablePropertyFilter`.
    let compiled = match sub.expression_type.as_str() {
        crate::filter::SQL92 => b.filters.get(&h.consumer_group, &h.topic, &sub.sub_string).map_err(|e| e.to_string()),
        other => Err(format!("no filter for expression type {other}")),
    };
    let sql = match compiled {
        Ok(sql) => sql,
        Err(e) if h.sys_flag & FLAG_SUBSCRIPTION != 0 => {
            return fail(
                ResponseCode::SUBSCRIPTION_PARSE_FAILED,
                format!("parse the consumer's subscription failed: {e}"),
            )
        }
        Err(e) => {
            return fail(
                ResponseCode::FILTER_DATA_NOT_EXIST,
                format!("The broker's consumer filter data is not exist!Your expression may be wrong! {e}"),
            )
        }
    };
    if !b.live.config().enable_property_filter {
        return fail(ResponseCode::SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92");
    }
    Ok((PullFilter { sub, sql: Some(sql) }, group))
}
