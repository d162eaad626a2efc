use super::*;
use bytes::Bytes;

fn msg(topic: &str, queue_id: i32, body: usize) -> MessageToStore {
    MessageToStore {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::from(vec![b'x'; body]),
        properties: "TAGS\u{1}A\u{2}".into(),
        tags_code: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

#[test]
fn appends_assign_offsets_and_roll_with_a_blank() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 1024, false).unwrap();
    let a = log.append(&[msg("T", 0, 300)], || 10).unwrap();
    assert_eq!(a.offsets, vec![0]);
    assert_eq!(a.queue_offset, 0);
    let b = log.append(&[msg("T", 0, 300)], || 11).unwrap();
    assert_eq!(b.queue_offset, 1);
    // A third does not fit in the 1024-byte segment: blank, then the next segment.
    let c = log.append(&[msg("T", 0, 300)], || 12).unwrap();
    assert_eq!(c.offsets, vec![1024]);
    assert_eq!(c.queue_offset, 2);
    let other = log.append(&[msg("U", 3, 10)], || 13).unwrap();
    assert_eq!(other.queue_offset, 0);
    let m = log.message(1024).unwrap();
    assert_eq!((m.queue_offset, m.store_timestamp, m.commit_log_offset), (2, 12, 1024));

    let mut seen = Vec::new();
    let end = log.scan_valid(0, true, |d| seen.push((d.topic.clone(), d.queue_offset)));
    assert_eq!(end, log.max_offset());
    assert_eq!(seen.len(), 4);
    assert!(log.append(&[msg("T", 0, 2000)], || 1).is_err(), "larger than a segment");
}

#[test]
fn batch_records_are_consecutive() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
    let r = log.append(&[msg("T", 1, 5), msg("T", 1, 6), msg("T", 1, 7)], || 5).unwrap();
    assert_eq!(r.offsets.len(), 3);
    for (i, off) in r.offsets.iter().enumerate() {
        let m = log.message(*off as u64).unwrap();
        assert_eq!(m.queue_offset, i as i64);
        assert_eq!(m.body.len(), 5 + i);
    }
    assert_eq!(log.append(&[msg("T", 1, 5)], || 6).unwrap().queue_offset, 3);
}

#[test]
fn torn_tail_is_found_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let end_of_two = {
        let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
        log.append(&[msg("T", 0, 100)], || 1).unwrap();
        let r = log.append(&[msg("T", 0, 100)], || 2).unwrap();
        log.append(&[msg("T", 0, 100)], || 3).unwrap();
        r.end_offset
    };
    // Corrupt the third record's body.
    let path = dir.path().join("00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[end_of_two as usize + 90] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();

    let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
    let end = log.scan_valid(0, true, |_| {});
    assert_eq!(end, end_of_two);
    log.truncate(end).unwrap();
    assert_eq!(log.max_offset(), end_of_two);
    log.set_queue_offset("T", 0, 2);
    let r = log.append(&[msg("T", 0, 1)], || 4).unwrap();
    assert_eq!((r.offsets[0] as u64, r.queue_offset), (end_of_two, 2));
}
