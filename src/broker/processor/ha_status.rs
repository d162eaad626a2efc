//! GET_BROKER_HA_STATUS (907, `mqadmin haStatus`): the replication state as Java's
//! `HARuntimeInfo` (`DefaultHAService.getRuntimeInfo`); RESET_MASTER_FLUSH_OFFSET (908).
//!
//! ```text
//! master: {master:true, masterCommitLogMaxOffset, inSyncSlaveNums,
//!          haConnectionInfo:[{addr, slaveAckOffset, diff, inSync, transferredByteInSecond,
//!                             transferFromWhere}], haClientRuntimeInfo:{...zeros}}
//! slave:  {master:false, haClientRuntimeInfo:{masterAddr, maxOffset, transferredByteInSecond,
//!          lastReadTimestamp, lastWriteTimestamp, masterFlushOffset, activated}, ...}
//! ```
//!
//! May import: `crate::ha` (what it knows), `protocol` and modules of `broker/`.

use serde::Serialize;

use super::{ok, Handled};
use crate::broker::BrokerInner;
use crate::ha::flow::{ClientInfo, SlaveInfo};
use crate::protocol::header::stats::ResetMasterFlushOffsetHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::RemotingCommand;

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct HaRuntimeInfo {
    master: bool,
    master_commit_log_max_offset: i64,
    in_sync_slave_nums: usize,
    ha_connection_info: Vec<HaConnectionRuntimeInfo>,
    ha_client_runtime_info: HaClientRuntimeInfo,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HaConnectionRuntimeInfo {
    addr: String,
    slave_ack_offset: i64,
    diff: i64,
    in_sync: bool,
    transferred_byte_in_second: i64,
    transfer_from_where: i64,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct HaClientRuntimeInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    master_addr: Option<String>,
    transferred_byte_in_second: i64,
    max_offset: i64,
    last_read_timestamp: i64,
    last_write_timestamp: i64,
    /// The checkpoint's `masterFlushedOffset`: outside controller mode (ferrocket has none)
    /// only RESET_MASTER_FLUSH_OFFSET (908, `mqadmin resetMasterFlushOffset`) sets it.
    master_flush_offset: i64,
    activated: bool,
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn master_info(put_where: u64, max_gap: u64, slaves: Vec<SlaveInfo>) -> HaRuntimeInfo {
    let conns: Vec<HaConnectionRuntimeInfo> = slaves
        .into_iter()
        .map(|s| HaConnectionRuntimeInfo {
            addr: s.addr,
            slave_ack_offset: i64_of(s.ack_offset),
            diff: i64_of(put_where) - i64_of(s.ack_offset),
            in_sync: put_where.abs_diff(s.ack_offset) <= max_gap,
            transferred_byte_in_second: i64_of(s.bytes_per_second),
            transfer_from_where: s.transfer_from,
        })
        .collect();
    HaRuntimeInfo {
        master: true,
        master_commit_log_max_offset: i64_of(put_where),
        in_sync_slave_nums: conns.iter().filter(|c| c.in_sync).count(),
        ha_connection_info: conns,
        ha_client_runtime_info: HaClientRuntimeInfo::default(),
    }
}

fn slave_info(max_offset: u64, master_flush_offset: i64, c: ClientInfo) -> HaRuntimeInfo {
    HaRuntimeInfo {
        master: false,
        ha_client_runtime_info: HaClientRuntimeInfo {
            master_addr: c.master_addr,
            transferred_byte_in_second: i64_of(c.bytes_per_second),
            max_offset: i64_of(max_offset),
            last_read_timestamp: c.last_read_ms,
            last_write_timestamp: c.last_write_ms,
            master_flush_offset,
            activated: false,
        },
        ..HaRuntimeInfo::default()
    }
}

/// RESET_MASTER_FLUSH_OFFSET (908, `mqadmin resetMasterFlushOffset`): a slave keeps the
/// offset in its checkpoint (Java's `setMasterFlushedOffset`); a master ignores it. SUCCESS
/// either way, as Java.
pub fn reset_master_flush_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ResetMasterFlushOffsetHeader::decode(&req.ext_fields)?;
    if b.config.broker_id != 0 {
        if let Some(offset) = h.master_flush_offset {
            b.store.set_master_flushed_offset(offset);
        }
    }
    Ok(Some(ok(req)))
}

pub fn get_broker_ha_status(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let max = b.store.commit_log_max_offset();
    let info = match (&b.ha_service, &b.ha_client) {
        (_, Some(client)) => slave_info(max, b.store.master_flushed_offset(), client.runtime_info()),
        (Some(ha), None) => master_info(max, ha.max_gap(), ha.slaves()),
        // A master whose HA port is not served has no slaves.
        (None, None) => master_info(max, 0, Vec::new()),
    };
    Ok(Some(ok(req).with_body(serde_json::to_vec(&info).unwrap_or_default())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slave_within_the_gap_is_in_sync() {
        let slave = |addr: &str, ack| SlaveInfo {
            addr: addr.into(),
            ack_offset: ack,
            bytes_per_second: 2048,
            transfer_from: 900,
        };
        let info = master_info(1000, 100, vec![slave("127.0.0.1:1", 950), slave("127.0.0.1:2", 10)]);
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["master"], true);
        assert_eq!(v["masterCommitLogMaxOffset"], 1000);
        assert_eq!(v["inSyncSlaveNums"], 1);
        assert_eq!(v["haConnectionInfo"][0]["diff"], 50);
        assert_eq!(v["haConnectionInfo"][0]["inSync"], true);
        assert_eq!(v["haConnectionInfo"][0]["transferFromWhere"], 900);
        assert_eq!(v["haConnectionInfo"][1]["inSync"], false);
        let info = slave_info(
            77,
            640,
            ClientInfo { master_addr: Some("m:10912".into()), bytes_per_second: 5, last_read_ms: 1, last_write_ms: 2 },
        );
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["master"], false);
        assert_eq!(v["haClientRuntimeInfo"]["masterAddr"], "m:10912");
        assert_eq!(v["haClientRuntimeInfo"]["maxOffset"], 77);
        assert_eq!(v["haClientRuntimeInfo"]["lastWriteTimestamp"], 2);
        assert_eq!(v["haClientRuntimeInfo"]["masterFlushOffset"], 640);
    }
}
