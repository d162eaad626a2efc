//! The POP core over a real store: pop, ack, change, revive, long polling.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::core::Core;
use crate::meta::config::BrokerConfig;
use crate::model::group::SubscriptionGroupConfig;
use crate::model::message::MessageToStore;
use crate::store::AcceptAll;

fn core(dir: &std::path::Path) -> Arc<Core> {
    let config = BrokerConfig { store_path_root_dir: dir.to_owned(), ..BrokerConfig::default() };
    Arc::new(Core::open(config).unwrap())
}

async fn put(c: &Core, topic: &str, queue_id: i32, n: usize) {
    let msgs: Vec<MessageToStore> = (0..n)
        .map(|i| MessageToStore {
            topic: topic.into(),
            queue_id,
            flag: 0,
            body: bytes::Bytes::from(format!("m{i}")),
            properties: String::new(),
            tags_code: 0,
            born_timestamp: 1,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_host: c.store_host,
            sys_flag: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        })
        .collect();
    let r = c.store.put_messages(&msgs, false).await;
    assert!(matches!(r.status, crate::store::PutStatus::PutOk));
    c.store.await_dispatched(Duration::from_secs(5)).await;
}

fn req<'a>(queue_id: i32, max: usize, invisible: i64, poll: Duration) -> PopRequest<'a> {
    PopRequest {
        group: "g",
        topic: "T",
        queue_id,
        max_nums: max,
        invisible_ms: invisible,
        poll,
        init_from_min: false,
        retry_v2: false,
        filter: &AcceptAll,
        order: false,
        attempt: None,
    }
}

fn handle(p: &Popped, q: &PoppedQueue, m: &PoppedMessage) -> Handle {
    Handle {
        ck_offset: q.start_offset,
        pop_time: q.pop_time,
        invisible_time: p.invisible_time,
        revive_qid: 0,
        mark: TopicMark::of(&q.topic),
        broker_name: "b".into(),
        queue_id: q.queue_id,
        queue_offset: Some(m.queue_offset),
    }
}

#[tokio::test]
async fn popped_messages_are_hidden_and_acks_move_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    c.topics.create_if_absent("T", 1, 6, 0);
    put(&c, "T", 0, 3).await;
    let p = c.pop(&req(-1, 2, 60_000, Duration::ZERO)).await.unwrap();
    assert_eq!(p.count(), 2, "a new group with its queue in memory starts at 0");
    assert_eq!(p.rest, 1);
    let q = &p.queues[0];
    assert_eq!((q.start_offset, q.messages[0].queue_offset, q.messages[1].queue_offset), (0, 0, 1));
    let again = c.pop(&req(-1, 32, 60_000, Duration::ZERO)).await.unwrap();
    assert_eq!(again.count(), 1, "the first two are invisible");
    assert_eq!(c.offsets.query("g", "T", 0), 0);
    let h1 = handle(&p, q, &q.messages[1]);
    assert_eq!(c.pop_ack("g", "T", 0, &h1, 1).await, AckOutcome::Acked);
    assert_eq!(c.offsets.query("g", "T", 0), 0, "offset 0 is not acked yet");
    assert_eq!(c.pop_ack("g", "T", 0, &h1, 1).await, AckOutcome::Stale, "acked twice");
    let h0 = handle(&p, q, &q.messages[0]);
    assert_eq!(c.pop_ack("g", "T", 0, &h0, 0).await, AckOutcome::Acked);
    assert_eq!(c.offsets.query("g", "T", 0), 2);
    let forged = Handle { pop_time: h0.pop_time + 1, ..h0 };
    assert_eq!(c.pop_ack("g", "T", 0, &forged, 0).await, AckOutcome::Stale);
}

/// A core with one message on T/0, popped by `g` with a 1 s invisible time.
async fn one_popped() -> (tempfile::TempDir, Arc<Core>, Popped) {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    c.topics.create_if_absent("T", 1, 6, 0);
    put(&c, "T", 0, 1).await;
    let p = c.pop(&req(0, 1, 1_000, Duration::ZERO)).await.unwrap();
    (dir, c, p)
}

#[tokio::test]
async fn an_unacked_message_is_revived_to_the_retry_topic_and_a_stale_handle_does_not_ack_it() {
    let (_dir, c, p) = one_popped().await;
    let q = &p.queues[0];
    let old = handle(&p, q, &q.messages[0]);
    assert_eq!(c.revive_due(p.pop_time + 999).await, 0);
    assert_eq!(c.revive_due(p.pop_time + 1_000).await, 1);
    assert_eq!(c.offsets.query("g", "T", 0), 1, "revived: the queue moves on");
    c.store.await_dispatched(Duration::from_secs(5)).await;
    let again = c.pop(&req(-1, 32, 60_000, Duration::ZERO)).await.unwrap();
    assert_eq!(again.count(), 1);
    let rq = &again.queues[0];
    assert_eq!(rq.topic, "%RETRY%g_T");
    let msg = crate::store::commit_log::record::decode(&rq.messages[0].record, false).unwrap();
    assert_eq!(msg.reconsume_times, 1);
    assert_eq!(msg.body.as_ref(), b"m0");
    assert_eq!(c.pop_ack("g", "T", 0, &old, 0).await, AckOutcome::Stale, "the old handle");
    assert_eq!(c.pop_ack("g", &rq.topic, 0, &old, 0).await, AckOutcome::Stale, "the old handle on the retry topic");
    let new = handle(&again, rq, &rq.messages[0]);
    assert_eq!(c.pop_ack("g", &rq.topic, 0, &new, rq.messages[0].queue_offset).await, AckOutcome::Acked);
    assert_eq!(c.pop.checkpoints(), 0);
}

#[tokio::test]
async fn a_message_at_the_groups_retry_max_times_goes_to_the_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    let group = SubscriptionGroupConfig { retry_max_times: 0, ..SubscriptionGroupConfig::named("g") };
    c.groups.update(group);
    c.topics.create_if_absent("T", 1, 6, 0);
    put(&c, "T", 0, 1).await;
    let p = c.pop(&req(0, 1, 1_000, Duration::ZERO)).await.unwrap();
    assert_eq!(c.revive_due(p.pop_time + 1_000).await, 1);
    c.store.await_dispatched(Duration::from_secs(5)).await;
    assert_eq!(c.store.max_offset_in_queue("%DLQ%g", 0), 1, "delivered retryMaxTimes+1 = 1 time: dead");
    assert!(c.topics.view("%RETRY%g_T").is_none(), "not retried");
}

#[tokio::test]
async fn a_change_returns_a_new_handle_and_stales_the_old_one() {
    let (_dir, c, p) = one_popped().await;
    let q = &p.queues[0];
    let old = handle(&p, q, &q.messages[0]);
    let changed = c.pop_change_invisible("g", "T", 0, &old, 0, 60_000).await.unwrap();
    assert_eq!(c.revive_due(p.pop_time + 1_000).await, 0, "the old deadline no longer applies");
    assert_eq!(c.pop_ack("g", "T", 0, &old, 0).await, AckOutcome::Stale);
    assert!(c.pop_change_invisible("g", "T", 0, &old, 0, 60_000).await.is_none());
    let new = Handle { ck_offset: changed.start_offset, pop_time: changed.pop_time, ..old };
    assert_eq!(c.pop_ack("g", "T", 0, &new, 0).await, AckOutcome::Acked);
    assert_eq!(c.offsets.query("g", "T", 0), 1);
}

#[tokio::test]
async fn a_held_pop_is_woken_by_an_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    c.topics.create_if_absent("T", 2, 6, 0);
    let c2 = c.clone();
    let waiter =
        tokio::spawn(async move { c2.pop(&req(-1, 32, 60_000, Duration::from_secs(30))).await.unwrap().count() });
    while c.hold.held() == 0 {
        tokio::task::yield_now().await;
    }
    put(&c, "T", 1, 1).await;
    c.hold.message_arrived("T", 1); // the broker's dispatcher listener does this
    assert_eq!(waiter.await.unwrap(), 1);
}

#[tokio::test]
async fn pops_held_past_pop_polling_size_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        BrokerConfig { store_path_root_dir: dir.path().to_owned(), pop_polling_size: 1, ..BrokerConfig::default() };
    let c = Arc::new(Core::open(config).unwrap());
    c.topics.create_if_absent("T", 1, 6, 0);
    let c2 = c.clone();
    let held =
        tokio::spawn(async move { c2.pop(&req(-1, 1, 60_000, Duration::from_secs(30))).await.map(|p| p.count()) });
    while c.hold.held() == 0 {
        tokio::task::yield_now().await;
    }
    let full = c.pop(&req(-1, 1, 60_000, Duration::from_secs(30))).await;
    assert_eq!(full.err(), Some(PopError::PollingFull));
    assert_eq!(c.pop(&req(-1, 1, 60_000, Duration::ZERO)).await.map(|p| p.count()), Ok(0), "no hold: not counted");
    c.closing.cancel();
    assert_eq!(held.await.unwrap(), Ok(0));
}

#[test]
fn retry_topic_names_follow_key_builder() {
    assert_eq!(pop_retry_topic("T", "g", false), "%RETRY%g_T");
    assert_eq!(pop_retry_topic("T", "g", true), "%RETRY%g+T");
    assert_eq!(marked_topic(TopicMark::RetryV2, "T", "g"), "%RETRY%g+T");
}

#[tokio::test]
async fn a_restart_replays_checkpoints_and_acks_from_the_state_log() {
    let dir = tempfile::tempdir().unwrap();
    let (h0, pop_time) = {
        let c = core(dir.path());
        c.pop_restore().await;
        c.topics.create_if_absent("T", 1, 6, 0);
        put(&c, "T", 0, 3).await;
        let p = c.pop(&req(0, 3, 60_000, Duration::ZERO)).await.unwrap();
        let q = &p.queues[0];
        let h1 = handle(&p, q, &q.messages[1]);
        assert_eq!(c.pop_ack("g", "T", 0, &h1, 1).await, AckOutcome::Acked);
        c.persist_topics().await;
        c.store.await_dispatched(Duration::from_secs(5)).await;
        (handle(&p, q, &q.messages[0]), p.pop_time)
    };
    let c = core(dir.path());
    assert_eq!(c.pop_restore().await, 2, "one checkpoint, one ack");
    assert_eq!(c.offsets.query("g", "T", 0), 0);
    assert_eq!(c.pop(&req(0, 3, 60_000, Duration::ZERO)).await.unwrap().count(), 0, "all three still invisible");
    assert_eq!(c.pop_ack("g", "T", 0, &h0, 0).await, AckOutcome::Acked, "a handle from before the restart acks");
    let h1 = Handle { queue_offset: Some(1), ..h0.clone() };
    assert_eq!(c.pop_ack("g", "T", 0, &h1, 1).await, AckOutcome::Stale, "acked before the restart");
    assert_eq!(c.offsets.query("g", "T", 0), 2);
    assert_eq!(c.revive_due(pop_time + 60_000).await, 1, "offset 2 comes back");
}

/// A master holds pops and acks from its start until the state log is replayed: a pop that
/// came first (a client reconnecting as soon as the listener is open) would have started the
/// queue again at its first message, acked before the restart, as attempt 1.
#[tokio::test]
async fn pops_and_acks_wait_until_the_state_log_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let c = core(dir.path());
        c.pop_restore().await;
        c.topics.create_if_absent("T", 1, 6, 0);
        put(&c, "T", 0, 3).await;
        let p = c.pop(&req(0, 2, 60_000, Duration::ZERO)).await.unwrap();
        let q = &p.queues[0];
        for m in &q.messages {
            assert_eq!(c.pop_ack("g", "T", 0, &handle(&p, q, m), m.queue_offset).await, AckOutcome::Acked);
        }
        c.persist_topics().await;
        c.store.await_dispatched(Duration::from_secs(5)).await;
    }
    let c = core(dir.path());
    c.pop.hold_until_restored();
    let c2 = c.clone();
    let early = tokio::spawn(async move { c2.pop(&req(0, 3, 60_000, Duration::ZERO)).await });
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!early.is_finished(), "no pop is served before the replay");
    c.pop_restore().await;
    let p = early.await.unwrap().unwrap();
    let offsets: Vec<i64> = p.queues.iter().flat_map(|q| q.messages.iter().map(|m| m.queue_offset)).collect();
    assert_eq!(offsets, [2], "the two acked before the restart do not come again");
}

/// An orderly pop retried with its attempt id (a client that lost the answer) gets the same
/// unacked messages at once, their delivery counts unchanged, where another attempt waits for
/// the lock; the retry is replayed from the state log after a restart.
#[tokio::test]
async fn an_orderly_pop_retried_with_its_attempt_id_gets_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let popped = |p: &Popped| -> Vec<(i64, i32)> {
        p.queues.iter().flat_map(|q| q.messages.iter().map(|m| (m.queue_offset, m.order_count))).collect()
    };
    let ordered =
        |attempt: &'static str| PopRequest { order: true, attempt: Some(attempt), ..req(0, 3, 60_000, Duration::ZERO) };
    let pop_time = {
        let c = core(dir.path());
        c.pop_restore().await;
        c.topics.create_if_absent("T", 1, 6, 0);
        put(&c, "T", 0, 3).await;
        let p = c.pop(&ordered("a1")).await.unwrap();
        assert_eq!(popped(&p), [(0, 0), (1, 0), (2, 0)]);
        let q = &p.queues[0];
        assert_eq!(c.pop_ack("g", "T", 0, &handle(&p, q, &q.messages[0]), 0).await, AckOutcome::Acked);
        assert_eq!(popped(&c.pop(&ordered("a2")).await.unwrap()), [], "another attempt waits for the lock");
        assert_eq!(popped(&c.pop(&ordered("a1")).await.unwrap()), [(1, 0), (2, 0)], "the lost pop's messages");
        let p = c.pop(&ordered("a1")).await.unwrap();
        assert_eq!(popped(&p), [(1, 0), (2, 0)], "and again");
        c.persist_topics().await;
        c.store.await_dispatched(Duration::from_secs(5)).await;
        p.pop_time
    };
    let c = core(dir.path());
    c.pop_restore().await;
    assert_eq!(popped(&c.pop(&ordered("a3")).await.unwrap()), [], "the last pop's lock is replayed");
    assert_eq!(c.revive_due(pop_time + 60_000).await, 0, "an orderly checkpoint is rewound, not re-put");
    assert_eq!(popped(&c.pop(&ordered("a3")).await.unwrap()), [(1, 1), (2, 1)], "counted once, on expiry");
}
