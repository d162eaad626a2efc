//! The HA wire format (`DefaultHAConnection`, `DefaultHAClient`).

/// Report: the slave's CommitLog max offset.
pub const REPORT_LEN: usize = 8;
/// Transfer header: offset and body size.
pub const HEADER_LEN: usize = 12;
/// `haTransferBatchSize`.
pub const TRANSFER_BATCH: usize = 32 * 1024;

pub fn encode_header(offset: u64, body_len: usize) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&(offset as i64).to_be_bytes());
    h[8..].copy_from_slice(&(body_len as i32).to_be_bytes());
    h
}

/// Splits a transfer header; `None` for a negative offset or size.
pub fn decode_header(h: &[u8; HEADER_LEN]) -> Option<(u64, usize)> {
    let offset = i64::from_be_bytes(h[..8].try_into().ok()?);
    let size = i32::from_be_bytes(h[8..].try_into().ok()?);
    Some((u64::try_from(offset).ok()?, usize::try_from(size).ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_round_trip_and_rejects_negatives() {
        let h = super::encode_header(1 << 33, 4096);
        assert_eq!(super::decode_header(&h), Some((1 << 33, 4096)));
        let mut bad = h;
        bad[8] = 0x80;
        assert_eq!(super::decode_header(&bad), None);
    }
}
