//! What the admin API asks about one consumer group (`AdminBrokerProcessor`), over real TCP:
//! QUERY_TOPICS_BY_CONSUMER (343), QUERY_SUBSCRIPTION_BY_CONSUMER (345), QUERY_CONSUME_TIME_SPAN
//! (303) and GET_SUBSCRIPTIONGROUP_CONFIG (352, read by the Java proxy in cluster mode).

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{send, start_broker, wait_max_offset};
use super::broker_harness::call_addr;
use super::support::*;

fn body(r: &RemotingCommand) -> serde_json::Value {
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.body)))
}

#[tokio::test]
async fn a_groups_topics_subscription_time_span_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let before = ferrocket::store::now_ms() as i64;
    for _ in 0..4 {
        assert_eq!(call_addr(&c, &b.addr, send("GQ", 0, b"m", "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "GQ", 0, 4).await;
    let create_group = request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
        .with_body(r#"{"groupName":"CG","retryMaxTimes":5}"#);
    assert_eq!(call_addr(&c, &b.addr, create_group).await.response_code(), ResponseCode::SUCCESS);
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "CG"), ("topic", "GQ"), ("queueId", "0"), ("commitOffset", "3")],
    );
    assert_eq!(call_addr(&c, &b.addr, commit).await.response_code(), ResponseCode::SUCCESS);
    let hb = serde_json::json!({
        "clientID": "127.0.0.1@1#1",
        "consumerDataSet": [{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",
          "subscriptionDataSet":[{"topic":"GQ","subString":"A || B","subVersion":5,"expressionType":"TAG","tagsSet":["A","B"],"codeSet":[65,66]}]}],
        "producerDataSet": [], "heartbeatFingerprint": 7, "withoutSub": false
    });
    let r =
        call_addr(&c, &b.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);

    let topics = body(&call_addr(&c, &b.addr, request(RequestCode(343), &[("group", "CG")])).await);
    assert_eq!(topics["topicList"], serde_json::json!(["GQ"]), "{topics}");
    assert_eq!(topics["brokerAddr"], b.addr.as_str(), "{topics}");

    let sub = body(&call_addr(&c, &b.addr, request(RequestCode(345), &[("group", "CG"), ("topic", "GQ")])).await);
    assert_eq!((&sub["group"], &sub["topic"]), (&"CG".into(), &"GQ".into()), "{sub}");
    assert_eq!(sub["subscriptionData"]["subString"], "A || B", "{sub}");
    let none = body(&call_addr(&c, &b.addr, request(RequestCode(345), &[("group", "CG"), ("topic", "OTHER")])).await);
    assert!(none.get("subscriptionData").is_none(), "{none}");

    let span = body(&call_addr(&c, &b.addr, request(RequestCode(303), &[("group", "CG"), ("topic", "GQ")])).await);
    let queues = span["consumeTimeSpanSet"].as_array().unwrap();
    assert_eq!(queues.len(), 4, "one per write queue: {span}");
    let q0 = &queues[0];
    assert_eq!(q0["messageQueue"]["queueId"], 0);
    let (min, max, consumed) = (
        q0["minTimeStamp"].as_i64().unwrap(),
        q0["maxTimeStamp"].as_i64().unwrap(),
        q0["consumeTimeStamp"].as_i64().unwrap(),
    );
    let now = ferrocket::store::now_ms() as i64;
    assert!(before <= min && min <= consumed && consumed <= max && max <= now, "{q0}");
    let delay = q0["delayTime"].as_i64().unwrap();
    assert!((0..=now - before + 1).contains(&delay), "the 4th message waits: {q0}");
    assert!(q0["minTimeStampStr"].as_str().unwrap().contains('#'), "{q0}");
    assert_eq!((queues[1]["minTimeStamp"].as_i64(), queues[1]["maxTimeStamp"].as_i64()), (Some(-1), Some(-1)));
    let r = call_addr(&c, &b.addr, request(RequestCode(303), &[("group", "CG"), ("topic", "NOPE")])).await;
    assert_eq!(r.response_code(), ResponseCode::TOPIC_NOT_EXIST);

    let config = body(&call_addr(&c, &b.addr, request(RequestCode(352), &[("group", "CG")])).await);
    assert_eq!((&config["groupName"], &config["retryMaxTimes"]), (&"CG".into(), &5.into()), "{config}");
    let r = call_addr(&c, &b.addr, request(RequestCode(352), &[("group", "NOBODY")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST);
    let all = body(&call_addr(&c, &b.addr, request(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[])).await);
    assert!(all["subscriptionGroupTable"].get("NOBODY").is_none(), "a query creates no group: {all}");
    let r = call_addr(&c, &b.addr, request(RequestCode(343), &[("group", "../x")])).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "an illegal group name is refused");
    b.stop().await;
}
