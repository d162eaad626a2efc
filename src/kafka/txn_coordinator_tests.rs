//! Every transition of the coordinator's state machine, fencing and timeouts.

use super::*;

fn limits() -> Limits {
    Limits { max_timeout_ms: 900_000, expiration_ms: 1000, max_ids: 3 }
}

struct Ids(i64);

impl Ids {
    fn alloc(&mut self) -> impl FnMut() -> Option<i64> + '_ {
        move || {
            self.0 += 1;
            Some(self.0)
        }
    }
}

fn ready(t: &mut Txns, ids: &mut Ids, id: &str, now: i64) -> (i64, i16) {
    match t.init(&limits(), id, 60_000, None, now, &mut ids.alloc()).unwrap() {
        Init::Ready { producer_id, epoch } => (producer_id, epoch),
        other => panic!("{other:?}"),
    }
}

fn part(topic: &str, p: i32) -> (String, i32, i64) {
    (topic.to_owned(), p, 100)
}

#[test]
fn init_gives_one_id_per_transactional_id_and_bumps_the_epoch_each_time() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    assert_eq!(ready(&mut t, &mut ids, "a", 0), (1, 0));
    assert_eq!(ready(&mut t, &mut ids, "a", 1), (1, 1));
    assert_eq!(ready(&mut t, &mut ids, "b", 1), (2, 0));
    // KIP-360: a producer naming its current id and epoch bumps; a retry naming the previous
    // epoch gets the same epoch again; anything else is fenced.
    let l = limits();
    assert_eq!(
        t.init(&l, "a", 60_000, Some((1, 1)), 2, &mut ids.alloc()),
        Ok(Init::Ready { producer_id: 1, epoch: 2 })
    );
    assert_eq!(
        t.init(&l, "a", 60_000, Some((1, 1)), 2, &mut ids.alloc()),
        Ok(Init::Ready { producer_id: 1, epoch: 2 })
    );
    assert_eq!(t.init(&l, "a", 60_000, Some((7, 0)), 2, &mut ids.alloc()), Err(error::PRODUCER_FENCED));
    assert_eq!(t.init(&l, "a", 60_000, Some((1, 0)), 2, &mut ids.alloc()), Err(error::PRODUCER_FENCED));
    assert_eq!(t.init(&l, "a", 900_001, None, 2, &mut ids.alloc()), Err(error::INVALID_TRANSACTION_TIMEOUT));
    assert_eq!(t.init(&l, "a", 0, None, 2, &mut ids.alloc()), Err(error::INVALID_TRANSACTION_TIMEOUT));
}

#[test]
fn an_exhausted_epoch_gets_a_new_producer_id() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    ready(&mut t, &mut ids, "a", 0);
    t.ids.get_mut("a").unwrap().producer_epoch = i16::MAX - 2;
    assert_eq!(ready(&mut t, &mut ids, "a", 1), (1, i16::MAX - 1));
    let exhausted = Some((1, i16::MAX - 1));
    let rotated = t.init(&limits(), "a", 60_000, exhausted, 2, &mut ids.alloc());
    assert_eq!(rotated, Ok(Init::Ready { producer_id: 2, epoch: 0 }), "a new id, epoch 0");
    // A retry of that request (its answer lost) gets the same answer, not a fence.
    let retried = t.init(&limits(), "a", 60_000, exhausted, 3, &mut ids.alloc());
    assert_eq!(retried, Ok(Init::Ready { producer_id: 2, epoch: 0 }));
    assert_eq!(ready(&mut t, &mut ids, "a", 4), (2, 1));
}

#[test]
fn a_transaction_goes_ongoing_prepare_complete_and_retries_are_answered_as_kafka() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    let (pid, epoch) = ready(&mut t, &mut ids, "a", 0);
    assert_eq!(t.end("a", pid, epoch, true, 1), Err(error::INVALID_TXN_STATE), "Empty: nothing to end");
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 0)], 10), Ok(true));
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 0)], 11), Ok(false), "already in");
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 1)], 12), Ok(true));
    assert_eq!(t.ids["a"].start_ms, 10);
    assert_eq!(t.add_offsets("a", pid, epoch, "g", 13), Ok(true));
    let off = |o: i64| PendingOffset {
        group: "g".into(),
        topic: "T".into(),
        partition: 0,
        offset: o,
        metadata: String::new(),
    };
    let other = PendingOffset { group: "h".into(), ..off(1) };
    assert_eq!(t.commit_offsets("a", pid, epoch, vec![other], error::INVALID_TXN_STATE), Err(error::INVALID_TXN_STATE));
    t.commit_offsets("a", pid, epoch, vec![off(5)], error::INVALID_TXN_STATE).unwrap();
    t.commit_offsets("a", pid, epoch, vec![off(7)], error::INVALID_TXN_STATE).unwrap();
    let c = t.end("a", pid, epoch, true, 20).unwrap().unwrap();
    assert!(c.commit);
    assert_eq!(c.partitions.iter().map(|p| p.partition).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(c.offsets, vec![off(7)], "the last offset per partition");
    assert_eq!(t.ids["a"].state, TxnState::PrepareCommit);
    // While the markers are written every request waits.
    assert_eq!(t.end("a", pid, epoch, true, 21), Err(error::CONCURRENT_TRANSACTIONS));
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 0)], 21), Err(error::CONCURRENT_TRANSACTIONS));
    assert_eq!(t.init(&limits(), "a", 60_000, None, 21, &mut ids.alloc()), Err(error::CONCURRENT_TRANSACTIONS));
    assert_eq!(t.verify_produce("a", pid, epoch, "T", 0, error::INVALID_TXN_STATE), Err(error::NOT_ENOUGH_REPLICAS));
    t.complete(&c, 22);
    let m = &t.ids["a"];
    assert_eq!((m.state, m.partitions.len(), m.offsets.len(), m.completing), (TxnState::CompleteCommit, 0, 0, false));
    assert_eq!(t.end("a", pid, epoch, true, 23), Ok(None), "a retried commit");
    assert_eq!(t.end("a", pid, epoch, false, 23), Err(error::INVALID_TXN_STATE), "abort after commit");
    // The next transaction starts afresh; an abort drops its offsets.
    t.add_offsets("a", pid, epoch, "g", 30).unwrap();
    t.commit_offsets("a", pid, epoch, vec![off(9)], error::INVALID_TXN_STATE).unwrap();
    let c = t.end("a", pid, epoch, false, 31).unwrap().unwrap();
    assert!(!c.commit && c.offsets.is_empty());
    t.complete(&c, 32);
    assert_eq!(t.ids["a"].state, TxnState::CompleteAbort);
    assert_eq!(t.end("a", pid, epoch, false, 33), Ok(None));
    assert_eq!(t.end("a", pid, epoch, true, 33), Err(error::INVALID_TXN_STATE));
}

#[test]
fn a_new_init_fences_the_zombie_and_aborts_its_transaction() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    let (pid, epoch) = ready(&mut t, &mut ids, "a", 0);
    t.add_partitions("a", pid, epoch, &[part("T", 0)], 1).unwrap();
    t.verify_produce("a", pid, epoch, "T", 0, error::INVALID_TXN_STATE).unwrap();
    t.appended("a");
    let Ok(Init::Fence(c)) = t.init(&limits(), "a", 60_000, None, 2, &mut ids.alloc()) else { panic!() };
    assert!(!c.commit);
    assert_eq!(c.producer_epoch, epoch + 1, "the abort marker carries the fencing epoch");
    assert_eq!(t.init(&limits(), "a", 60_000, None, 3, &mut ids.alloc()), Err(error::CONCURRENT_TRANSACTIONS));
    t.complete(&c, 4);
    assert_eq!(ready(&mut t, &mut ids, "a", 5), (pid, epoch + 2));
    // The zombie: every request with its old epoch is fenced.
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 0)], 6), Err(error::PRODUCER_FENCED));
    assert_eq!(t.end("a", pid, epoch, true, 6), Err(error::PRODUCER_FENCED));
    assert_eq!(t.add_offsets("a", pid, epoch, "g", 6), Err(error::PRODUCER_FENCED));
    assert_eq!(t.verify_produce("a", pid, epoch, "T", 0, error::INVALID_TXN_STATE), Err(error::INVALID_PRODUCER_EPOCH));
    assert_eq!(t.add_partitions("a", pid + 1, epoch + 2, &[part("T", 0)], 6), Err(error::INVALID_PRODUCER_ID_MAPPING));
    assert_eq!(t.add_partitions("nobody", pid, epoch, &[part("T", 0)], 6), Err(error::INVALID_PRODUCER_ID_MAPPING));
}

#[test]
fn produce_is_verified_against_the_ongoing_transaction() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    let (pid, epoch) = ready(&mut t, &mut ids, "a", 0);
    let abortable = error::TRANSACTION_ABORTABLE;
    assert_eq!(t.verify_produce("a", pid, epoch, "T", 0, abortable), Err(abortable), "no transaction yet");
    t.add_partitions("a", pid, epoch, &[part("T", 0)], 1).unwrap();
    assert_eq!(t.verify_produce("a", pid, epoch, "T", 1, abortable), Err(abortable), "partition not added");
    t.verify_produce("a", pid, epoch, "T", 0, abortable).unwrap();
    assert!(t.inflight("a"));
    t.appended("a");
    assert!(!t.inflight("a"));
}

#[test]
fn timeouts_fence_and_abort_and_leftover_prepares_are_completed() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    let (pid, epoch) = ready(&mut t, &mut ids, "a", 0);
    t.add_partitions("a", pid, epoch, &[part("T", 0)], 1000).unwrap();
    assert!(t.due(1000 + 60_000).is_empty(), "not past its timeout yet");
    let due = t.due(1000 + 60_001);
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].commit, due[0].producer_epoch), (false, epoch + 1));
    assert!(t.due(1000 + 60_002).is_empty(), "being completed");
    t.complete(&due[0], 70_000);
    assert_eq!(t.add_partitions("a", pid, epoch, &[part("T", 0)], 70_001), Err(error::PRODUCER_FENCED));
    // A Prepare state read back after a crash (not being completed) is completed by the sweeper.
    let (pid, epoch) = ready(&mut t, &mut ids, "b", 0);
    t.add_partitions("b", pid, epoch, &[part("T", 1)], 1).unwrap();
    let c = t.end("b", pid, epoch, true, 2).unwrap().unwrap();
    t.completion_failed(&c);
    assert_eq!(t.due(3), vec![c]);
}

#[test]
fn ids_are_bounded_and_idle_ones_expire() {
    let (mut t, mut ids) = (Txns::default(), Ids(0));
    for id in ["a", "b", "c"] {
        ready(&mut t, &mut ids, id, 0);
    }
    let (pid, epoch) = (t.ids["c"].producer_id, t.ids["c"].producer_epoch);
    t.add_partitions("c", pid, epoch, &[part("T", 0)], 500).unwrap();
    assert_eq!(t.init(&limits(), "d", 60_000, None, 999, &mut ids.alloc()), Err(error::COORDINATOR_NOT_AVAILABLE));
    // After transactional.id.expiration.ms the idle ones go; the one with a transaction stays.
    assert!(matches!(t.init(&limits(), "d", 60_000, None, 1000, &mut ids.alloc()), Ok(Init::Ready { .. })));
    assert_eq!(t.ids.keys().collect::<Vec<_>>(), ["c", "d"]);
    assert!(check_transactional_id("").is_err());
    assert!(check_transactional_id(&"x".repeat(MAX_ID_LEN + 1)).is_err());
    assert!(check_transactional_id("a\nb").is_err());
    assert!(check_transactional_id("app-0_1.x").is_ok());
}
