//! Unit tests of `store::consume_queue` (through `use super::*`): they may import what it may, plus test crates.

use super::*;

fn unit(offset: i64) -> CqUnit {
    CqUnit { commit_log_offset: offset, size: 100, tags_code: 7 }
}

#[test]
fn put_is_idempotent_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::load(dir.path(), "T", 0, 5 * CQ_UNIT_SIZE).unwrap();
    for i in 0..7 {
        cq.put(unit(i * 100), i).unwrap();
    }
    cq.put(unit(300), 3).unwrap();
    assert_eq!(cq.max_offset_in_queue(), 7);
    assert_eq!(cq.unit(6), Some(unit(600)));
    assert_eq!(cq.units_from(5).unwrap().len(), 2 * CQ_UNIT_SIZE);
    assert_eq!(cq.units_from(2).unwrap().len(), 3 * CQ_UNIT_SIZE);
    assert_eq!(cq.max_physic_offset(), 700);
    assert_eq!(cq.roll_next_file(2), 5);
}

#[test]
fn queue_starting_mid_stream_is_padded() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::load(dir.path(), "T", 1, 5 * CQ_UNIT_SIZE).unwrap();
    cq.put(unit(5000), 7).unwrap();
    assert_eq!(cq.min_offset_in_queue(), 7);
    assert_eq!(cq.max_offset_in_queue(), 8);
    assert!(cq.unit(5).unwrap().is_blank());
    assert_eq!(cq.unit(7), Some(unit(5000)));
}

#[test]
fn recover_stops_at_first_invalid_unit_and_truncates() {
    let dir = tempfile::tempdir().unwrap();
    {
        let cq = ConsumeQueue::load(dir.path(), "T", 0, 5 * CQ_UNIT_SIZE).unwrap();
        for i in 0..8 {
            cq.put(unit(i * 100), i).unwrap();
        }
    }
    let cq = ConsumeQueue::load(dir.path(), "T", 0, 5 * CQ_UNIT_SIZE).unwrap();
    assert_eq!(cq.recover().unwrap(), 800);
    assert_eq!(cq.max_offset_in_queue(), 8);
    cq.truncate_dirty(450).unwrap();
    assert_eq!(cq.max_offset_in_queue(), 4, "units whose record ends past 450 go");
    assert_eq!(cq.max_physic_offset(), 400);
    cq.truncate_dirty(50).unwrap();
    assert_eq!(cq.max_offset_in_queue(), 0);
    cq.put(unit(0), 0).unwrap();
    assert_eq!(cq.max_offset_in_queue(), 1);
}

#[test]
fn expired_files_go_but_never_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::load(dir.path(), "T", 0, 5 * CQ_UNIT_SIZE).unwrap();
    for i in 0..12 {
        cq.put(unit(i * 100), i).unwrap();
    }
    assert_eq!(cq.delete_expired(720).unwrap(), 1);
    assert_eq!(cq.min_offset_in_queue(), 8);
    assert_eq!(cq.delete_expired(5000).unwrap(), 1);
    assert_eq!(cq.max_offset_in_queue(), 12);
}

#[test]
fn table_loads_existing_queues() {
    let dir = tempfile::tempdir().unwrap();
    {
        let t = ConsumeQueueTable::load(dir.path(), 100, starts(dir.path())).unwrap();
        t.get_or_create("A", 0).unwrap().put(unit(0), 0).unwrap();
        t.get_or_create("B", 3).unwrap().put(unit(100), 0).unwrap();
    }
    let t = ConsumeQueueTable::load(dir.path(), 100, starts(dir.path())).unwrap();
    assert_eq!(t.all().len(), 2);
    assert!(t.get("B", 3).is_some());
    t.remove_topic("A").unwrap();
    assert!(t.get("A", 0).is_none());
    assert!(!dir.path().join("A").exists());
}

#[test]
fn a_gap_is_padded_up_to_one_file_and_a_wild_jump_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::load(dir.path(), "T", 0, 5 * CQ_UNIT_SIZE).unwrap();
    cq.put(unit(0), 0).unwrap();
    cq.put(unit(100), 3).unwrap(); // a small gap: padded so offsets stay the record's
    assert_eq!(cq.max_offset_in_queue(), 4);
    assert!(cq.unit(1).unwrap().is_blank() && cq.unit(2).unwrap().is_blank());
    // A damaged queue offset far ahead: logged, not indexed, nothing padded.
    cq.put(unit(200), 1 << 40).unwrap();
    assert_eq!(cq.max_offset_in_queue(), 4);
    cq.put(unit(300), 4).unwrap();
    assert_eq!(cq.unit(4), Some(unit(300)));
}

#[test]
fn unit_ends_saturate() {
    let damaged = CqUnit { commit_log_offset: i64::MAX - 1, size: 100, tags_code: 0 };
    assert_eq!(damaged.end(), i64::MAX);
    assert!(!CqUnit { commit_log_offset: -5, size: 10, tags_code: 0 }.is_valid());
    assert!(!CqUnit { commit_log_offset: 5, size: -10, tags_code: 0 }.is_valid());
}

fn starts(dir: &std::path::Path) -> crate::store::log_start::LogStarts {
    crate::store::log_start::LogStarts::load(&dir.join("logStartOffset.json")).unwrap()
}

/// DeleteRecords and topic retention: the log start raises the min offset (never past the end,
/// never down), survives a reload, and goes with the topic.
#[test]
fn the_log_start_raises_the_min_offset_and_survives_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    {
        let t = ConsumeQueueTable::load(dir.path(), 100, starts(dir.path())).unwrap();
        let q = t.get_or_create("A", 0).unwrap();
        for i in 0..6 {
            q.put(unit(i * 100), i).unwrap();
        }
        assert_eq!(t.advance_log_start("A", 0, 4).unwrap(), 4);
        assert_eq!(q.min_offset_in_queue(), 4);
        assert_eq!(t.advance_log_start("A", 0, 2).unwrap(), 4, "never lowers");
        assert_eq!(t.advance_log_start("A", 0, 99).unwrap(), 6, "at most the end");
        assert_eq!(t.advance_log_start("B", 0, 3).unwrap(), 0, "no queue: nothing recorded");
    }
    let t = ConsumeQueueTable::load(dir.path(), 100, starts(dir.path())).unwrap();
    assert_eq!(t.get("A", 0).unwrap().min_offset_in_queue(), 6);
    t.remove_topic("A").unwrap();
    let q = t.get_or_create("A", 0).unwrap();
    q.put(unit(0), 0).unwrap();
    assert_eq!(q.min_offset_in_queue(), 0, "a re-created topic starts afresh");
}
