//! What the broker decides from header values, as Java does: the `batch` flag (not the request
//! code) makes a batch; `unitMode` marks auto-created topics; `Boolean.parseBoolean` for
//! TRAN_MSG; an orderly consumer holding locks sends retries past their maximum to the DLQ.

use ferrocket::model::message::properties_to_string;
use ferrocket::model::perm;
use ferrocket::protocol::body::message::{encode_batch, BatchEntry};
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, pull, records, send, start_broker, wait_max_offset};
use super::support::*;

fn batch_body(n: usize) -> Vec<u8> {
    let entries: Vec<BatchEntry> = (0..n)
        .map(|i| BatchEntry {
            flag: 0,
            body: format!("body-{i}").into(),
            properties: properties_to_string([("KEYS", format!("key-{i}").as_str()), ("TAGS", "A")]),
        })
        .collect();
    encode_batch(&entries).unwrap()
}

/// SEND_MESSAGE (10) spells the header out; `batch` is its flag.
fn send_v1(topic: &str, batch: bool) -> RemotingCommand {
    request(
        RequestCode::SEND_MESSAGE,
        &[
            ("producerGroup", "PG"),
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "0"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1"),
            ("flag", "0"),
            ("batch", if batch { "true" } else { "false" }),
        ],
    )
}

async fn pulled(c: &Client, addr: &str, topic: &str, queue: i32) -> Vec<(String, String)> {
    let r = call_addr(c, addr, pull(topic, queue, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    records(&r.body)
        .into_iter()
        .map(|m| {
            let key = ferrocket::model::message::property_value(&m.properties, "KEYS").unwrap_or("").to_owned();
            (String::from_utf8_lossy(&m.body).into_owned(), key)
        })
        .collect()
}

#[tokio::test]
async fn the_batch_flag_decides_whatever_the_request_code() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let expected: Vec<(String, String)> = (0..32).map(|i| (format!("body-{i}"), format!("key-{i}"))).collect();

    // The C++ client: SEND_MESSAGE_V2 with m=true.
    let mut v2 = send("BF2", 0, &[], "A").with_body(batch_body(32));
    v2.ext_fields.insert("m".into(), "true".into());
    let r = call_addr(&c, &b.addr, v2).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.ext_fields["msgId"].split(',').count(), 32);
    wait_max_offset(&c, &b.addr, "BF2", 0, 32).await;
    assert_eq!(pulled(&c, &b.addr, "BF2", 0).await, expected);

    // The C++ client 2.x writes the flag as "1" (Java reads that as false and stores one garbled
    // message); ferrocket reads it as the true it means, for either header.
    let mut one = send("BF5", 0, &[], "A").with_body(batch_body(32));
    one.ext_fields.insert("m".into(), "1".into());
    let r = call_addr(&c, &b.addr, one).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "BF5", 0, 32).await;
    assert_eq!(pulled(&c, &b.addr, "BF5", 0).await, expected);
    let mut one_v1 = send_v1("BF6", false).with_body(batch_body(32));
    one_v1.ext_fields.insert("batch".into(), "1".into());
    assert_eq!(call_addr(&c, &b.addr, one_v1).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "BF6", 0, 32).await;
    assert_eq!(pulled(&c, &b.addr, "BF6", 0).await, expected);

    // SEND_MESSAGE with batch=true.
    let r = call_addr(&c, &b.addr, send_v1("BF1", true).with_body(batch_body(32))).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "BF1", 0, 32).await;
    assert_eq!(pulled(&c, &b.addr, "BF1", 0).await, expected);

    // SEND_BATCH_MESSAGE without the flag is one message, as Java stores it.
    let mut plain = send("BF3", 0, b"one body", "A");
    plain.code = RequestCode::SEND_BATCH_MESSAGE.0;
    let r = call_addr(&c, &b.addr, plain).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "BF3", 0, 1).await;
    assert_eq!(pulled(&c, &b.addr, "BF3", 0).await, vec![("one body".to_owned(), "k1 k2".to_owned())]);

    // batch=false on SEND_MESSAGE: a single message, even with a batch-looking body.
    let r = call_addr(&c, &b.addr, send_v1("BF4", false).with_body(b"x".to_vec())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "BF4", 0, 1).await;
    b.stop().await;
}

#[tokio::test]
async fn unit_mode_and_boolean_properties_read_like_java() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let mut unit = send("UNIT_T", 0, b"m", "A");
    unit.ext_fields.insert("k".into(), "true".into());
    assert_eq!(call_addr(&c, &b.addr, unit).await.response_code(), ResponseCode::SUCCESS);
    assert_eq!(call_addr(&c, &b.addr, send("PLAIN_T", 0, b"m", "A")).await.response_code(), ResponseCode::SUCCESS);
    let all = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    let table: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
    assert_eq!(table["topicConfigTable"]["UNIT_T"]["topicSysFlag"], perm::FLAG_UNIT);
    assert_eq!(table["topicConfigTable"]["PLAIN_T"]["topicSysFlag"], 0);

    // Boolean.parseBoolean: "TRUE" marks a transactional message: a half message, not on its topic.
    let tx = || {
        let mut tx = send("TX_T", 0, b"m", "A");
        tx.ext_fields.insert("i".into(), properties_to_string([("TRAN_MSG", "TRUE"), ("PGROUP", "PG")]));
        tx
    };
    let r = call_addr(&c, &b.addr, tx()).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.ext_fields["queueId"], "0", "the queue asked for, not the half queue");
    wait_max_offset(&c, &b.addr, "RMQ_SYS_TRANS_HALF_TOPIC", 0, 1).await;
    let max = request(RequestCode::GET_MAX_OFFSET, &[("topic", "TX_T"), ("queueId", "0")]);
    assert_eq!(call_addr(&c, &b.addr, max).await.ext_fields.get("offset").map(String::as_str), Some("0"));
    b.stop().await;

    // rejectTransactionMessage refuses them, naming the broker.
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.reject_transaction_message = true).await;
    let r = call_addr(&c, &b.addr, tx()).await;
    assert_eq!(r.response_code(), ResponseCode::NO_PERMISSION);
    assert!(r.remark.unwrap_or_default().contains("sending transaction message is forbidden"));
    b.stop().await;
}

#[tokio::test]
async fn an_orderly_consumer_holding_locks_sends_retries_to_the_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("ORD", 0, b"m", "A")).await.response_code(), ResponseCode::SUCCESS);
    let retry = |body: &'static [u8]| {
        let mut r = send("%RETRY%OG", 0, body, "A");
        r.ext_fields.insert("j".into(), "1".into()); // reconsumeTimes
        r.ext_fields.insert("l".into(), "16".into()); // maxReconsumeTimes
        r.version = 500;
        r
    };
    // No locks: a retry below the maximum stays on the retry topic.
    let r = call_addr(&c, &b.addr, retry(b"first")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "%RETRY%OG", 0, 1).await;

    let lock = serde_json::json!({"consumerGroup":"OG","clientId":"c1","onlyThisBroker":false,
        "mqSet":[{"topic":"ORD","brokerName":"broker-t","queueId":0}]});
    let r =
        call_addr(&c, &b.addr, request(RequestCode::LOCK_BATCH_MQ, &[]).with_body(lock.to_string().into_bytes())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let r = call_addr(&c, &b.addr, retry(b"second")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "%DLQ%OG", 0, 1).await;
    let mut p = pull("%DLQ%OG", 0, 0, 4, 0);
    p.ext_fields.insert("consumerGroup".into(), "DLQ_READER".into());
    let r = call_addr(&c, &b.addr, p).await;
    assert_eq!(records(&r.body).iter().map(|m| m.body.to_vec()).collect::<Vec<_>>(), vec![b"second".to_vec()]);
    b.stop().await;
}
