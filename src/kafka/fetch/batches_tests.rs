use bytes::Bytes;
use kafka_protocol::records::{RecordBatchDecoder, RecordSet};

use super::*;
use crate::model::message::properties_to_string;

fn data(ts: i64, v: &str) -> Record {
    Record { timestamp: ts, key: None, value: Some(Bytes::copy_from_slice(v.as_bytes())), headers: vec![] }
}

fn txn(pid: i64, epoch: i16) -> Kind {
    Kind::Transactional { producer_id: pid, epoch }
}

fn marker(pid: i64, commit: bool) -> Kind {
    Kind::Control { producer_id: pid, epoch: 3, commit, coordinator_epoch: 9 }
}

/// Decodes what a fetch would hand out, with the codec Kafka clients' Rust peers use.
fn decode(b: Bytes) -> Vec<RecordSet> {
    let mut b = b;
    RecordBatchDecoder::decode_all(&mut b).expect("the batches decode")
}

fn push(b: &mut Batches, offset: i64, kind: Kind) {
    let rec = kind.control_record(500 + offset).unwrap_or_else(|| data(500 + offset, &format!("v{offset}")));
    b.push(offset, kind, 0, rec);
}

#[test]
fn runs_split_by_producer_epoch_transactional_flag_gaps_and_markers() {
    let mut b = Batches::default();
    let kinds = [
        (0, Kind::Plain),
        (1, Kind::Plain),
        (2, txn(7, 0)),
        (3, txn(7, 0)),
        (4, txn(8, 0)),
        (5, txn(8, 1)),
        (6, marker(7, false)),
        (7, marker(8, true)),
        (8, txn(8, 1)),
        (10, txn(8, 1)), // a gap (a deleted unit) breaks the run
        (11, Kind::Plain),
    ];
    for (offset, kind) in kinds {
        push(&mut b, offset, kind);
    }
    let (bytes, n) = b.finish();
    assert_eq!(n, 11);
    let sets = decode(bytes);
    let shape: Vec<(Vec<i64>, i64, i16, bool, bool)> = sets
        .iter()
        .map(|s| {
            let r = &s.records[0];
            assert!(s
                .records
                .iter()
                .all(|x| (x.producer_id, x.transactional, x.control) == (r.producer_id, r.transactional, r.control)));
            (s.records.iter().map(|x| x.offset).collect(), r.producer_id, r.producer_epoch, r.transactional, r.control)
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (vec![0, 1], -1, -1, false, false),
            (vec![2, 3], 7, 0, true, false),
            (vec![4], 8, 0, true, false),
            (vec![5], 8, 1, true, false),
            (vec![6], 7, 3, true, true),
            (vec![7], 8, 3, true, true),
            (vec![8], 8, 1, true, false),
            (vec![10], 8, 1, true, false),
            (vec![11], -1, -1, false, false),
        ]
    );
    assert_eq!(sets[1].records[1].value.as_deref(), Some(&b"v3"[..]));
    assert_eq!(sets[1].records[1].timestamp, 503);
}

#[test]
fn control_records_are_kafkas_end_transaction_markers() {
    let mut b = Batches::default();
    push(&mut b, 40, marker(7, false));
    push(&mut b, 41, marker(7, true));
    let sets = decode(b.finish().0);
    let abort = &sets[0].records[0];
    assert_eq!(abort.key.as_deref(), Some(&[0u8, 0, 0, 0][..]), "version 0, type 0 = ABORT");
    assert_eq!(abort.value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 9][..]), "version 0, coordinator epoch 9");
    assert_eq!((abort.offset, abort.timestamp, abort.headers.len()), (40, 540, 0));
    let commit = &sets[1].records[0];
    assert_eq!(commit.key.as_deref(), Some(&[0u8, 0, 0, 1][..]), "type 1 = COMMIT");
    assert!(commit.control && commit.transactional);
}

#[test]
fn kinds_are_read_from_the_stored_properties() {
    let props = |p: &[(&str, &str)]| properties_to_string(p.iter().copied());
    assert_eq!(Kind::of(""), Kind::Plain);
    assert_eq!(Kind::of(&props(&[("KEYS", "k"), ("KAFKA_PID", "5")])), Kind::Plain, "no KAFKA_TXN: plain");
    assert_eq!(Kind::of(&props(&[("KAFKA_TXN", "true"), ("KAFKA_EPOCH", "2")])), Kind::Plain, "no producer id");
    assert_eq!(Kind::of(&props(&[("KAFKA_PID", "5"), ("KAFKA_EPOCH", "2"), ("KAFKA_TXN", "true")])), txn(5, 2));
    assert_eq!(
        Kind::of(&props(&[
            ("KAFKA_PID", "5"),
            ("KAFKA_EPOCH", "3"),
            ("KAFKA_CONTROL", "ABORT"),
            ("KAFKA_COORD_EPOCH", "9")
        ])),
        marker(5, false)
    );
    let odd = Kind::of(&props(&[("KAFKA_CONTROL", "COMMIT"), ("KAFKA_PID", "x"), ("KAFKA_EPOCH", "99999")]));
    assert_eq!(odd, Kind::Control { producer_id: -1, epoch: -1, commit: true, coordinator_epoch: -1 });
}

/// Each batch of `out`: (base offset, codec, values), inflated through the produce path's reader.
fn inflated(out: &Bytes) -> Vec<(i64, i16, Vec<String>)> {
    let mut rest = out.clone();
    let mut got = Vec::new();
    while rest.len() >= records::HEADER_LEN {
        let len = i32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize + 12;
        let mut one = bytes::BytesMut::from(&rest.split_to(len)[..]);
        let base = i64::from_be_bytes(one[0..8].try_into().unwrap());
        one[0..8].fill(0); // the produce path's reader wants base offset 0, as a producer sends
        let attributes = i16::from_be_bytes(one[21..23].try_into().unwrap());
        if attributes & records::ATTR_CONTROL != 0 {
            got.push((base, records::codec(attributes), Vec::new())); // a reader of clients' batches refuses these
            continue;
        }
        let batch = records::parse_one_batch(one.freeze(), 1 << 20).expect("a valid batch");
        let values = records::records(&batch)
            .unwrap()
            .iter()
            .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
            .collect();
        got.push((base, records::codec(batch.attributes), values));
    }
    assert!(rest.is_empty());
    got
}

#[test]
fn runs_break_where_the_codec_changes_and_go_out_compressed_with_it() {
    let mut b = Batches::default();
    for (offset, codec) in [(0, 3), (1, 3), (2, 0), (3, 4), (4, 4), (5, 1), (6, 2)] {
        b.push(offset, Kind::Plain, codec, data(500 + offset, &format!("v{offset}")));
    }
    b.push(7, marker(7, true), 3, marker(7, true).control_record(507).unwrap());
    let (out, n) = b.finish();
    assert_eq!(n, 8);
    let got = inflated(&out);
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got[..5],
        [
            (0, 3, strs(&["v0", "v1"])),
            (2, 0, strs(&["v2"])),
            (3, 4, strs(&["v3", "v4"])),
            (5, 1, strs(&["v5"])),
            (6, 2, strs(&["v6"])),
        ]
    );
    assert_eq!((got[5].0, got[5].1), (7, 0), "a marker goes out uncompressed whatever its property says");
    assert_eq!(codec_of(&crate::model::message::properties_to_string([("KAFKA_CODEC", "4")])), 4);
    assert_eq!(codec_of(&crate::model::message::properties_to_string([("KAFKA_CODEC", "9")])), 0, "unknown: none");
}
