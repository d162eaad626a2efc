//! The batch body of SEND_BATCH_MESSAGE (`MessageDecoder.encodeMessages`).
//!
//! ```text
//! entry = totalSize:i32 magic:i32 bodyCrc:i32 flag:i32 bodyLen:i32 body propertiesLen:i16 properties
//! ```
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use bytes::Bytes;

/// One message of a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchEntry {
    pub flag: i32,
    pub body: Bytes,
    pub properties: String,
}

/// Splits a batch body; `Err` names the entry that is malformed.
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchEntry>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < body.len() {
        let at = |n: usize| -> Result<&[u8], String> {
            body.get(pos + n..).ok_or_else(|| format!("batch entry {} truncated", out.len()))
        };
        let rd32 = |o: usize| -> Result<i32, String> {
            at(o)?
                .get(..4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or_else(|| format!("batch entry {} truncated", out.len()))
        };
        let total = usize::try_from(rd32(0)?).map_err(|_| format!("batch entry {} has a negative size", out.len()))?;
        let flag = rd32(12)?;
        let body_len =
            usize::try_from(rd32(16)?).map_err(|_| format!("batch entry {} has a negative body size", out.len()))?;
        let body_start = pos + 20;
        let props_len_at = body_start + body_len;
        let pl =
            body.get(props_len_at..props_len_at + 2).ok_or_else(|| format!("batch entry {} truncated", out.len()))?;
        let props_len = usize::try_from(i16::from_be_bytes([pl[0], pl[1]]))
            .map_err(|_| format!("batch entry {} has bad properties", out.len()))?;
        let props_start = props_len_at + 2;
        let end = props_start + props_len;
        if end > body.len() || end - pos != total {
            return Err(format!("batch entry {} size {total} does not match its fields", out.len()));
        }
        out.push(BatchEntry {
            flag,
            body: body.slice(body_start..props_len_at),
            properties: String::from_utf8_lossy(&body[props_start..end]).into_owned(),
        });
        pos = end;
    }
    Ok(out)
}

/// Encodes entries as a batch body (tests and tools). `Err` names an entry whose properties do
/// not fit the format's 16-bit length (more than 32,767 bytes).
pub fn encode_batch(entries: &[BatchEntry]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.properties.len() > i16::MAX as usize {
            return Err(format!(
                "batch entry {i} has {} bytes of properties, more than {}",
                e.properties.len(),
                i16::MAX
            ));
        }
        let total = 20 + e.body.len() + 2 + e.properties.len();
        out.extend_from_slice(&(total as i32).to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&e.flag.to_be_bytes());
        out.extend_from_slice(&(e.body.len() as i32).to_be_bytes());
        out.extend_from_slice(&e.body);
        out.extend_from_slice(&(e.properties.len() as i16).to_be_bytes());
        out.extend_from_slice(e.properties.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let entries = vec![
            BatchEntry { flag: 1, body: Bytes::from_static(b"hello"), properties: "KEYS\u{1}k\u{2}".into() },
            BatchEntry { flag: 0, body: Bytes::new(), properties: String::new() },
        ];
        let enc = Bytes::from(encode_batch(&entries).unwrap());
        assert_eq!(decode_batch(&enc).unwrap(), entries);
        let first_end = 20 + 5 + 2 + entries[0].properties.len();
        assert_eq!(decode_batch(&enc.slice(..first_end)).unwrap(), entries[..1]);
        for n in (1..enc.len()).filter(|n| *n != first_end) {
            assert!(decode_batch(&enc.slice(..n)).is_err(), "prefix {n}");
        }
    }

    /// Found by reading the batch_body fuzz target: 12,000 invalid UTF-8 bytes of properties decode
    /// (each to a 3-byte U+FFFD) to more than the 16-bit length holds; encoding refuses them
    /// instead of writing a wrapped length.
    #[test]
    fn properties_past_the_16_bit_length_are_refused_not_wrapped() {
        let mut body = Vec::new();
        let props = vec![0xFFu8; 12_000];
        body.extend_from_slice(&((20 + 2 + props.len()) as i32).to_be_bytes());
        body.extend_from_slice(&[0u8; 12]);
        body.extend_from_slice(&0i32.to_be_bytes()); // body length
        body.extend_from_slice(&(props.len() as i16).to_be_bytes());
        body.extend_from_slice(&props);
        let entries = decode_batch(&Bytes::from(body)).unwrap();
        assert_eq!(entries[0].properties.len(), 36_000);
        assert!(encode_batch(&entries).unwrap_err().contains("entry 0 has 36000 bytes"));
    }
}
