//! The records of a transaction: half, committed, op, renewed, immunity copy, discarded, check body.
//!
//! May import: `store` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::net::SocketAddr;

use bytes::Bytes;

use super::*;

fn host() -> SocketAddr {
    "127.0.0.1:10911".parse().unwrap()
}

fn sent() -> MessageToStore {
    let props = [("TRAN_MSG", "true"), ("PGROUP", "PG"), ("UNIQ_KEY", "U1"), ("TAGS", "TagA"), ("k", "v")];
    MessageToStore {
        topic: "Orders".into(),
        queue_id: 3,
        flag: 7,
        body: Bytes::from_static(b"body"),
        properties: message::properties_to_string(props),
        tags_code: message::tags_code(Some("TagA")),
        born_timestamp: 1_000,
        born_host: host(),
        store_host: host(),
        sys_flag: sys_flag::TRANSACTION_PREPARED | sys_flag::MULTI_TAGS,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// The message as the store would give it back after storing `m` at these offsets.
fn stored(m: &MessageToStore, queue_offset: i64, commit_log_offset: i64) -> StoredMessage {
    let mut out = Vec::new();
    let patch = crate::store::commit_log::record::encode(m, &mut out);
    crate::store::commit_log::record::patch(&mut out, patch, queue_offset, commit_log_offset, 2_000);
    crate::store::commit_log::record::decode(&out, true).unwrap()
}

#[test]
fn a_half_message_hides_on_the_half_topic_and_remembers_where_it_goes() {
    let mut m = sent();
    to_half(&mut m);
    assert_eq!((m.topic.as_str(), m.queue_id), (HALF_TOPIC, 0));
    assert_eq!(sys_flag::transaction_type(m.sys_flag), sys_flag::TRANSACTION_NOT_TYPE);
    assert_eq!(m.sys_flag & sys_flag::MULTI_TAGS, sys_flag::MULTI_TAGS, "other flags kept");
    let p = message::parse_properties(&m.properties);
    assert_eq!(p["REAL_TOPIC"], "Orders");
    assert_eq!(p["REAL_QID"], "3");
    assert_eq!(p["__transactionId__"], "U1");
    assert_eq!(p["k"], "v");
    assert_eq!(m.tags_code, message::tags_code(Some("TagA")));
}

#[test]
fn a_commit_goes_to_the_real_queue_as_commit_type_pointing_at_the_half() {
    let mut m = sent();
    to_half(&mut m);
    let half = stored(&m, 5, 4096);
    assert_eq!(real_queue(&half), Some(("Orders".into(), 3)));
    let c = committed(&half).unwrap();
    assert_eq!((c.topic.as_str(), c.queue_id), ("Orders", 3));
    assert_eq!(sys_flag::transaction_type(c.sys_flag), sys_flag::TRANSACTION_COMMIT);
    assert_eq!(c.prepared_transaction_offset, 4096);
    assert_eq!((c.body.as_ref(), c.flag, c.born_timestamp), (&b"body"[..], 7, 1_000));
    let p = message::parse_properties(&c.properties);
    assert!(!p.contains_key("REAL_TOPIC") && !p.contains_key("REAL_QID"));
    assert_eq!((p["UNIQ_KEY"].as_str(), p["TAGS"].as_str(), p["k"].as_str()), ("U1", "TagA", "v"));
    assert_eq!(c.tags_code, message::tags_code(Some("TagA")));
    // A half message that lost its real topic cannot be committed.
    let mut bare = half.clone();
    bare.properties = message::properties_to_string([("PGROUP", "PG")]);
    assert!(committed(&bare).is_none());
}

#[test]
fn op_records_name_half_offsets_in_both_formats() {
    let op = op_record(&[5, 9], host());
    assert_eq!((op.topic.as_str(), op.queue_id, op.body.as_ref()), (OP_TOPIC, 0, &b"5,9,"[..]));
    assert_eq!(op_offsets(&stored(&op, 0, 0)), vec![5, 9]);
    // 4.x wrote one offset without a comma.
    let mut old = op_record(&[], host());
    old.body = Bytes::from_static(b"12");
    assert_eq!(op_offsets(&stored(&old, 1, 100)), vec![12]);
    // Another tag is not an op record.
    let mut other = op_record(&[3], host());
    other.properties = message::properties_to_string([("TAGS", "x")]);
    assert!(op_offsets(&stored(&other, 2, 200)).is_empty());
}

#[test]
fn renewed_discarded_and_check_copies() {
    let mut m = sent();
    to_half(&mut m);
    let half = stored(&m, 5, 4096);
    let r = renewed(&half, 3);
    assert_eq!((r.topic.as_str(), r.queue_id, r.born_timestamp), (HALF_TOPIC, 0, 1_000));
    assert_eq!(message::property_value(&r.properties, "TRANSACTION_CHECK_TIMES"), Some("3"));
    assert_eq!(message::property_value(&r.properties, "REAL_TOPIC"), Some("Orders"));
    let d = discarded(&half);
    assert_eq!((d.topic.as_str(), d.queue_id), (CHECK_MAX_TOPIC, 0));
    assert_eq!(message::property_value(&d.properties, "REAL_TOPIC"), Some("Orders"));
    let s = as_sent(&half);
    assert_eq!((s.topic.as_str(), s.queue_id), ("Orders", 3));
    assert_eq!(message::property_value(&s.properties, "PGROUP"), Some("PG"));
}

#[test]
fn immunity_copies_remember_the_offset_the_producer_knows() {
    let mut m = sent();
    // A producer cannot point its half message at another transaction's offset.
    let mut props = message::parse_properties(&m.properties);
    props.insert(PREPARED_QUEUE_OFFSET.into(), "1".into());
    m.properties = message::map_to_properties(&props);
    to_half(&mut m);
    let half = stored(&m, 5, 4096);
    assert_eq!(prepared_offset(&half), None);
    let first = stored(&immunity_copy(&half), 9, 8192);
    assert_eq!((first.topic.as_str(), first.born_timestamp), (HALF_TOPIC, 1_000));
    assert_eq!(prepared_offset(&first), Some(5));
    assert_eq!(message::property_value(&first.properties, "TRANSACTION_CHECK_TIMES"), None, "not a check");
    // A copy of a copy still names the original.
    assert_eq!(prepared_offset(&stored(&immunity_copy(&first), 12, 9000)), Some(5));
}

#[test]
fn unreplicated_commits_are_bounded_and_keyed_by_who_sent_the_transaction() {
    let mut m = sent();
    to_half(&mut m);
    let half = stored(&m, 5, 4096);
    let key = transaction_key(&half).unwrap();
    assert_eq!(transaction_key(&stored(&renewed(&half, 1), 9, 8192)), Some(key.clone()), "the same on copies");
    let mut other = half.clone();
    other.born_host = "127.0.0.1:2".parse().unwrap();
    assert_ne!(transaction_key(&other), Some(key.clone()), "another connection reusing the id");

    let commits = UnreplicatedCommits::default();
    commits.insert(key.clone(), 100);
    assert_eq!(commits.get(&key), Some(100));
    for i in 0..MAX_UNREPLICATED as i64 {
        let mut h = half.clone();
        h.born_timestamp = 10_000 + i;
        commits.insert(transaction_key(&h).unwrap(), 1);
    }
    assert_eq!(commits.get(&key), None, "the oldest is forgotten past the bound");
    assert_eq!(commits.lock().0.len(), MAX_UNREPLICATED);
    commits.remove(
        &transaction_key(&half)
            .map(|mut k| {
                k.born_timestamp = 10_000;
                k
            })
            .unwrap(),
    );
    assert_eq!(commits.lock().1.len(), MAX_UNREPLICATED - 1);
}
