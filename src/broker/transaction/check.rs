//! The transaction check service (`TransactionalMessageCheckService`): every
//! `transactionCheckInterval` it walks the half queue from its progress offset. A half message
//! that an op record marks finished (by its own queue offset, or on an immunity copy by the
//! original's) is passed; one younger than `transactionTimeOut` ends the round, as every later
//! one is younger still; one inside its own `CHECK_IMMUNITY_TIME_IN_SECONDS` is put back at the
//! end of the queue unchecked and the round goes on (`putImmunityMsgBackToHalfQueue`), so one
//! producer's long immunity holds up nobody else's checks; one checked `transactionCheckMax`
//! times, or older than `fileReservedTime`, goes to TRANS_CHECK_MAX_TIME_TOPIC; any other is
//! put again at the end of the half queue with `TRANSACTION_CHECK_TIMES` + 1 and its producer
//! group is asked for the outcome (CHECK_TRANSACTION_STATE, oneway, to one live producer of the
//! group; a gRPC producer is asked on its Telemetry stream: `client::DoorClient`). Progress is committed as `CID_RMQ_SYS_TRANS` offsets of the half and op queues; the
//! op progress stays before an op record naming the original of an immunity copy not reached
//! yet ([`ImmuneCopies`]).
//! Runs on masters only; reading the store runs on the blocking pool, off the async workers.
//!
//! An immunity is capped at `transactionCheckMax` x `transactionCheckInterval`: each round puts
//! an immune half back once, so the cap bounds the copies one message costs. (Java never checks
//! a half message whose immunity exceeds that bound, so its transaction is never resolved.)
//!
//! May import: `broker` (managers), `model`, `protocol` (the request), `store`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{
    as_sent, discarded, immunity_copy, op_offsets, prepared_offset, renewed, CHECK_GROUP, HALF_TOPIC, OP_TOPIC,
};
use crate::broker::client::Link;
use crate::broker::BrokerInner;
use crate::model::message::{self, offset_msg_id, property, StoredMessage};
use crate::protocol::header::broker::CheckTransactionStateRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode};
use crate::store::{AcceptAll, GetMessageStatus};

/// Half or op messages read per store call.
const BATCH: usize = 32;
/// A round stops after this long (`MAX_PROCESS_TIME_LIMIT`).
const ROUND_LIMIT: Duration = Duration::from_secs(60);

/// Checks every `transactionCheckInterval` until `shutdown`.
pub async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    let mut immune = ImmuneCopies::default();
    loop {
        // Read every round, as Java's TransactionalMessageCheckService does: UPDATE_BROKER_CONFIG
        // changes it live.
        let interval = Duration::from_millis(inner.live.config().transaction_check_interval.max(100));
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {},
        }
        check_round(&inner, &mut immune).await;
    }
}

/// Most originals [`ImmuneCopies`] remembers (past that, see its doc).
const MAX_IMMUNE_COPIES: usize = 100_000;

/// The queue offsets of the originals of immunity copies put back and not reached since. An
/// op record naming one must stay ahead of the op progress until its copy is reached, or the
/// copy would not learn that its transaction is finished and be checked for nothing. In
/// memory and bounded: after a restart or past the bound, such a copy is checked once its
/// immunity is over (as in Java, where an op record naming an offset behind the half progress
/// is never matched).
#[derive(Default)]
struct ImmuneCopies(HashSet<i64>);

impl ImmuneCopies {
    fn remember(&mut self, original: i64) {
        if self.0.len() < MAX_IMMUNE_COPIES {
            self.0.insert(original);
        }
    }
}

/// Messages of one queue from `offset` on, decoded; `None` when the queue has nothing there.
fn read(inner: &BrokerInner, topic: &str, offset: i64) -> (Vec<StoredMessage>, i64, GetMessageStatus) {
    let r = inner.store.get_message(topic, 0, offset, BATCH, usize::MAX, &AcceptAll);
    let msgs = r.messages.iter().filter_map(|rec| crate::store::commit_log::record::decode(rec, false)).collect();
    (msgs, r.next_begin_offset, r.status)
}

/// Runs a store scan on the blocking pool; `None` if it panicked.
async fn blocking<T: Send + 'static>(
    inner: &Arc<BrokerInner>,
    scan: impl FnOnce(&BrokerInner) -> T + Send + 'static,
) -> Option<T> {
    let inner = inner.clone();
    tokio::task::spawn_blocking(move || scan(&inner)).await.ok()
}

fn progress(inner: &BrokerInner, topic: &str) -> i64 {
    let committed = inner.offsets.query(CHECK_GROUP, topic, 0);
    committed.max(inner.store.min_offset_in_queue(topic, 0))
}

/// The op records from `op_offset` on: which half offsets are finished (also those before the
/// half progress, which immunity copies may name), and for each op record the half offsets it
/// names.
fn finished(inner: &BrokerInner, op_offset: i64) -> (HashSet<i64>, BTreeMap<i64, Vec<i64>>) {
    let (mut done, mut ops) = (HashSet::new(), BTreeMap::new());
    let mut offset = op_offset;
    loop {
        let (msgs, next, status) = read(inner, OP_TOPIC, offset);
        for op in &msgs {
            let halves = op_offsets(op);
            done.extend(halves.iter().copied());
            ops.insert(op.queue_offset, halves);
        }
        if status != GetMessageStatus::Found || next <= offset {
            return (done, ops);
        }
        offset = next;
    }
}

/// One pass over the half queue.
async fn check_round(inner: &Arc<BrokerInner>, immune: &mut ImmuneCopies) {
    let started = std::time::Instant::now();
    let round_start = crate::store::now_ms();
    let half_start = progress(inner, HALF_TOPIC);
    let op_start = progress(inner, OP_TOPIC);
    let half_max = inner.store.max_offset_in_queue(HALF_TOPIC, 0);
    let Some((done, ops)) = blocking(inner, move |i| finished(i, op_start)).await else { return };
    let mut offset = half_start;
    'round: while offset < half_max && started.elapsed() < ROUND_LIMIT {
        let Some((msgs, next, status)) = blocking(inner, move |i| read(i, HALF_TOPIC, offset)).await else { break };
        if status != GetMessageStatus::Found {
            if next > offset && status != GetMessageStatus::OffsetOverflowOne {
                offset = next;
                continue;
            }
            break;
        }
        for half in msgs {
            if half.queue_offset < offset {
                continue;
            }
            let prepared = prepared_offset(&half);
            if done.contains(&half.queue_offset) || prepared.is_some_and(|p| done.contains(&p)) {
                if let Some(p) = prepared {
                    immune.0.remove(&p);
                }
                offset = half.queue_offset + 1;
                continue;
            }
            // Copies put during this round are for the next one.
            if half.store_timestamp >= round_start {
                break 'round;
            }
            if let Some(p) = prepared {
                immune.0.remove(&p);
            }
            match decide(inner, &half) {
                Decision::Wait => break 'round,
                Decision::Immune => {
                    let stored = put_back_immune(inner, &half).await;
                    if stored || prepared.is_some() {
                        immune.remember(prepared.unwrap_or(half.queue_offset));
                    }
                    if !stored {
                        break 'round;
                    }
                }
                Decision::Discard(why) => {
                    discard(inner, &half, why).await;
                }
                Decision::Check(times) => {
                    if !recheck(inner, &half, times).await {
                        break 'round;
                    }
                }
            }
            offset = half.queue_offset + 1;
        }
        // Past records that did not decode.
        offset = offset.max(next);
    }
    if offset != half_start {
        inner.offsets.commit(CHECK_GROUP, HALF_TOPIC, 0, offset);
    }
    // The op progress moves past op records all of whose half messages are behind us, their
    // immunity copies included.
    let mut op_offset = op_start;
    for (op, halves) in &ops {
        if *op != op_offset || halves.iter().any(|h| *h >= offset || immune.0.contains(h)) {
            break;
        }
        op_offset += 1;
    }
    if op_offset != op_start {
        inner.offsets.commit(CHECK_GROUP, OP_TOPIC, 0, op_offset);
    }
    debug!(from = half_start, to = offset, op_from = op_start, op_to = op_offset, "transaction check round");
}

enum Decision {
    /// Too young: it and every later half message wait for the next round.
    Wait,
    /// Inside its own check immunity: put back unchecked, the round goes on.
    Immune,
    Discard(&'static str),
    /// Ask the producer; the number of checks it will have had.
    Check(i32),
}

fn decide(inner: &BrokerInner, half: &StoredMessage) -> Decision {
    let times: i32 = message::property_value(&half.properties, property::TRANSACTION_CHECK_TIMES)
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let c = inner.live.config();
    if times >= c.transaction_check_max {
        return Decision::Discard("checked transactionCheckMax times");
    }
    let now = crate::store::now_ms();
    let age = now - half.born_timestamp;
    if age > c.file_reserved_time as i64 * 3_600_000 {
        return Decision::Discard("older than fileReservedTime");
    }
    let timeout = c.transaction_time_out;
    let Some(immunity) = message::property_value(&half.properties, property::CHECK_IMMUNITY_TIME_IN_SECONDS) else {
        return match (0..timeout).contains(&age) {
            true => Decision::Wait,
            false => Decision::Check(times + 1),
        };
    };
    let cap = i64::from(c.transaction_check_max.max(0)).saturating_mul(c.transaction_check_interval.max(100) as i64);
    let immunity = immunity.trim().parse::<i64>().map_or(timeout, |s| s.saturating_mul(1000)).min(cap);
    // A born time in the future (age < 0) is checked, never kept immune for ever.
    match (0..immunity).contains(&age) {
        true => Decision::Immune,
        false => Decision::Check(times + 1),
    }
}

/// `putImmunityMsgBackToHalfQueue`. False if the copy could not be stored (the round stops
/// there and tries again next time).
async fn put_back_immune(inner: &BrokerInner, half: &StoredMessage) -> bool {
    let put = inner.store.put_messages(&[immunity_copy(half)], false).await;
    if !put.is_ok() {
        warn!(offset = half.queue_offset, status = ?put.status, "putting back a half message inside its check immunity failed");
    }
    put.is_ok()
}

async fn discard(inner: &Arc<BrokerInner>, half: &StoredMessage, why: &str) {
    // Created on first use with one queue, as Java does, so that admin tools and consumers see it.
    let rw = crate::model::perm::READ | crate::model::perm::WRITE;
    if inner.topics.create_if_absent(super::CHECK_MAX_TOPIC, 1, rw, 0).1 {
        inner.topics_changed().await;
    }
    let put = inner.store.put_messages(&[discarded(half)], false).await;
    if !put.is_ok() {
        warn!(offset = half.queue_offset, status = ?put.status, "storing a given-up half message failed");
    }
    let (topic, _) = super::real_queue(half).unwrap_or_default();
    info!(half_offset = half.queue_offset, topic, why, "transaction given up; kept on TRANS_CHECK_MAX_TIME_TOPIC");
}

/// Puts the half message again at the end of its queue and asks a producer of its group about
/// it. False if the copy could not be stored (the round stops and tries again next time).
async fn recheck(inner: &BrokerInner, half: &StoredMessage, times: i32) -> bool {
    let put = inner.store.put_messages(&[renewed(half, times)], false).await;
    let Some(append) = put.append.filter(|_| put.status == crate::store::PutStatus::PutOk) else {
        warn!(offset = half.queue_offset, status = ?put.status, "putting a half message back for its check failed");
        return false;
    };
    let group = message::property_value(&half.properties, property::PGROUP).unwrap_or_default();
    let mut copy = half.clone();
    copy.queue_offset = append.queue_offset;
    copy.commit_log_offset = append.offsets[0];
    copy.store_timestamp = append.store_timestamp;
    let channels = inner.producers.channels(group);
    let Some(channel) = pick(&channels) else {
        info!(
            group,
            half_offset = append.queue_offset,
            check = times,
            "no producer of the group online to check a transaction"
        );
        return true;
    };
    let conn = match &channel.link {
        Link::Remoting(conn) => conn,
        // A gRPC producer: RecoverOrphanedTransactionCommand on its Telemetry stream.
        Link::Door { client, .. } => {
            if !client.check_transaction(&encode_for_check(&copy), copy.commit_log_offset, copy.queue_offset) {
                debug!(group, client = channel.client_id, "a gRPC producer cannot take a transaction check now");
            }
            return true;
        }
    };
    let uniq = message::property_value(&half.properties, property::UNIQ_KEY).map(str::to_owned);
    let mut req = RemotingCommand::request(RequestCode::CHECK_TRANSACTION_STATE);
    CheckTransactionStateRequestHeader {
        topic: Some(HALF_TOPIC.to_owned()),
        tran_state_table_offset: append.queue_offset,
        commit_log_offset: append.offsets[0],
        msg_id: uniq.clone(),
        transaction_id: uniq,
        offset_msg_id: Some(offset_msg_id(inner.store_host, append.offsets[0])),
        broker_name: Some(inner.config.broker_name.clone()),
    }
    .encode(&mut req.ext_fields);
    req.body = encode_for_check(&copy);
    if let Err(e) = conn.invoke_oneway(req).await {
        warn!(group, client = channel.client_id, error = %e, "sending CHECK_TRANSACTION_STATE failed");
    }
    true
}

/// One producer connection of the group (`getAvailableChannel`), in turn.
fn pick(channels: &[crate::broker::client::ClientChannel]) -> Option<&crate::broker::client::ClientChannel> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = channels.len();
    (n > 0).then(|| &channels[NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % n])
}

/// The body of CHECK_TRANSACTION_STATE (`MessageDecoder.encode`): the record layout, with the
/// message's real topic and queue and the offsets of the copy just stored.
fn encode_for_check(copy: &StoredMessage) -> bytes::Bytes {
    let msg = as_sent(copy);
    let mut out = Vec::new();
    let patch = crate::store::commit_log::record::encode(&msg, &mut out);
    crate::store::commit_log::record::patch(
        &mut out,
        patch,
        copy.queue_offset,
        copy.commit_log_offset,
        copy.store_timestamp,
    );
    out.into()
}
