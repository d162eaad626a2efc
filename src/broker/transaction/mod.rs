//! Transactional messages (`TransactionalMessageServiceImpl`, `TransactionalMessageBridge`):
//! the shapes of the records involved, and the check service ([`check`]).
//!
//! ```text
//! send (TRAN_MSG=true) --> RMQ_SYS_TRANS_HALF_TOPIC/0   (REAL_TOPIC, REAL_QID; invisible)
//! END_TRANSACTION commit  --> real topic (type COMMIT, preparedTransactionOffset = half offset)
//!                    + op --> RMQ_SYS_TRANS_OP_HALF_TOPIC/0  tag "d", body "<half queue offset>,"
//! END_TRANSACTION rollback --> op only
//! no answer in time --> check: re-put the half at the end of its queue (TRANSACTION_CHECK_TIMES+1)
//!                      and send CHECK_TRANSACTION_STATE to a producer of its group (a gRPC
//!                      producer: RecoverOrphanedTransactionCommand, `client::DoorClient`); past
//!                      transactionCheckMax --> TRANS_CHECK_MAX_TIME_TOPIC
//! within its CHECK_IMMUNITY_TIME_IN_SECONDS --> re-put as is, with TRAN_PREPARED_QUEUE_OFFSET =
//!                      the queue offset its producer knows (the op record will name that one)
//! ```
//! The op topic is the truth about which half messages are finished; the check service's
//! progress is the consumer offsets of `CID_RMQ_SYS_TRANS` on both topics. Nothing else is kept
//! on disk, so restarts and `kill -9` lose nothing but progress (a finished transaction may be
//! checked again). In memory, a SYNC_MASTER remembers commits its slaves did not get
//! ([`UnreplicatedCommits`]), so that committing one again does not store it twice, and the
//! transactions recently ended are remembered ([`finished`]) so that two answers to checks of
//! one transaction store it once.
//!
//! May import: `broker` (managers, config), `model`, `store`.

pub mod check;
pub mod end;
pub mod finished;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Mutex;

use bytes::Bytes;

use crate::model::message::{self, property, sys_flag, MessageToStore, StoredMessage};

pub const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const OP_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const CHECK_MAX_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// `MixAll.CID_SYS_RMQ_TRANS`: the group whose offsets are the check service's progress.
pub const CHECK_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// `TransactionalMessageUtil.REMOVE_TAG`: the tag of op records.
pub const REMOVE_TAG: &str = "d";
/// `PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET`: on a copy put back during its check immunity,
/// the half queue offset of the original, which its producer's END_TRANSACTION names.
pub const PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";

/// `parseHalfMessageInner`: a transactional send becomes a half message on the half topic's
/// queue 0, remembering its real topic and queue, with the transaction bits cleared.
pub fn to_half(msg: &mut MessageToStore) {
    let mut props = message::parse_properties(&msg.properties);
    // Ours to set (on immunity copies); a producer's would point at another transaction.
    props.remove(PREPARED_QUEUE_OFFSET);
    if let Some(uniq) = props.get(property::UNIQ_KEY).filter(|u| !u.is_empty()).cloned() {
        props.insert(property::TRANSACTION_ID.to_owned(), uniq);
    }
    props.insert(property::REAL_TOPIC.to_owned(), msg.topic.clone());
    props.insert(property::REAL_QID.to_owned(), msg.queue_id.to_string());
    msg.properties = message::map_to_properties(&props);
    msg.sys_flag &= !sys_flag::TRANSACTION_ROLLBACK;
    msg.topic = HALF_TOPIC.to_owned();
    msg.queue_id = 0;
}

/// A stored message as a new record with the properties `props`.
fn copy_of(
    m: &StoredMessage,
    topic: &str,
    queue_id: i32,
    props: &std::collections::BTreeMap<String, String>,
) -> MessageToStore {
    m.to_store(topic.to_owned(), queue_id, message::map_to_properties(props))
}

/// The real topic and queue of a half message; `None` without ones the store could hold.
pub fn real_queue(half: &StoredMessage) -> Option<(String, i32)> {
    let topic = message::property_value(&half.properties, property::REAL_TOPIC)
        .filter(|t| crate::model::name::is_path_component(t))?
        .to_owned();
    let queue_id = message::property_value(&half.properties, property::REAL_QID)
        .and_then(|q| q.parse().ok())
        .filter(|q: &i32| *q >= 0)?;
    Some((topic, queue_id))
}

/// `endMessageTransaction`: the committed message on its real topic and queue, of type COMMIT,
/// pointing back at the half record; REAL_TOPIC and REAL_QID are dropped.
pub fn committed(half: &StoredMessage) -> Option<MessageToStore> {
    let (topic, queue_id) = real_queue(half)?;
    let mut props = message::parse_properties(&half.properties);
    props.remove(property::REAL_TOPIC);
    props.remove(property::REAL_QID);
    let mut m = copy_of(half, &topic, queue_id, &props);
    m.sys_flag = (half.sys_flag & !sys_flag::TRANSACTION_ROLLBACK) | sys_flag::TRANSACTION_COMMIT;
    m.prepared_transaction_offset = half.commit_log_offset;
    Some(m)
}

/// The op record that marks the half messages at `half_offsets` finished.
pub fn op_record(half_offsets: &[i64], host: SocketAddr) -> MessageToStore {
    let body: String = half_offsets.iter().map(|o| format!("{o},")).collect();
    let props = [(property::TAGS, REMOVE_TAG), (property::WAIT, "true")];
    MessageToStore {
        topic: OP_TOPIC.to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(body),
        properties: message::properties_to_string(props),
        tags_code: message::tags_code(Some(REMOVE_TAG)),
        born_timestamp: crate::store::now_ms(),
        born_host: host,
        store_host: host,
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// The half queue offsets an op record marks finished (`"1,2,"`; 4.x wrote `"1"`).
pub fn op_offsets(op: &StoredMessage) -> Vec<i64> {
    if message::property_value(&op.properties, property::TAGS) != Some(REMOVE_TAG) {
        return Vec::new();
    }
    String::from_utf8_lossy(&op.body).split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

/// `renewHalfMessageInner`: the half message again at the end of its queue, checked once more.
pub fn renewed(half: &StoredMessage, check_times: i32) -> MessageToStore {
    let mut props = message::parse_properties(&half.properties);
    props.insert(property::TRANSACTION_CHECK_TIMES.to_owned(), check_times.to_string());
    copy_of(half, HALF_TOPIC, 0, &props)
}

/// Who a transaction is, the same on all copies of its half message: producer group and
/// transaction id as the producer gave them, with the connection and time it was sent from
/// (set by the broker), so that another client reusing the id is another transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TransactionKey {
    pub(super) group: String,
    pub(super) id: String,
    pub(super) born_host: SocketAddr,
    pub(super) born_timestamp: i64,
}

pub fn transaction_key(half: &StoredMessage) -> Option<TransactionKey> {
    let group = message::property_value(&half.properties, property::PGROUP)?;
    let id = message::property_value(&half.properties, property::UNIQ_KEY).filter(|u| !u.is_empty())?;
    Some(TransactionKey {
        group: group.to_owned(),
        id: id.to_owned(),
        born_host: half.born_host,
        born_timestamp: half.born_timestamp,
    })
}

/// Most commits [`UnreplicatedCommits`] remembers; past that the oldest is forgotten (its
/// transaction may then be committed twice, never lost).
const MAX_UNREPLICATED: usize = 4096;

/// SYNC_MASTER: transactions whose committed message is stored here but was not on the
/// slaves when END_TRANSACTION asked, by [`TransactionKey`], with the CommitLog end of that
/// message. When the producer commits the same transaction again (answering a check), that
/// message is waited for again instead of being stored a second time. Bounded, in memory: after
/// a restart a commit stores the message again (a duplicate, never a loss).
#[derive(Default)]
pub struct UnreplicatedCommits(Mutex<(HashMap<TransactionKey, u64>, VecDeque<TransactionKey>)>);

impl UnreplicatedCommits {
    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<TransactionKey, u64>, VecDeque<TransactionKey>)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the stored committed message of this transaction ends, if one waits for slaves.
    pub fn get(&self, key: &TransactionKey) -> Option<u64> {
        self.lock().0.get(key).copied()
    }

    pub fn insert(&self, key: TransactionKey, end_offset: u64) {
        let mut g = self.lock();
        let (map, order) = &mut *g;
        if map.insert(key.clone(), end_offset).is_none() {
            order.push_back(key);
        }
        while map.len() > MAX_UNREPLICATED {
            let Some(oldest) = order.pop_front() else { break };
            map.remove(&oldest);
        }
    }

    pub fn remove(&self, key: &TransactionKey) {
        let mut g = self.lock();
        let (map, order) = &mut *g;
        if map.remove(key).is_some() {
            order.retain(|k| k != key);
        }
    }
}

/// `renewImmunityHalfMessageInner`: the half message again at the end of its queue, not counted
/// as a check, remembering the queue offset of the original (kept from an earlier copy).
pub fn immunity_copy(half: &StoredMessage) -> MessageToStore {
    let mut props = message::parse_properties(&half.properties);
    props.entry(PREPARED_QUEUE_OFFSET.to_owned()).or_insert_with(|| half.queue_offset.to_string());
    copy_of(half, HALF_TOPIC, 0, &props)
}

/// The half queue offset an op record names for this half message's transaction besides its
/// own: the original's, on an immunity copy.
pub fn prepared_offset(half: &StoredMessage) -> Option<i64> {
    message::property_value(&half.properties, PREPARED_QUEUE_OFFSET)?.parse().ok()
}

/// What is kept of a half message given up after too many checks (`resolveDiscardMsg`).
pub fn discarded(half: &StoredMessage) -> MessageToStore {
    copy_of(half, CHECK_MAX_TOPIC, 0, &message::parse_properties(&half.properties))
}

/// The message a CHECK_TRANSACTION_STATE carries: the half message as its producer sent it
/// (real topic and queue).
pub fn as_sent(half: &StoredMessage) -> MessageToStore {
    let (topic, queue_id) = real_queue(half).unwrap_or_else(|| (half.topic.clone(), half.queue_id));
    copy_of(half, &topic, queue_id, &message::parse_properties(&half.properties))
}

#[cfg(test)]
mod tests;
