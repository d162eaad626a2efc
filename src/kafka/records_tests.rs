use super::*;

fn rec(ts: i64, key: Option<&str>, value: Option<&str>, headers: &[(&str, Option<&[u8]>)]) -> Record {
    Record {
        timestamp: ts,
        key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
        value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
        headers: headers
            .iter()
            .map(|(k, v)| (Bytes::copy_from_slice(k.as_bytes()), v.map(Bytes::copy_from_slice)))
            .collect(),
    }
}

fn batch(records: &[Record]) -> BytesMut {
    let mut out = BytesMut::new();
    write_batch(&mut out, 0, records);
    out
}

fn fix_crc(b: &mut BytesMut) {
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn a_written_batch_parses_back_with_duplicate_and_null_headers_in_order() {
    let records = vec![
        rec(1000, Some("k"), Some("v1"), &[("h", Some(b"1")), ("h", Some(b"2")), ("n", None)]),
        rec(990, None, None, &[]),
        rec(1005, Some(""), Some(""), &[("bin", Some(&[0, 255]))]),
    ];
    let b = batch(&records).freeze();
    let parsed = parse_one_batch(b, 1 << 20).unwrap();
    assert_eq!((parsed.count, parsed.last_offset_delta, parsed.producer_id), (3, 2, -1));
    assert_eq!(super::records(&parsed).unwrap(), records);
}

#[test]
fn gzip_records_are_inflated_and_checked_against_the_limit() {
    use std::io::Write;
    let records: Vec<Record> = (0..50).map(|i| rec(i, None, Some(&"x".repeat(100)), &[])).collect();
    let plain = batch(&records);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&plain[HEADER_LEN..]).unwrap();
    let mut b = BytesMut::from(&plain[..HEADER_LEN]);
    b.extend_from_slice(&z.finish().unwrap());
    b[21..23].copy_from_slice(&1i16.to_be_bytes());
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut b);
    let parsed = parse_one_batch(b.clone().freeze(), 1 << 20).unwrap();
    assert_eq!(super::records(&parsed).unwrap(), records);
    let err = parse_one_batch(b.freeze(), 1000).unwrap_err();
    assert_eq!(err.0, error::MESSAGE_TOO_LARGE, "{}", err.1);
}

#[test]
fn bad_batches_get_kafkas_error_codes() {
    let good = batch(&[rec(1, None, Some("v"), &[])]);
    let mut crc = good.clone();
    let last = crc.len() - 1;
    crc[last] ^= 1;
    assert_eq!(parse_one_batch(crc.freeze(), 1 << 20).unwrap_err().0, error::CORRUPT_MESSAGE);
    let mut magic = good.clone();
    magic[16] = 1;
    assert_eq!(parse_one_batch(magic.freeze(), 1 << 20).unwrap_err().0, error::UNSUPPORTED_FOR_MESSAGE_FORMAT);
    let mut count = good.clone();
    count[57..61].copy_from_slice(&2i32.to_be_bytes());
    fix_crc(&mut count);
    assert_eq!(parse_one_batch(count.freeze(), 1 << 20).unwrap_err().0, error::INVALID_RECORD);
    let mut tx = good.clone();
    tx[21..23].copy_from_slice(&ATTR_TRANSACTIONAL.to_be_bytes());
    fix_crc(&mut tx);
    assert_eq!(parse_one_batch(tx.freeze(), 1 << 20).unwrap_err().0, error::INVALID_RECORD);
    let mut two = good.clone();
    two.extend_from_slice(&good);
    assert_eq!(parse_one_batch(two.freeze(), 1 << 20).unwrap_err().0, error::INVALID_RECORD);
    assert_eq!(parse_one_batch(good.freeze().slice(..40), 1 << 20).unwrap_err().0, error::CORRUPT_MESSAGE);
}

#[test]
fn header_lists_round_trip() {
    let h = vec![(Bytes::from_static(b"a"), None), (Bytes::from_static(b"a"), Some(Bytes::from_static(&[0])))];
    assert_eq!(decode_headers(encode_headers(&h)), Some(h));
}
