//! Unit tests of `store::commit_log::record` (through `use super::*`): they may import what it may, plus test crates.

use super::*;
use proptest::prelude::*;

fn msg(topic: &str, body: &[u8], props: &str) -> MessageToStore {
    MessageToStore {
        topic: topic.into(),
        queue_id: 3,
        flag: 7,
        body: Bytes::copy_from_slice(body),
        properties: props.into(),
        tags_code: 0,
        born_timestamp: 1_700_000_000_123,
        born_host: "10.0.0.9:55555".parse().unwrap(),
        store_host: "10.0.0.7:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 2,
        prepared_transaction_offset: 0,
    }
}

fn encoded(m: &MessageToStore, queue_offset: i64, phys: i64, ts: i64) -> Vec<u8> {
    let mut buf = Vec::new();
    let p = encode(m, &mut buf);
    patch(&mut buf, p, queue_offset, phys, ts);
    buf
}

#[test]
fn layout_matches_java_offsets() {
    let m = msg("TopicTest", b"hello", "TAGS\u{1}TagA\u{2}");
    let buf = encoded(&m, 5, 4096, 1_700_000_000_999);
    assert_eq!(buf.len(), 91 + 5 + 9 + m.properties.len());
    assert_eq!(&buf[4..8], &MAGIC_V1.to_be_bytes());
    assert_eq!(i64::from_be_bytes(buf[20..28].try_into().unwrap()), 5);
    assert_eq!(i64::from_be_bytes(buf[28..36].try_into().unwrap()), 4096);
    assert_eq!(i64::from_be_bytes(buf[56..64].try_into().unwrap()), 1_700_000_000_999);
    assert_eq!(&buf[64..68], &[10, 0, 0, 7]);
    assert_eq!(i32::from_be_bytes(buf[84..88].try_into().unwrap()), 5);
}

#[test]
fn check_extracts_dispatch_fields() {
    let m = msg("TopicTest", b"hello", "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}ABC\u{2}");
    let buf = encoded(&m, 5, 4096, 9);
    let RecordCheck::Record(d) = check(&buf, true) else { panic!("not a record") };
    assert_eq!(d.tags_code, 2598919);
    assert_eq!(d.queue_offset, 5);
    assert_eq!(d.commit_log_offset, 4096);
    assert_eq!(d.size as usize, buf.len());
    assert_eq!(d.keys(), Some("k1 k2"));
    assert_eq!(d.uniq_key(), Some("ABC"));
}

#[test]
fn long_topics_use_v2_and_ipv6_hosts_set_flags() {
    let mut m = msg(&"t".repeat(200), b"x", "");
    m.store_host = "[::1]:10911".parse().unwrap();
    let buf = encoded(&m, 0, 0, 1);
    let back = decode(&buf, true).unwrap();
    assert_eq!(back.magic, MAGIC_V2);
    assert_eq!(back.topic.len(), 200);
    assert_eq!(back.sys_flag & sys_flag::STOREHOST_V6, sys_flag::STOREHOST_V6);
    assert_eq!(back.store_host, m.store_host);
}

#[test]
fn corruption_is_detected() {
    let m = msg("T", b"hello", "");
    let buf = encoded(&m, 0, 0, 1);
    let mut bad = buf.clone();
    bad[88] ^= 0xFF; // a body byte
    assert_eq!(check(&bad, true), RecordCheck::Invalid("body CRC mismatch"));
    assert!(matches!(check(&bad, false), RecordCheck::Record(_)));
    let mut bad = buf.clone();
    bad[3] = bad[3].wrapping_sub(1); // total size one short
    assert!(matches!(check(&bad, true), RecordCheck::Invalid(_)));
    let mut longer = buf.clone();
    longer[3] = longer[3].wrapping_add(1); // total size past the readable data: wait for more
    assert_eq!(check(&longer, true), RecordCheck::Truncated { needed: buf.len() + 1 });
    assert_eq!(check(&blank(100), true), RecordCheck::Blank);
    assert_eq!(check(&[0u8; 20], true), RecordCheck::Invalid("unknown magic code"));
    let mut tiny = buf.clone();
    tiny[..4].copy_from_slice(&90i32.to_be_bytes());
    assert_eq!(check(&tiny, true), RecordCheck::Invalid("total size below the smallest record"));
}

/// A record cut at any byte (a slave between two replication frames) is "wait for more", never
/// damage; whole again, it checks out.
#[test]
fn every_prefix_of_a_record_is_truncated() {
    let buf = encoded(&msg("T", b"hello", "KEYS\u{1}k"), 0, 0, 1);
    for n in 0..buf.len() {
        let needed = if n < 8 { 8 } else { buf.len() };
        assert_eq!(check(&buf[..n], true), RecordCheck::Truncated { needed }, "prefix {n}");
    }
    assert!(matches!(check(&buf, true), RecordCheck::Record(_)));
}

proptest! {
    #[test]
    fn round_trip(
        topic in "[a-zA-Z0-9_%-]{1,255}",
        body in proptest::collection::vec(any::<u8>(), 0..512),
        props in "[a-zA-Z0-9 \u{1}\u{2}]{0,200}",
        qo in any::<i64>(), phys in any::<i64>(), ts in any::<i64>(),
        queue_id in any::<i32>(), flag in any::<i32>(), v6 in any::<bool>(),
    ) {
        let mut m = msg(&topic, &body, &props);
        m.queue_id = queue_id;
        m.flag = flag;
        if v6 {
            m.born_host = "[fe80::1]:1234".parse().unwrap();
        }
        let buf = encoded(&m, qo, phys, ts);
        prop_assert_eq!(buf.len(), record_len(&m));
        let back = decode(&buf, true).unwrap();
        prop_assert_eq!(back.topic, m.topic);
        prop_assert_eq!(&back.body[..], &m.body[..]);
        prop_assert_eq!(back.properties, m.properties);
        prop_assert_eq!(back.queue_offset, qo);
        prop_assert_eq!(back.commit_log_offset, phys);
        prop_assert_eq!(back.store_timestamp, ts);
        prop_assert_eq!(back.queue_id, queue_id);
        prop_assert_eq!(back.flag, flag);
        prop_assert_eq!(back.born_host, m.born_host);
    }

    #[test]
    fn check_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = check(&data, true);
    }
}
