//! Master/slave replication in one process: SYNC_MASTER waits for the slave, the slave serves
//! what it replicated and refuses sends.

use std::time::{Duration, Instant};

use ferrocket::protocol::{RequestCode, ResponseCode};

use super::broker::{call_addr, pull, records, send, start_broker_on, wait_max_offset};
use super::support::*;

#[tokio::test]
async fn sync_master_replicates_to_a_slave() {
    let ns = TestNamesrv::start(|_| {}).await;
    let ns_addr = ns.addr.to_string();
    let master_dir = tempfile::tempdir().unwrap();
    let slave_dir = tempfile::tempdir().unwrap();
    let master = start_broker_on(&ns_addr, master_dir.path(), |c| c.broker_role = "SYNC_MASTER".into()).await;
    let c = client();

    // No slave yet: stored, but SLAVE_NOT_AVAILABLE (4.x semantics).
    let r = call_addr(&c, &master.addr, send("HA", 0, b"before-slave", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);
    assert!(r.ext_fields.contains_key("msgId"), "a stored message still gets its id");

    let slave = start_broker_on(&ns_addr, slave_dir.path(), |c| {
        c.broker_role = "SLAVE".into();
        c.broker_id = 1;
    })
    .await;
    // The slave catches up with what the master had, then SYNC_MASTER sends succeed.
    wait_max_offset(&c, &slave.addr, "HA", 0, 1).await;
    let started = Instant::now();
    let r = call_addr(&c, &master.addr, send("HA", 0, b"after-slave", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert!(started.elapsed() < Duration::from_secs(2));
    wait_max_offset(&c, &slave.addr, "HA", 0, 2).await;
    // The slave serves the topic once its metadata sync copied the topic config.
    let served = eventually(Duration::from_secs(15), || async {
        call_addr(&c, &slave.addr, pull("HA", 0, 0, 4, 0)).await.response_code() == ResponseCode::SUCCESS
    })
    .await;
    assert!(served, "slave never served the replicated topic");
    let got = call_addr(&c, &slave.addr, pull("HA", 0, 0, 4, 0)).await;
    let bodies: Vec<_> = records(&got.body).iter().map(|m| String::from_utf8_lossy(&m.body).into_owned()).collect();
    assert_eq!(bodies, vec!["before-slave", "after-slave"]);

    let r = call_addr(&c, &slave.addr, send("HA", 0, b"to-slave", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SERVICE_NOT_AVAILABLE);

    // The NameServer shows both, master at id 0 and slave at id 1.
    let info = call_addr(&c, &ns_addr, request(RequestCode::GET_BROKER_CLUSTER_INFO, &[])).await;
    let text = String::from_utf8_lossy(&info.body);
    assert!(
        text.contains(&format!("0:\"{}\"", master.addr)) && text.contains(&format!("1:\"{}\"", slave.addr)),
        "{text}"
    );

    // Metadata sync copies the master's topic and offsets to the slave (every 10 s, first after 3 s).
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "G"), ("topic", "HA"), ("queueId", "0"), ("commitOffset", "2")],
    );
    let create_group = request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[]).with_body(r#"{"groupName":"G"}"#);
    assert_eq!(call_addr(&c, &master.addr, create_group).await.response_code(), ResponseCode::SUCCESS);
    assert_eq!(call_addr(&c, &master.addr, commit).await.response_code(), ResponseCode::SUCCESS);
    let q = request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "G"), ("topic", "HA"), ("queueId", "0")]);
    let synced = eventually(Duration::from_secs(15), || async {
        call_addr(&c, &slave.addr, q.clone()).await.ext_fields.get("offset").map(String::as_str) == Some("2")
    })
    .await;
    assert!(synced, "consumer offsets not copied to the slave");

    // While its master is up, the slave sends consumers back to it: FOUND suggests broker 0,
    // and a pull with nothing new answers PULL_RETRY_IMMEDIATELY (after a short hold) instead
    // of being held here.
    let found = call_addr(&c, &slave.addr, pull("HA", 0, 0, 4 | 2, 5_000)).await;
    assert_eq!(found.response_code(), ResponseCode::SUCCESS);
    assert_eq!(found.ext_fields.get("suggestWhichBrokerId").map(String::as_str), Some("0"));
    let at_end = call_addr(&c, &slave.addr, pull("HA", 0, 2, 4 | 2, 5_000)).await;
    assert_eq!(at_end.response_code(), ResponseCode::PULL_RETRY_IMMEDIATELY, "{:?}", at_end.remark);
    assert_eq!(at_end.ext_fields.get("suggestWhichBrokerId").map(String::as_str), Some("0"));
    assert_eq!(at_end.ext_fields.get("nextBeginOffset").map(String::as_str), Some("2"));

    // Master gone: the slave serves like a master (PULL_NOT_FOUND after the hold).
    master.stop().await;
    let serving = eventually(Duration::from_secs(30), || async {
        call_addr(&c, &slave.addr, pull("HA", 0, 2, 4 | 2, 200)).await.response_code() == ResponseCode::PULL_NOT_FOUND
    })
    .await;
    assert!(serving, "slave kept redirecting to a stopped master");
    // A slave never moves a consumer's offset (offsetCheckInSlave=false): past its end it
    // holds the pull, then answers PULL_RETRY_IMMEDIATELY at the same offset.
    let ahead = call_addr(&c, &slave.addr, pull("HA", 0, 5, 4 | 2, 200)).await;
    assert_eq!(ahead.response_code(), ResponseCode::PULL_RETRY_IMMEDIATELY, "{:?}", ahead.remark);
    assert_eq!(ahead.ext_fields.get("nextBeginOffset").map(String::as_str), Some("5"));
    let empty = call_addr(&c, &slave.addr, pull("HA", 1, 3, 4, 0)).await;
    assert_eq!(empty.response_code(), ResponseCode::PULL_RETRY_IMMEDIATELY, "{:?}", empty.remark);
    assert_eq!(empty.ext_fields.get("nextBeginOffset").map(String::as_str), Some("3"));
    slave.stop().await;
}

/// With slaveReadEnable, the master sends a consumer reading data no longer in memory
/// (accessMessageInMemoryMaxRatio of RAM behind the CommitLog's end) to the group's
/// whichBrokerWhenConsumeSlowly (1), and keeps one reading recent data on the group's brokerId (0).
#[tokio::test]
async fn master_suggests_the_slave_to_consumers_reading_data_no_longer_in_memory() {
    let c = client();
    for (ratio, slave_read, want) in [(0, true, "1"), (40, true, "0"), (0, false, "0")] {
        let dir = tempfile::tempdir().unwrap();
        let b = super::broker::start_broker(dir.path(), |c| {
            c.slave_read_enable = slave_read;
            c.access_message_in_memory_max_ratio = ratio;
        })
        .await;
        for i in 0..3 {
            let r = call_addr(&c, &b.addr, send("SLOW", 0, format!("m{i}").as_bytes(), "A")).await;
            assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        }
        wait_max_offset(&c, &b.addr, "SLOW", 0, 3).await;
        let r = call_addr(&c, &b.addr, pull("SLOW", 0, 0, 4, 0)).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            r.ext_fields.get("suggestWhichBrokerId").map(String::as_str),
            Some(want),
            "accessMessageInMemoryMaxRatio={ratio} slaveReadEnable={slave_read}"
        );
        b.stop().await;
    }
}

/// A topic the master auto-created, acknowledged under SYNC_MASTER, then the master gone before
/// any metadata sync copied the topic: the slave learned it from the replicated records and
/// serves it. Pulls on a slave never store commit offsets (they come from the master's sync).
#[tokio::test]
async fn a_slave_serves_a_fresh_topic_its_master_never_synced() {
    let ns = TestNamesrv::start(|_| {}).await;
    let ns_addr = ns.addr.to_string();
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = start_broker_on(&ns_addr, master_dir.path(), |c| c.broker_role = "SYNC_MASTER".into()).await;
    let c = client();
    let marker = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[("topic", "SYNC_MARKER"), ("readQueueNums", "1"), ("writeQueueNums", "1"), ("perm", "6")],
    );
    assert_eq!(call_addr(&c, &master.addr, marker).await.response_code(), ResponseCode::SUCCESS);
    let slave = start_broker_on(&ns_addr, slave_dir.path(), |c| {
        c.broker_role = "SLAVE".into();
        c.broker_id = 1;
    })
    .await;
    // Wait for the slave's first metadata sync (it copies SYNC_MARKER); the next is 10 s later.
    let synced = eventually(Duration::from_secs(20), || async {
        let all = call_addr(&c, &slave.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
        String::from_utf8_lossy(&all.body).contains("SYNC_MARKER")
    })
    .await;
    assert!(synced, "the slave never synchronized its master's topics");
    // A new topic, auto-created by the sends; every send acknowledged by the slave.
    for i in 0..20 {
        let r = call_addr(&c, &master.addr, send("FRESH", i % 4, format!("m{i}").as_bytes(), "A")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    master.stop().await;

    let mut got = Vec::new();
    for q in 0..4 {
        let r = call_addr(&c, &slave.addr, pull("FRESH", q, 0, 4, 0)).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "queue {q}: {:?}", r.remark);
        got.extend(records(&r.body).iter().map(|m| String::from_utf8_lossy(&m.body).into_owned()));
    }
    got.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(got, want);
    let all = call_addr(&c, &slave.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    let table: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
    assert_eq!(table["topicConfigTable"]["FRESH"]["readQueueNums"], 4);
    assert_eq!(table["topicConfigTable"]["FRESH"]["perm"], 6);

    // A pull with the commit-offset flag does not store the offset on a slave.
    let mut p = pull("FRESH", 0, 0, 1 | 4, 0);
    p.ext_fields.insert("commitOffset".into(), "3".into());
    assert_eq!(call_addr(&c, &slave.addr, p).await.response_code(), ResponseCode::SUCCESS);
    let q =
        request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "CG"), ("topic", "FRESH"), ("queueId", "0")]);
    let r = call_addr(&c, &slave.addr, q).await;
    assert_ne!(r.ext_fields.get("offset").map(String::as_str), Some("3"), "a slave stored a pulled commit offset");
    slave.stop().await;
}
