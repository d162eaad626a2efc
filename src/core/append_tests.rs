//! The shared append path, each outcome once (the front ends' tests only check how they word
//! the codes: `the_core_table_speaks_kafka`, `the_core_table_speaks_remoting`).

use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::meta::config::BrokerConfig;
use crate::model::message::MessageToStore;
use crate::model::perm;

fn core(dir: &std::path::Path, tweak: impl FnOnce(&mut BrokerConfig)) -> Core {
    let mut config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1024 * 1024,
        clean_file_forcibly_enable: false,
        ..BrokerConfig::default()
    };
    tweak(&mut config);
    Core::open(config).unwrap()
}

fn msg(topic: &str, body: usize) -> MessageToStore {
    MessageToStore {
        topic: topic.to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(vec![b'x'; body]),
        tags_code: 0,
        properties: String::new(),
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn write(protocol: Protocol, topic: &str, queue_id: i32, create: bool) -> TopicWrite<'_> {
    let create = create.then_some(AutoCreate { default_topic: "", queue_nums: 4, unit: false });
    TopicWrite { protocol, topic, queue_id, create }
}

const NOW: Durability = Durability {
    wait_flush: true,
    replicas: Replicas::After,
    replica_timeout: Duration::from_secs(1),
    deferred: false,
};

fn traffic(topic: &str) -> Traffic<'_> {
    Traffic { protocol: Protocol::Kafka, topic, kind: crate::telemetry::MessageType::Normal }
}

async fn outcome(c: &Core, w: TopicWrite<'_>) -> Option<Outcome> {
    c.writable_topic(&w).await.err().map(|r| r.outcome)
}

#[tokio::test]
async fn the_topic_checks_each_outcome_once() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path(), |_| {});
    c.topics.create_if_absent("T", 2, perm::READ | perm::WRITE, 0);
    c.topics.create_if_absent("RO", 1, perm::READ, 0);
    let (r, k) = (Protocol::Remoting, Protocol::Kafka);
    assert_eq!(outcome(&c, write(r, "T", 1, false)).await, None);
    assert_eq!(outcome(&c, write(k, "a/b", 0, false)).await, Some(Outcome::IllegalTopic));
    assert_eq!(outcome(&c, write(r, "a.b", 0, true)).await, Some(Outcome::IllegalTopic), "RocketMQ's rule");
    assert_eq!(outcome(&c, write(r, "SCHEDULE_TOPIC_XXXX", 0, true)).await, Some(Outcome::SendForbidden));
    assert_eq!(outcome(&c, write(k, "TBW102", 0, false)).await, Some(Outcome::SendForbidden));
    assert_eq!(outcome(&c, write(k, "nope", 0, false)).await, Some(Outcome::TopicNotExist));
    assert_eq!(outcome(&c, write(r, "RO", 0, true)).await, Some(Outcome::TopicNotWritable));
    assert_eq!(outcome(&c, write(r, "T", 2, false)).await, Some(Outcome::QueueIllegal));
    assert_eq!(outcome(&c, write(k, "T", -1, false)).await, Some(Outcome::QueueIllegal), "a partition must exist");
    // Auto-creation: from TBW102 while autoCreateTopicEnable, not after it is switched off.
    assert_eq!(outcome(&c, write(r, "made", 0, true)).await, None);
    assert!(c.topics.view("made").is_some());
    c.live.set_auto_create_topic_enable(false);
    assert_eq!(outcome(&c, write(r, "not-made", 0, true)).await, Some(Outcome::TopicNotExist));
    c.live.set_broker_permission(perm::READ);
    assert_eq!(outcome(&c, write(k, "T", 0, false)).await, Some(Outcome::BrokerNotWritable));
}

#[tokio::test]
async fn appends_are_stored_counted_or_refused_by_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path(), |cfg| cfg.max_message_size = 1024);
    let a = c.append(&[msg("T", 10), msg("T", 10)], NOW, traffic("T")).await.unwrap();
    assert_eq!((a.result.offsets.len(), a.result.queue_offset, a.shortfall), (2, 0, None));
    assert_eq!(c.stats.put_total(), 2);
    let big = c.append(&[msg("T", 4096)], NOW, traffic("T")).await.unwrap_err();
    assert_eq!(big.outcome, Outcome::MessageIllegal, "{big}");
    c.store.shutdown().unwrap();
    let down = c.append(&[msg("T", 10)], NOW, traffic("T")).await.unwrap_err();
    assert_eq!(down.outcome, Outcome::StoreUnavailable, "{down}");
    assert_eq!(c.stats.put_total(), 2, "refused appends are not counted");
}

#[tokio::test]
async fn a_sync_master_without_slaves_refuses_first_or_reports_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = core(dir.path(), |cfg| cfg.broker_role = "SYNC_MASTER".into());
    c.ha_service = Some(crate::ha::HaService::new(c.store.clone(), 1024));
    let first = Durability { replicas: Replicas::CheckFirst, ..NOW };
    let refused = c.append(&[msg("T", 10)], first, traffic("T")).await.unwrap_err();
    assert_eq!(refused.outcome, Outcome::NotEnoughReplicas);
    assert_eq!(c.store.commit_log_max_offset(), 0, "nothing stored");
    let after = c.append(&[msg("T", 10)], NOW, traffic("T")).await.unwrap();
    assert_eq!(after.shortfall.map(|r| r.outcome), Some(Outcome::SlaveLostAfterAppend), "stored, then reported");
    assert_eq!(after.result.queue_offset, 0, "the first record of the queue");
    let skip = Durability { replicas: Replicas::Skip, ..NOW };
    assert!(c.append(&[msg("T", 10)], skip, traffic("T")).await.unwrap().shortfall.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_of_appends_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path(), |_| {});
    let all = c.send_permits.acquire_many(APPEND_PERMITS as u32).await.unwrap();
    assert_eq!(c.admit(Protocol::Kafka).await.unwrap_err().outcome, Outcome::Busy);
    drop(all);
    assert!(c.admit(Protocol::Remoting).await.is_ok());
}
