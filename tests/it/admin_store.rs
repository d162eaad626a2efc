//! The admin request codes that act on the store or on stored state (issue #28 point 4), over
//! real TCP: DELETE_EXPIRED_COMMITLOG (329), CLEAN_EXPIRED_CONSUMEQUEUE (306),
//! CLEAN_UNUSED_TOPIC (316), INVOKE_BROKER_TO_RESET_OFFSET (222) for an offline group, and
//! GET_BROKER_HA_STATUS (907) and RESET_MASTER_FLUSH_OFFSET (908) on a master with a slave and
//! on the slave, SET_COMMITLOG_READ_MODE (2004).

use std::time::Duration;

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use serde_json::Value;

use super::broker::{call_addr, send, start_broker, start_broker_on, wait_max_offset};
use super::support::*;

fn ok(r: &RemotingCommand) {
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
}

fn has_queues(b: &super::broker::TestBroker, topic: &str) -> bool {
    b.inner.store.queue_topics().iter().any(|(t, _)| t == topic)
}

#[tokio::test]
async fn expired_commit_log_and_consume_queues_of_deleted_topics_are_cleaned_on_request() {
    let dir = tempfile::tempdir().unwrap();
    // Every segment is expired at once; the harness's segments are 1 MiB.
    let b = start_broker(dir.path(), |c| c.file_reserved_time = 0).await;
    let c = client();
    let big = vec![b'o'; 32 * 1024];
    for _ in 0..20 {
        ok(&call_addr(&c, &b.addr, send("OLDT", 0, &big, "A")).await);
    }
    for _ in 0..20 {
        ok(&call_addr(&c, &b.addr, send("FILLT", 0, &big, "A")).await);
    }
    ok(&call_addr(&c, &b.addr, send("GONET", 0, b"still stored", "A")).await);
    wait_max_offset(&c, &b.addr, "GONET", 0, 1).await;
    wait_max_offset(&c, &b.addr, "FILLT", 0, 20).await;
    // Topics deleted from the table while their queues stayed (a broker stopped mid-delete, a
    // table edited by hand).
    assert!(b.inner.topics.delete("OLDT") && b.inner.topics.delete("GONET"));
    let first_segment_end = 1024 * 1024;
    assert!(b.inner.store.commit_log_max_offset() > first_segment_end, "the records fill more than one segment");

    // 329: one retention pass now; the first segment (OLDT's records only) goes.
    ok(&call_addr(&c, &b.addr, request(RequestCode(329), &[])).await);
    assert!(b.inner.store.commit_log_min_offset() >= first_segment_end, "{}", b.inner.store.commit_log_min_offset());
    // 306: queues whose every record is gone, of topics no longer in the table.
    assert!(has_queues(&b, "OLDT"));
    ok(&call_addr(&c, &b.addr, request(RequestCode(306), &[])).await);
    assert!(!has_queues(&b, "OLDT"), "OLDT's records are all below the CommitLog's minimum");
    assert!(!dir.path().join("consumequeue").join("OLDT").exists());
    assert!(has_queues(&b, "GONET"), "GONET's record is still stored: not expired");
    assert!(has_queues(&b, "FILLT"), "a live topic keeps its queues");

    // 316: queues of every topic the table no longer has; live and system topics kept.
    ok(&call_addr(&c, &b.addr, request(RequestCode(316), &[])).await);
    assert!(!has_queues(&b, "GONET"));
    assert!(!dir.path().join("consumequeue").join("GONET").exists());
    assert!(has_queues(&b, "FILLT"));
    let r = call_addr(&c, &b.addr, request(RequestCode::GET_MAX_OFFSET, &[("topic", "FILLT"), ("queueId", "0")])).await;
    assert_eq!(r.ext_fields.get("offset").map(String::as_str), Some("20"), "a live topic's offsets stay");
    b.stop().await;
}

fn reset(topic: &str, group: &str, timestamp: &str, queue: Option<(&str, &str)>) -> RemotingCommand {
    let mut ext = vec![("topic", topic), ("group", group), ("timestamp", timestamp), ("isForce", "true")];
    match queue {
        Some((q, offset)) => ext.extend([("queueId", q), ("offset", offset)]),
        None => ext.push(("offset", "-1")),
    }
    request(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, &ext)
}

/// The `offsetTable` of a ResetOffsetBody (MessageQueue objects as keys) by queue id.
fn reset_table(r: &RemotingCommand) -> Vec<(i64, i64)> {
    ok(r);
    let table = ferrocket::protocol::body::admin::parse_mq_keyed(&r.body, "offsetTable").unwrap();
    table.into_iter().map(|(mq, v)| (i64::from(mq.queue_id), v.as_i64().unwrap())).collect()
}

#[tokio::test]
async fn an_offline_group_is_reset_by_the_broker_itself() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for i in 0..5 {
        ok(&call_addr(&c, &b.addr, send("RSTT", 0, format!("m{i}").as_bytes(), "A")).await);
    }
    wait_max_offset(&c, &b.addr, "RSTT", 0, 5).await;
    let group = request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
        .with_body(br#"{"groupName":"OffG","consumeEnable":true}"#.to_vec());
    ok(&call_addr(&c, &b.addr, group).await);
    b.inner.offsets.commit("OffG", "RSTT", 0, 5);
    let queues = b.inner.topics.get("RSTT").unwrap().read_queue_nums as i64;

    // By time, every read queue: timestamp 0 is the first message, -1 the end.
    let table = reset_table(&call_addr(&c, &b.addr, reset("RSTT", "OffG", "0", None)).await);
    assert_eq!(table.len() as i64, queues, "{table:?}");
    assert!(table.contains(&(0, 0)), "{table:?}");
    assert_eq!(b.inner.offsets.query("OffG", "RSTT", 0), 0);
    let table = reset_table(&call_addr(&c, &b.addr, reset("RSTT", "OffG", "-1", None)).await);
    assert!(table.contains(&(0, 5)), "{table:?}");
    assert_eq!(b.inner.offsets.query("OffG", "RSTT", 0), 5);
    // One queue to an offset, within [min, max].
    let table = reset_table(&call_addr(&c, &b.addr, reset("RSTT", "OffG", "0", Some(("0", "2")))).await);
    assert_eq!(table, vec![(0, 2)]);
    assert_eq!(b.inner.offsets.query("OffG", "RSTT", 0), 2);

    let r = call_addr(&c, &b.addr, reset("RSTT", "OffG", "0", Some(("0", "9")))).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(r.remark.as_deref(), Some("Target offset 9 not in consume queue range [0-5]"));
    let r = call_addr(&c, &b.addr, reset("RSTT", "OffG", "0", Some(("99", "-1")))).await;
    assert!(r.remark.as_deref().unwrap_or("").contains("queueId 99 out of range"), "{:?}", r.remark);
    let r = call_addr(&c, &b.addr, reset("NOPE", "OffG", "0", None)).await;
    assert_eq!(r.response_code(), ResponseCode::TOPIC_NOT_EXIST);
    assert_eq!(r.remark.as_deref(), Some("Topic NOPE does not exist"));
    let r = call_addr(&c, &b.addr, reset("RSTT", "NoSuchG", "0", None)).await;
    assert_eq!(r.response_code(), ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST);
    let r = call_addr(&c, &b.addr, reset("RSTT", "bad/group", "0", None)).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(b.inner.offsets.query("OffG", "RSTT", 0), 2, "refused resets changed nothing");
    assert!(b.inner.offsets.queue_offsets("OffG", "RSTT").keys().all(|q| (*q as i64) < queues));
    b.stop().await;
}

async fn ha_status(c: &Client, addr: &str) -> Value {
    let r = call_addr(c, addr, request(RequestCode(907), &[])).await;
    ok(&r);
    serde_json::from_slice(&r.body).unwrap()
}

#[tokio::test]
async fn ha_status_shows_the_master_s_slaves_and_the_slave_s_client() {
    let ns = TestNamesrv::start(|_| {}).await;
    let ns_addr = ns.addr.to_string();
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = start_broker_on(&ns_addr, master_dir.path(), |_| {}).await;
    let c = client();
    let alone = ha_status(&c, &master.addr).await;
    assert_eq!(alone["master"], true);
    assert_eq!(alone["haConnectionInfo"].as_array().map(Vec::len), Some(0), "{alone}");
    ok(&call_addr(&c, &master.addr, send("HAS", 0, b"replicated", "A")).await);
    let slave = start_broker_on(&ns_addr, slave_dir.path(), |c| {
        c.broker_role = "SLAVE".into();
        c.broker_id = 1;
    })
    .await;
    let end = master.inner.store.commit_log_max_offset() as i64;
    let caught_up = eventually(Duration::from_secs(20), || async {
        let v = ha_status(&c, &master.addr).await;
        v["haConnectionInfo"][0]["slaveAckOffset"].as_i64() == Some(end)
    })
    .await;
    assert!(caught_up, "{}", ha_status(&c, &master.addr).await);
    let v = ha_status(&c, &master.addr).await;
    assert_eq!(v["masterCommitLogMaxOffset"].as_i64(), Some(end));
    assert_eq!(v["inSyncSlaveNums"], 1, "{v}");
    let conn = &v["haConnectionInfo"][0];
    assert_eq!((conn["diff"].as_i64(), conn["inSync"].as_bool()), (Some(0), Some(true)), "{v}");
    assert!(conn["addr"].as_str().unwrap().starts_with("127.0.0.1:"), "{v}");
    assert_eq!(conn["transferFromWhere"].as_i64(), Some(end), "the next frame starts at the end: {v}");
    assert!(conn["transferredByteInSecond"].is_i64(), "{v}");

    let s = ha_status(&c, &slave.addr).await;
    assert_eq!(s["master"], false, "{s}");
    let client_info = &s["haClientRuntimeInfo"];
    assert_eq!(client_info["maxOffset"].as_i64(), Some(end), "{s}");
    assert!(client_info["masterAddr"].as_str().is_some_and(|a| a.starts_with("127.0.0.1:")), "{s}");
    assert!(client_info["lastReadTimestamp"].as_i64().unwrap() > 0, "{s}");

    // resetMasterFlushOffset (908): the slave keeps it in its checkpoint and shows it; a master
    // ignores it.
    assert_eq!(client_info["masterFlushOffset"].as_i64(), Some(0), "{s}");
    let reset = |offset: &str| request(RequestCode(908), &[("masterFlushOffset", offset)]);
    ok(&call_addr(&c, &slave.addr, reset("4096")).await);
    let s = ha_status(&c, &slave.addr).await;
    assert_eq!(s["haClientRuntimeInfo"]["masterFlushOffset"].as_i64(), Some(4096), "{s}");
    assert_eq!(slave.inner.store.master_flushed_offset(), 4096);
    ok(&call_addr(&c, &master.addr, reset("4096")).await);
    assert_eq!(master.inner.store.master_flushed_offset(), 0, "a master ignores it");
    let bad = call_addr(&c, &slave.addr, reset("not a number")).await;
    assert_ne!(bad.response_code(), ResponseCode::SUCCESS, "{:?}", bad.remark);
    slave.stop().await;
    master.stop().await;
}

/// The `VmFlags` of this process's mappings of `file` (`/proc/self/smaps`): `rr` marks
/// MADV_RANDOM.
fn vm_flags_of(file: &std::path::Path) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let name = file.display().to_string();
    let mut out = Vec::new();
    let mut inside = false;
    for line in smaps.lines() {
        // A mapping's header line: "start-end perms offset dev inode [path]".
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            inside = line.ends_with(name.as_str());
        } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
            out.push(flags.trim().to_owned());
        }
    }
    out
}

#[tokio::test]
async fn set_commit_log_read_mode_advises_every_segment_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    ok(&call_addr(&c, &b.addr, send("RAM", 0, b"m", "A")).await);
    let segment = dir.path().join("commitlog").join("00000000000000000000");
    let flags = vm_flags_of(&segment);
    assert!(!flags.is_empty() && flags.iter().all(|f| !f.split(' ').any(|x| x == "rr")), "{flags:?}");
    let mode = |m: &str| request(RequestCode(2004), &[("READ_AHEAD_MODE", m)]);

    let r = call_addr(&c, &b.addr, mode("1")).await;
    ok(&r);
    assert_eq!(r.remark.as_deref(), Some("set commitlog readahead mode success, mode: 1"));
    let flags = vm_flags_of(&segment);
    assert!(!flags.is_empty() && flags.iter().all(|f| f.split(' ').any(|x| x == "rr")), "MADV_RANDOM: {flags:?}");
    let config = call_addr(&c, &b.addr, request(RequestCode::GET_BROKER_CONFIG, &[])).await;
    assert!(String::from_utf8_lossy(&config.body).contains("dataReadAheadEnable=false\n"));

    ok(&call_addr(&c, &b.addr, mode("0")).await);
    let flags = vm_flags_of(&segment);
    assert!(flags.iter().all(|f| !f.split(' ').any(|x| x == "rr")), "MADV_NORMAL again: {flags:?}");
    let r = call_addr(&c, &b.addr, mode("3")).await;
    assert_eq!(r.response_code(), ResponseCode::INVALID_PARAMETER);
    assert_eq!(r.remark.as_deref(), Some("set commitlog readahead mode param value error"));
    let r = call_addr(&c, &b.addr, request(RequestCode(2004), &[])).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    b.stop().await;
}
