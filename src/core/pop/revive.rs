//! Redelivery (`PopReviveService.reviveRetry`): a task sleeps until the earliest checkpoint
//! deadline (popTime + invisibleTime) and re-puts each message of it not acked by then to the
//! group's POP retry topic (queue 0, created on first use), with reconsumeTimes+1 and
//! `FIRST_POP_TIME` set on its first redelivery. A message already at the group's
//! retryMaxTimes goes to `%DLQ%{group}` instead (delivered retryMaxTimes+1 times in all). The
//! put wakes pops held on the retry topic through the dispatcher, like any arrival.
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use std::sync::Arc;
use std::time::Duration;

use super::persist::Rec;
use super::pop_retry_topic;
use super::state::Expired;
use crate::core::Core;
use crate::model::group::{dlq_topic, SubscriptionGroupConfig, RETRY_GROUP_TOPIC_PREFIX};
use crate::model::message;
use crate::model::perm;
use crate::store::{now_ms, AcceptAll, PutStatus};

/// `MessageConst.PROPERTY_FIRST_POP_TIME`.
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
/// Checkpoints revived per round.
const BATCH: usize = 256;
/// How often the state log's replay point is moved on.
const REPLAY_POINT_EVERY: Duration = Duration::from_secs(5);
/// A failed re-put is tried again this much later.
const RETRY_DELAY_MS: i64 = 1_000;

/// Runs until the broker closes: revives checkpoints as their deadlines pass.
pub async fn run(core: Arc<Core>) {
    loop {
        let next = core.pop.table().next_deadline();
        // The replay point moves on at least every few seconds.
        let sleep = match next {
            Some(d) => Duration::from_millis((d - now_ms()).max(0) as u64).min(REPLAY_POINT_EVERY),
            None => REPLAY_POINT_EVERY,
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = core.pop.wake.notified() => continue,
            _ = core.closing.cancelled() => return,
        }
        core.revive_due(now_ms()).await;
        core.pop_mark_replay_point();
    }
}

impl Core {
    /// Revives the checkpoints whose deadline is at or before `now`; returns how many messages
    /// were re-put.
    pub async fn revive_due(&self, now: i64) -> usize {
        let mut revived = 0;
        loop {
            let due = self.pop.table().take_expired(now, BATCH);
            if due.is_empty() {
                return revived;
            }
            for e in due {
                if e.order {
                    self.pop.table().rewind(&e.key, e.ck);
                    let (start, pop_time) = e.ck;
                    self.pop_log(&[Rec::Rewound { key: e.key.clone(), start, pop_time }]).await;
                    // A pop held on the queue reads it again, from the rewound offset.
                    self.hold.message_arrived(&e.key.topic, e.key.queue_id);
                    continue;
                }
                match self.revive_one(&e).await {
                    Ok(n) => {
                        revived += n;
                        {
                            let mut table = self.pop.table();
                            table.revived(&e);
                            if let Some(c) = table.committed(&e.key) {
                                self.offsets.commit(&e.key.group, &e.key.topic, e.key.queue_id, c);
                            }
                            table.forget_if_idle(&e.key);
                        }
                        let (start, pop_time) = e.ck;
                        self.pop_log(&[Rec::Revived { key: e.key.clone(), start, pop_time }]).await;
                    }
                    Err(why) => {
                        tracing::warn!(group = %e.key.group, topic = %e.key.topic, queue = e.key.queue_id, %why,
                            "pop revive failed, retried in 1 s");
                        self.pop.table().revive_later(&e, now_ms() + RETRY_DELAY_MS);
                    }
                }
            }
        }
    }

    async fn revive_one(&self, e: &Expired) -> Result<usize, String> {
        let mut n = 0;
        for &offset in &e.offsets {
            let r = self.store.get_message(&e.key.topic, e.key.queue_id, offset, 1, usize::MAX, &AcceptAll);
            let Some(record) = r.messages.first().filter(|_| r.status == crate::store::GetMessageStatus::Found) else {
                continue; // deleted by retention meanwhile: nothing left to redeliver
            };
            let Some(msg) = crate::store::commit_log::record::decode(record, false) else { continue };
            if msg.queue_offset != offset {
                continue; // filtered out of the pop: never delivered
            }
            self.repost(e, &msg).await?;
            n += 1;
        }
        Ok(n)
    }

    async fn repost(&self, e: &Expired, msg: &message::StoredMessage) -> Result<(), String> {
        let group = self.groups.get(&e.key.group).unwrap_or_else(|| SubscriptionGroupConfig::named(&e.key.group));
        let to_dlq = msg.reconsume_times >= group.retry_max_times;
        let topic = if to_dlq {
            dlq_topic(&e.key.group)
        } else if e.key.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            e.key.topic.clone()
        } else {
            pop_retry_topic(&e.key.topic, &e.key.group, self.config.enable_retry_topic_v2)
        };
        let (_, created) = self.topics.create_if_absent(&topic, 1, perm::READ | perm::WRITE, 0);
        if created {
            self.topics_changed().await;
        }
        let mut props = message::parse_properties(&msg.properties);
        if msg.reconsume_times == 0 || !props.contains_key(FIRST_POP_TIME) {
            props.insert(FIRST_POP_TIME.to_owned(), e.ck.1.to_string());
        }
        let mut m = msg.to_store(topic, 0, message::map_to_properties(&props));
        m.reconsume_times = msg.reconsume_times + 1;
        m.store_host = self.store_host;
        let r = self.store.put_messages(std::slice::from_ref(&m), false).await;
        match r.status {
            PutStatus::PutOk | PutStatus::FlushDiskTimeout => Ok(()),
            other => Err(format!("{other:?}")),
        }
    }
}
