//! UPDATE_BROKER_CONFIG while the broker runs (#28): GET_BROKER_CONFIG reads every updated key
//! back at once, as Java's does, and the keys the broker reads per use act at once (the store's
//! retention and size limits, pulls); a key that needs a restart is read back too and said so.

use std::time::Duration;

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{pull, send, start_broker};
use super::support::*;

fn update(body: &str) -> RemotingCommand {
    request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(body.to_owned())
}

/// The `key=value` lines GET_BROKER_CONFIG answers.
async fn broker_config(c: &Client, addr: &str) -> String {
    let resp = c.invoke(addr, request(RequestCode::GET_BROKER_CONFIG, &[]), Duration::from_secs(10)).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    String::from_utf8(resp.body.to_vec()).unwrap()
}

#[tokio::test]
async fn updated_keys_read_back_at_once_and_the_live_ones_act() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "brokerName=broker-live\n").unwrap();
    let path = conf.display().to_string();
    let b = start_broker(dir.path(), |c| c.broker_config_path = path).await;
    let c = client();
    let before = broker_config(&c, &b.addr).await;
    assert!(before.contains("fileReservedTime=72\n") && before.contains("deleteWhen=04\n"), "{before}");

    let body = "fileReservedTime=48\ndeleteWhen=01;13\nmaxMessageSize=1024\nlongPollingEnable=false\nshortPollingTimeMills=100\n";
    let resp = c.invoke(&b.addr, update(body), Duration::from_secs(10)).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    assert_eq!(resp.remark, None, "every one of these keys acts at once: no restart remark");
    let after = broker_config(&c, &b.addr).await;
    for line in ["fileReservedTime=48\n", "deleteWhen=01;13\n", "maxMessageSize=1024\n", "longPollingEnable=false\n"] {
        assert!(after.contains(line), "{line:?} not read back: {after}");
    }
    // The store's cleanup and put checks read the new values (retention.rs has the pass itself).
    let store = b.inner.store.live_config();
    assert_eq!((store.file_reserved_time, store.delete_when.as_str(), store.max_message_size), (48, "01;13", 1024));

    // maxMessageSize acts on the next send.
    let small = c.invoke(&b.addr, send("LiveT", 0, &[b'x'; 512], "A"), Duration::from_secs(10)).await.unwrap();
    assert_eq!(small.response_code(), ResponseCode::SUCCESS, "{:?}", small.remark);
    let big = c.invoke(&b.addr, send("LiveT", 0, &[b'x'; 2048], "A"), Duration::from_secs(10)).await.unwrap();
    assert_eq!(big.response_code(), ResponseCode::MESSAGE_ILLEGAL, "{:?}", big.remark);
    assert!(big.remark.unwrap_or_default().contains("maxMessageSize 1024"));

    // longPollingEnable=false: a pull (suspend + subscription flags) asking to be held 60 s at
    // the queue's end is answered after shortPollingTimeMills, well within the client's 10 s.
    let end = c.invoke(&b.addr, pull("LiveT", 0, 1, 2 | 4, 60_000), Duration::from_secs(10)).await;
    let end = end.expect("a short poll is answered, not held for the long-poll time");
    assert!(
        matches!(end.response_code(), ResponseCode::PULL_NOT_FOUND | ResponseCode::PULL_RETRY_IMMEDIATELY),
        "{:?} {:?}",
        end.response_code(),
        end.remark
    );

    // A key that needs a restart: read back at once (as Java does), said to need a restart,
    // and not in force (the boot value still is).
    let resp =
        c.invoke(&b.addr, update("defaultTopicQueueNums=3\nfileReservedTime=24\n"), Duration::from_secs(10)).await;
    let resp = resp.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    let remark = resp.remark.unwrap_or_default();
    assert!(remark.contains("defaultTopicQueueNums") && remark.contains("restart"), "{remark}");
    assert!(!remark.contains("fileReservedTime"), "{remark}");
    let after = broker_config(&c, &b.addr).await;
    assert!(after.contains("defaultTopicQueueNums=3\n") && after.contains("fileReservedTime=24\n"), "{after}");
    assert!(after.contains("deleteWhen=01;13\n"), "an earlier update stays: {after}");
    assert_eq!(b.inner.config.default_topic_queue_nums, 8);
    assert_eq!(b.inner.store.live_config().file_reserved_time, 24);

    // A refused update changes nothing, not even its valid keys.
    let resp = c.invoke(&b.addr, update("fileReservedTime=12\nmaxMessageSize=big\n"), Duration::from_secs(10)).await;
    assert_eq!(resp.unwrap().response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(broker_config(&c, &b.addr).await.contains("fileReservedTime=24\n"));
    assert_eq!(b.inner.store.live_config().file_reserved_time, 24);

    // Everything updated is in the file, for the restart.
    let text = std::fs::read_to_string(&conf).unwrap();
    for line in ["fileReservedTime=24\n", "deleteWhen=01;13\n", "defaultTopicQueueNums=3\n"] {
        assert!(text.contains(line), "{line:?} not written: {text}");
    }
    b.stop().await;
}

/// The Kafka listener reads maxMessageSize per produce too, and DescribeConfigs shows the
/// value in force.
#[tokio::test]
async fn the_kafka_listener_follows_a_live_max_message_size() {
    use super::kafka::{batch, create, first, kafka_broker, produce, Conn};
    use kafka_protocol::messages::{ApiKey, ProduceResponse};
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut k = Conn::open(port).await;
    create(&mut k, "klive", 1).await;
    let big = batch(200, None);
    assert!(big.len() > 1024, "{} bytes", big.len());
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &produce("klive", 1, big.clone())).await;
    assert_eq!(first(&r).0, 0);

    let c = client();
    let resp = c.invoke(&b.addr, update("maxMessageSize=1024\n"), Duration::from_secs(10)).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &produce("klive", 1, big)).await;
    assert_eq!(first(&r).0, 10, "MESSAGE_TOO_LARGE over the new maxMessageSize");
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &produce("klive", 1, batch(2, None))).await;
    assert_eq!(first(&r).0, 0);
    let configs = super::kafka_retention::describe(&mut k, "klive").await;
    let max = configs.iter().find(|(name, _, _)| name == "max.message.bytes").expect("max.message.bytes");
    assert_eq!(max.1, "1024", "{configs:?}");
    b.stop().await;
}
