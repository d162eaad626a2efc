//! The POP state log: every checkpoint, ack and revive is appended to the CommitLog on the
//! internal topic `rmq_sys_POP_STATE_<cluster>` (queue 0, permission 0: no client reads or
//! writes it), so it survives kill -9 and reaches slaves over HA like any message. At start the
//! table is rebuilt by replaying the log from the replay point, kept as the offset of the
//! internal group `CID_RMQ_SYS_POP_STATE` in consumerOffset.json: the lowest record a live
//! checkpoint needs, else the log's end. The offset file is written as one snapshot, so a replay
//! point in it never passes an ack whose consumer offset the same snapshot lacks.
//!
//! ```text
//!   ck  <group> <topic> <queue> <start> <popTime> <invisible> <next> <offset,offset...>
//!   ack <group> <topic> <queue> <start> <popTime> <offset>
//!   rv  <group> <topic> <queue> <start> <popTime>
//!   ock, rw: an orderly pop's checkpoint, and its rewind (`order.rs`)
//! ```
//! Names are validated where they enter (no spaces); a line that does not parse is skipped.
//! Java's revive log (`rmq_sys_REVIVE_LOG_<cluster>`) is not read.
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use super::state::{NewCk, QueueKey};
use crate::core::Core;
use crate::model::message::MessageToStore;
use crate::store::{AcceptAll, GetMessageStatus, PutStatus};

pub use crate::meta::names::POP_STATE_TOPIC_PREFIX as STATE_TOPIC_PREFIX;
/// The internal group whose offset on the state log is the replay point.
pub const REPLAY_GROUP: &str = "CID_RMQ_SYS_POP_STATE";

/// One state record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rec {
    Ck {
        key: QueueKey,
        start: i64,
        pop_time: i64,
        invisible: i64,
        next: i64,
        offsets: Vec<i64>,
        order: bool,
    },
    Ack {
        key: QueueKey,
        start: i64,
        pop_time: i64,
        offset: i64,
    },
    Revived {
        key: QueueKey,
        start: i64,
        pop_time: i64,
    },
    /// An orderly checkpoint expired: its queue was rewound (`order.rs`).
    Rewound {
        key: QueueKey,
        start: i64,
        pop_time: i64,
    },
    /// An orderly pop was retried with its attempt id: the queue was rewound, counts kept.
    RetryRewound {
        key: QueueKey,
        start: i64,
        pop_time: i64,
    },
}

impl Rec {
    pub fn encode(&self) -> String {
        let k = |k: &QueueKey| format!("{} {} {}", k.group, k.topic, k.queue_id);
        match self {
            Rec::Ck { key, start, pop_time, invisible, next, offsets, order } => {
                let list: Vec<String> = offsets.iter().map(i64::to_string).collect();
                let kind = if *order { "ock" } else { "ck" };
                format!("{kind} {} {start} {pop_time} {invisible} {next} {}", k(key), list.join(","))
            }
            Rec::Ack { key, start, pop_time, offset } => format!("ack {} {start} {pop_time} {offset}", k(key)),
            Rec::Revived { key, start, pop_time } => format!("rv {} {start} {pop_time}", k(key)),
            Rec::Rewound { key, start, pop_time } => format!("rw {} {start} {pop_time}", k(key)),
            Rec::RetryRewound { key, start, pop_time } => format!("rr {} {start} {pop_time}", k(key)),
        }
    }

    pub fn decode(s: &str) -> Option<Rec> {
        let f: Vec<&str> = s.split(' ').collect();
        let n = |i: usize| f.get(i)?.parse::<i64>().ok();
        let key = QueueKey {
            group: (*f.get(1)?).to_owned(),
            topic: (*f.get(2)?).to_owned(),
            queue_id: f.get(3)?.parse().ok()?,
        };
        let (start, pop_time) = (n(4)?, n(5)?);
        match (f[0], f.len()) {
            (kind @ ("ck" | "ock"), 9) => {
                let offsets = f[8].split(',').map(|o| o.parse().ok()).collect::<Option<Vec<i64>>>()?;
                let order = kind == "ock";
                Some(Rec::Ck { key, start, pop_time, invisible: n(6)?, next: n(7)?, offsets, order })
            }
            ("ack", 7) => Some(Rec::Ack { key, start, pop_time, offset: n(6)? }),
            ("rv", 6) => Some(Rec::Revived { key, start, pop_time }),
            ("rw", 6) => Some(Rec::Rewound { key, start, pop_time }),
            ("rr", 6) => Some(Rec::RetryRewound { key, start, pop_time }),
            _ => None,
        }
    }
}

impl Core {
    pub fn pop_state_topic(&self) -> String {
        format!("{STATE_TOPIC_PREFIX}{}", self.config.broker_cluster_name)
    }

    /// The state log's next offset: at or below where the next record lands.
    pub(crate) fn pop_state_end(&self) -> i64 {
        self.store.max_offset_in_queue(&self.pop_state_topic(), 0)
    }

    /// Appends `recs` to the state log (a failure is logged: the state then lives in memory only).
    pub(crate) async fn pop_log(&self, recs: &[Rec]) {
        if recs.is_empty() || self.config.is_slave() {
            return;
        }
        let topic = self.pop_state_topic();
        let msgs: Vec<MessageToStore> = recs
            .iter()
            .map(|r| MessageToStore {
                topic: topic.clone(),
                queue_id: 0,
                flag: 0,
                body: r.encode().into_bytes().into(),
                properties: String::new(),
                tags_code: 0,
                born_timestamp: crate::store::now_ms(),
                born_host: self.store_host,
                store_host: self.store_host,
                sys_flag: 0,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            })
            .collect();
        let r = self.store.put_messages(&msgs, false).await;
        if !matches!(r.status, PutStatus::PutOk | PutStatus::FlushDiskTimeout) {
            tracing::warn!(status = ?r.status, "pop state not logged; it is kept in memory only");
        }
    }

    /// Moves the replay point to the lowest record a live checkpoint needs.
    pub(crate) fn pop_mark_replay_point(&self) {
        let end = self.pop_state_end();
        let point = self.pop.table().min_rec().map_or(end, |r| r.min(end));
        let topic = self.pop_state_topic();
        // Only a move dirties consumerOffset.json.
        if self.offsets.query(REPLAY_GROUP, &topic, 0) != point {
            self.offsets.commit(REPLAY_GROUP, &topic, 0, point);
        }
    }

    /// Rebuilds the table from the state log (at start, before any pop is served); returns
    /// the records replayed.
    pub async fn pop_restore(&self) -> usize {
        let topic = self.pop_state_topic();
        let (_, created) = self.topics.create_if_absent(&topic, 1, 0, 0);
        if created {
            self.persist_topics().await;
        }
        self.store.await_dispatched(std::time::Duration::from_secs(10)).await;
        let mut offset = self.offsets.query(REPLAY_GROUP, &topic, 0).max(self.store.min_offset_in_queue(&topic, 0));
        let mut replayed = 0;
        loop {
            let r = self.store.get_message(&topic, 0, offset, 256, usize::MAX, &AcceptAll);
            if r.status != GetMessageStatus::Found || r.next_begin_offset <= offset {
                break;
            }
            let mut table = self.pop.table();
            for (i, slice) in r.messages.iter().enumerate() {
                let Some(m) = crate::store::commit_log::record::decode(slice, false) else { continue };
                let Some(rec) = std::str::from_utf8(&m.body).ok().and_then(Rec::decode) else { continue };
                replayed += 1;
                match rec {
                    Rec::Ck { key, start, pop_time, invisible, next, offsets, order } => {
                        let rec = m.queue_offset.min(offset + i as i64);
                        let ck = NewCk { start, pop_time, invisible, offsets: &offsets, next, rec, order };
                        table.record(&key, ck, true);
                    }
                    Rec::Ack { key, start, pop_time, offset } => {
                        table.ack(&key, (start, pop_time), offset);
                    }
                    Rec::Revived { key, start, pop_time } => table.drop_ck(&key, (start, pop_time)),
                    Rec::Rewound { key, start, pop_time } => table.rewind(&key, (start, pop_time)),
                    Rec::RetryRewound { key, start, pop_time } => table.rewind_retried(&key, (start, pop_time)),
                }
            }
            offset = r.next_begin_offset;
        }
        let mut table = self.pop.table();
        for key in table.keys() {
            if let Some(c) = table.committed(&key) {
                self.offsets.commit(&key.group, &key.topic, key.queue_id, c);
            }
            table.forget_if_idle(&key);
        }
        drop(table);
        self.pop.mark_restored();
        self.pop.wake.notify_one();
        replayed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn records_round_trip() {
        let key = QueueKey { group: "g".into(), topic: "%RETRY%g_T".into(), queue_id: 3 };
        for r in [
            Rec::Ck {
                key: key.clone(),
                start: 1,
                pop_time: 2,
                invisible: 3,
                next: 9,
                offsets: vec![1, 4, 8],
                order: false,
            },
            Rec::Ck { key: key.clone(), start: 1, pop_time: 2, invisible: 3, next: 9, offsets: vec![1], order: true },
            Rec::Rewound { key: key.clone(), start: 1, pop_time: 2 },
            Rec::RetryRewound { key: key.clone(), start: 1, pop_time: 2 },
            Rec::Ack { key: key.clone(), start: 1, pop_time: 2, offset: 4 },
            Rec::Revived { key, start: 1, pop_time: 2 },
        ] {
            assert_eq!(Rec::decode(&r.encode()), Some(r));
        }
        assert_eq!(Rec::decode("ck g T 0 1 2 3 4 "), None);
    }

    proptest! {
        #[test]
        fn any_line_decodes_or_is_skipped(s in ".{0,200}") {
            let _ = Rec::decode(&s);
        }
    }
}
