//! The one way a message gets into the store, for every door: flow control ([`Core::admit`]),
//! the topic checks of Java's `msgCheck` ([`Core::writable_topic`]), and the put with its flush
//! and replica waits, statistics and metrics ([`Core::append`]). A RocketMQ send and a Kafka
//! produce differ only in what they ask for ([`TopicWrite`], [`Durability`]) and in how they
//! word the answer ([`super::outcome`]).
//!
//! May import: `model`, `store`, `meta`, `ha`, `telemetry`.

use std::time::Duration;

use tokio::sync::SemaphorePermit;

use super::outcome::{Outcome, Refusal};
use super::{Core, Protocol};
use crate::ha::master::ReplicaWait;
use crate::meta::topic::{TopicView, NOT_ALLOWED_SEND_TOPICS};
use crate::model::group::RETRY_GROUP_TOPIC_PREFIX;
use crate::model::message::MessageToStore;
use crate::model::name::shown;
use crate::model::{perm, DEFAULT_TOPIC};
use crate::store::commit_log::AppendResult;
use crate::telemetry::MessageType;

/// How long an append may wait for its turn before it is refused as busy (Java's
/// `waitTimeMillsInSendQueue`).
pub const WAIT_IN_SEND_QUEUE: Duration = Duration::from_millis(200);

/// What an append asks of the topic.
pub struct TopicWrite<'a> {
    pub protocol: Protocol,
    pub topic: &'a str,
    /// The queue (partition) written; a negative id lets the caller pick one afterwards
    /// (RocketMQ only: a Kafka partition must exist).
    pub queue_id: i32,
    /// Create the topic when it is unknown (RocketMQ's send); `None` refuses it (Kafka produce:
    /// Kafka clients create topics through Metadata or CreateTopics).
    pub create: Option<AutoCreate<'a>>,
}

/// `msgCheck`'s auto-creation: from `default_topic` (TBW102 unless the producer names another)
/// when that topic may be inherited; a retry topic falls back to one queue.
pub struct AutoCreate<'a> {
    pub default_topic: &'a str,
    pub queue_nums: i32,
    /// Unit mode marks the new topic (`FLAG_UNIT`, `FLAG_UNIT_SUB` for a retry topic).
    pub unit: bool,
}

/// When an append counts as done.
#[derive(Clone, Copy, Debug)]
pub struct Durability {
    /// Wait for the flush under SYNC_FLUSH (RocketMQ's WAIT property; Kafka acks != 0).
    pub wait_flush: bool,
    /// Wait for the slaves of a SYNC_MASTER.
    pub replicas: Replicas,
    /// How long the slaves may take.
    pub replica_timeout: Duration,
    /// Leave the records in the CommitLog's write buffer for the connection's writer to commit
    /// with the answers of other requests (RocketMQ's send; never with a replica wait, which
    /// ships written records only).
    pub deferred: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// Answer without the slaves (ASYNC_MASTER, a Kafka acks=1, or the producer did not wait).
    Skip,
    /// Wait after the put (RocketMQ: SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT on the stored message).
    After,
    /// Kafka acks=all: refuse before the put when too few slaves are in sync
    /// (`min.insync.replicas`: NOT_ENOUGH_REPLICAS stores nothing), then wait after it.
    CheckFirst,
}

/// What one append is, for statistics and metrics.
#[derive(Clone, Copy, Debug)]
pub struct Traffic<'a> {
    pub protocol: Protocol,
    pub topic: &'a str,
    pub kind: MessageType,
}

/// A stored append. `shortfall` is set when the records are stored but not as durable as
/// asked (flush or slave timeout): the answer is an error, the offsets are still real.
#[derive(Debug)]
pub struct Appended {
    pub result: AppendResult,
    pub shortfall: Option<Refusal>,
}

impl Core {
    /// Flow control: a permit for one append, or [`Outcome::Busy`] when appends have queued
    /// up for [`WAIT_IN_SEND_QUEUE`] (the store is behind).
    pub async fn admit(&self, protocol: Protocol) -> Result<SemaphorePermit<'_>, Refusal> {
        // Most appends find a permit at once: no timer for them.
        if let Ok(p) = self.send_permits.try_acquire() {
            return Ok(p);
        }
        match tokio::time::timeout(WAIT_IN_SEND_QUEUE, self.send_permits.acquire()).await {
            Ok(Ok(p)) => Ok(p),
            _ => {
                if let Some(node) = self.metrics.as_deref() {
                    crate::telemetry::flow_control_refused(node, protocol);
                }
                Err(Refusal::new(
                    Outcome::Busy,
                    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, the store is behind",
                ))
            }
        }
    }

    /// `msgCheck`: the broker and the topic writable, the name valid for the door it came
    /// through and not the broker's own, the topic known or auto-created (and registered with
    /// the NameServers before this returns), the queue in range.
    pub async fn writable_topic(&self, w: &TopicWrite<'_>) -> Result<TopicView, Refusal> {
        let topic = w.topic;
        if !perm::is_writeable(self.live.broker_permission()) {
            let why = format!("the broker[{}] sending message is forbidden", self.config.broker_name);
            return Err(Refusal::new(Outcome::BrokerNotWritable, why));
        }
        match w.protocol {
            Protocol::Remoting | Protocol::Grpc => crate::model::name::check_topic(topic)
                .map_err(|e| Refusal::new(Outcome::IllegalTopic, e.to_string()))?,
            Protocol::Kafka if !crate::meta::names::valid_kafka_topic(topic) => {
                let why =
                    format!("'{}' is not a valid Kafka topic name ([a-zA-Z0-9._-], 1 to 249 characters)", shown(topic));
                return Err(Refusal::new(Outcome::IllegalTopic, why));
            }
            Protocol::Kafka => {}
        }
        let forbidden = match w.protocol {
            Protocol::Remoting | Protocol::Grpc => NOT_ALLOWED_SEND_TOPICS.contains(&topic),
            // Kafka clients never write RocketMQ's own topics.
            Protocol::Kafka => self.is_system_topic(topic),
        };
        if forbidden {
            let why = format!("Sending message to topic[{topic}] is forbidden.");
            return Err(Refusal::new(Outcome::SendForbidden, why));
        }
        let view = match (self.topics.view(topic), &w.create) {
            (Some(v), _) => v,
            (None, Some(create)) => self.create_in_send(topic, create).await?,
            (None, None) => {
                let why = format!("{topic}-{} is not served here", w.queue_id);
                return Err(Refusal::new(Outcome::TopicNotExist, why));
            }
        };
        if !perm::is_writeable(view.perm) {
            let why = format!("the topic[{topic}] sending message is forbidden");
            return Err(Refusal::new(Outcome::TopicNotWritable, why));
        }
        let (limit, low) = match w.protocol {
            // Java checks against the larger of the two queue counts.
            Protocol::Remoting => (view.write_queue_nums.max(view.read_queue_nums), i32::MIN),
            Protocol::Kafka | Protocol::Grpc => (view.write_queue_nums, 0),
        };
        if w.queue_id >= limit || w.queue_id < low {
            let why = format!(
                "request queueId[{}] is illegal, {topic} writeQueueNums {} readQueueNums {}",
                w.queue_id, view.write_queue_nums, view.read_queue_nums
            );
            return Err(Refusal::new(Outcome::QueueIllegal, why));
        }
        Ok(view)
    }

    async fn create_in_send(&self, topic: &str, c: &AutoCreate<'_>) -> Result<TopicView, Refusal> {
        let retry = topic.starts_with(RETRY_GROUP_TOPIC_PREFIX);
        let sys_flag = match (c.unit, retry) {
            (false, _) => 0,
            (true, true) => perm::FLAG_UNIT_SUB,
            (true, false) => perm::FLAG_UNIT,
        };
        let default = if c.default_topic.is_empty() { DEFAULT_TOPIC } else { c.default_topic };
        let auto_create = self.live.auto_create_topic_enable();
        let created = self
            .topics
            .create_in_send(topic, default, c.queue_nums, sys_flag, auto_create)
            .or_else(|| retry.then(|| self.topics.create_if_absent(topic, 1, perm::READ | perm::WRITE, sys_flag).0));
        let Some(tc) = created else {
            let why = format!("topic[{topic}] not exist, apply first please! See http://rocketmq.apache.org/docs/faq/");
            return Err(Refusal::new(Outcome::TopicNotExist, why));
        };
        self.topics_changed().await;
        Ok(TopicView::of(&tc))
    }

    /// Puts `msgs` (one queue's, in order) and waits as `how` says; counts them in the
    /// statistics and the `rocketmq_messages_in_total` family with the door's `protocol` label.
    pub async fn append(&self, msgs: &[MessageToStore], how: Durability, t: Traffic<'_>) -> Result<Appended, Refusal> {
        self.check_replicas(how)?;
        let needed = self.replicas_needed(how.replicas);
        let started = std::time::Instant::now();
        let put = if how.deferred && needed.is_none() {
            self.store.put_messages_deferred(msgs, how.wait_flush).await
        } else {
            self.store.put_messages(msgs, how.wait_flush).await
        };
        let refusal = Outcome::of_put(&put.status);
        let Some(result) = put.append else {
            self.stats.put_failed();
            return Err(refusal.unwrap_or_else(|| Refusal::new(Outcome::StoreFailed, "stored nothing")));
        };
        let (stored_topic, queue_id) = msgs.first().map_or((t.topic, 0), |m| (m.topic.as_str(), m.queue_id));
        self.count_in(&result, t, stored_topic, queue_id, started.elapsed().as_millis() as u64);
        let shortfall = match refusal {
            Some(r) => Some(r),
            None if how.wait_flush => self.wait_replicas(result.end_offset, how).await,
            None => None,
        };
        Ok(Appended { result, shortfall })
    }

    /// [`Replicas::CheckFirst`]: enough slaves in sync to take an append now. [`Self::append`]
    /// checks it; a door that has more to decide before appending may check it first too.
    pub fn check_replicas(&self, how: Durability) -> Result<(), Refusal> {
        if let (Some((ha, needed)), Replicas::CheckFirst) = (self.replicas_needed(how.replicas), how.replicas) {
            let in_sync = ha.in_sync_slaves();
            if in_sync < needed {
                let why = format!("{in_sync} of {needed} slaves in sync; not appended");
                return Err(Refusal::new(Outcome::NotEnoughReplicas, why));
            }
        }
        Ok(())
    }

    /// For records stored before (a replayed idempotent batch): the flush and replica waits a
    /// fresh append of them would have had.
    pub async fn wait_durable(&self, end_offset: u64, how: Durability) -> Option<Refusal> {
        if how.wait_flush {
            if let Some(r) = Outcome::of_put(&self.store.wait_flushed(end_offset).await) {
                return Some(r);
            }
        }
        self.wait_replicas(end_offset, how).await
    }

    /// The replication service and how many slaves must hold an append (SYNC_MASTER).
    fn replicas_needed(&self, replicas: Replicas) -> Option<(&crate::ha::HaService, usize)> {
        let needed = self.config.replicas_to_wait_for();
        let ha = self.ha_service.as_deref().filter(|_| needed > 0 && replicas != Replicas::Skip)?;
        Some((ha, needed))
    }

    async fn wait_replicas(&self, end_offset: u64, how: Durability) -> Option<Refusal> {
        let (ha, needed) = self.replicas_needed(how.replicas)?;
        match ha.wait_for_replicas(end_offset, needed, how.replica_timeout.max(Duration::from_millis(1))).await {
            ReplicaWait::Ok => None,
            ReplicaWait::NoSlave => Some(Refusal::new(Outcome::SlaveLostAfterAppend, "slave not available")),
            ReplicaWait::Timeout => Some(Refusal::new(Outcome::SlaveTimeout, "wait slave ack timeout")),
        }
    }

    /// A message the broker moved itself, a due delayed or timer message stored on its own topic,
    /// counted as Java's `ScheduleMessageService` and `TimerMessageStore` count it: one put on
    /// that topic (the send counted it under the schedule or timer topic).
    pub fn count_delivery(&self, msg: &MessageToStore, put: &crate::store::PutMessageResult) {
        if let Some(a) = &put.append {
            let system = self.is_system_topic(&msg.topic);
            self.stats.put(&msg.topic, msg.queue_id, 1, a.wrote_bytes as u64, 0, system);
        }
    }

    /// The statistics count the put under the topic it is stored on (`stored_topic`), as Java's
    /// `msg.getTopic()` after the store's hooks: a delayed send under SCHEDULE_TOPIC_XXXX, a half
    /// message under RMQ_SYS_TRANS_HALF_TOPIC; the delivery or the commit counts it under its own
    /// topic later. The metrics label it with the topic the client named.
    fn count_in(&self, r: &AppendResult, t: Traffic<'_>, stored_topic: &str, queue_id: i32, elapsed_ms: u64) {
        let count = r.offsets.len() as u64;
        let bytes = r.wrote_bytes as u64;
        self.stats.put(stored_topic, queue_id, count, bytes, elapsed_ms, self.is_system_topic(stored_topic));
        let system = self.is_system_topic(t.topic);
        if crate::model::group::is_retry_or_dlq_topic(t.topic) {
            return;
        }
        if let Some(node) = self.metrics.as_deref() {
            crate::telemetry::messages_in(node, t.protocol, t.topic, t.kind, system, count, bytes);
        }
    }
}
