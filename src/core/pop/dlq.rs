//! Forwarding a popped message to its group's dead letter queue at the consumer's request (the
//! gRPC ForwardMessageToDeadLetterQueue; Java's proxy sends CONSUMER_SEND_MSG_BACK with delay
//! level -1, then acks): the message is re-put to `%DLQ%{group}` (created on first use, one
//! queue) with `RETRY_TOPIC`, `DLQ_ORIGIN_TOPIC` and `DLQ_ORIGIN_MESSAGE_ID`, then acked under
//! its handle. A stale handle forwards nothing.
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use super::handle::Handle;
use super::state::{AckOutcome, QueueKey};
use crate::core::Core;
use crate::model::group::dlq_topic;
use crate::model::message::{self, property};
use crate::model::perm;
use crate::store::{AcceptAll, GetMessageStatus, PutStatus};

/// `MessageConst.PROPERTY_DLQ_ORIGIN_TOPIC`, `..._MESSAGE_ID`.
pub const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
pub const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";

impl Core {
    /// Puts the message at `offset` of the stored `topic`'s queue (popped by `group` under
    /// `handle`, asked as `origin`) to the group's DLQ and acks it; `Err` when the put failed
    /// (nothing is acked then).
    pub async fn pop_forward_to_dlq(
        &self,
        group: &str,
        origin: &str,
        (topic, queue_id): (&str, i32),
        handle: &Handle,
        offset: i64,
    ) -> Result<AckOutcome, String> {
        let key = QueueKey { group: group.to_owned(), topic: topic.to_owned(), queue_id };
        if !self.pop.table().is_pending(&key, (handle.ck_offset, handle.pop_time), offset) {
            return Ok(AckOutcome::Stale);
        }
        let r = self.store.get_message(topic, queue_id, offset, 1, usize::MAX, &AcceptAll);
        let msg = r
            .messages
            .first()
            .filter(|_| r.status == GetMessageStatus::Found)
            .and_then(|rec| crate::store::commit_log::record::decode(rec, false))
            .filter(|m| m.queue_offset == offset);
        if let Some(msg) = msg {
            let dlq = dlq_topic(group);
            let (_, created) = self.topics.create_if_absent(&dlq, 1, perm::READ | perm::WRITE, 0);
            if created {
                self.topics_changed().await;
            }
            let mut props = message::parse_properties(&msg.properties);
            props.entry(property::RETRY_TOPIC.to_owned()).or_insert_with(|| origin.to_owned());
            let id = props.get(property::UNIQ_KEY).cloned().unwrap_or_default();
            props.insert(DLQ_ORIGIN_TOPIC.to_owned(), origin.to_owned());
            props.insert(DLQ_ORIGIN_MESSAGE_ID.to_owned(), id);
            let mut m = msg.to_store(dlq, 0, message::map_to_properties(&props));
            m.store_host = self.store_host;
            let put = self.store.put_messages(std::slice::from_ref(&m), false).await;
            if !matches!(put.status, PutStatus::PutOk | PutStatus::FlushDiskTimeout) {
                return Err(format!("{:?}", put.status));
            }
        }
        Ok(self.pop_ack(group, topic, queue_id, handle, offset).await)
    }
}
