//! The statistics mqadmin reads, over real TCP (issue #28 points 2 and 3):
//! VIEW_BROKER_STATS_DATA (315, `statsAll`), the consume TPS of GET_CONSUME_STATS (208,
//! `consumerProgress`), GET_BROKER_CONSUME_STATS (317, `brokerConsumeStats`),
//! GET_ALL_PRODUCER_INFO (328, `producer`) and GET_BROKER_RUNTIME_INFO's key set (`brokerStatus`,
//! `clusterList`). Sampling is driven by the test (`stats.tick`), never by waiting 10 s.

use ferrocket::core::stats::now_ms;
use ferrocket::model::message::properties_to_string;
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use kafka_protocol::messages::*;

use super::broker::{pull, send, start_broker, wait_max_offset};
use super::broker_harness::call_addr;
use super::kafka::{batch, create, first, produce, Conn};
use super::support::*;

fn view(name: &str, key: &str) -> RemotingCommand {
    request(RequestCode(315), &[("statsName", name), ("statsKey", key)])
}

fn json(r: &RemotingCommand) -> serde_json::Value {
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.body)))
}

/// The number after `"<member>":` in a fastjson body keyed by objects (not JSON serde reads).
fn number_after(body: &[u8], member: &str) -> f64 {
    let text = String::from_utf8_lossy(body);
    let at = text.find(&format!("\"{member}\":")).unwrap_or_else(|| panic!("no {member} in {text}"));
    let rest = &text[at + member.len() + 3..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].parse().unwrap_or_else(|e| panic!("{member}: {e} in {text}"))
}

#[tokio::test]
async fn sends_and_pulls_show_in_the_stats_mqadmin_reads() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    // Nothing counted yet: Java's answer for a key it never saw.
    let r = call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "ST")).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(r.remark.as_deref(), Some("The stats <TOPIC_PUT_NUMS> <ST> not exist"));
    for _ in 0..10 {
        assert_eq!(
            call_addr(&c, &b.addr, send("ST", 0, &[b'x'; 100], "A")).await.response_code(),
            ResponseCode::SUCCESS
        );
    }
    wait_max_offset(&c, &b.addr, "ST", 0, 10).await;
    let r = call_addr(&c, &b.addr, pull("ST", 0, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    b.inner.stats.tick(now_ms());

    let put = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "ST")).await);
    assert_eq!(put["statsMinute"]["sum"], 10, "{put}");
    assert!(put["statsMinute"]["tps"].as_f64().unwrap() > 0.0, "{put}");
    assert_eq!(put["statsMinute"]["avgpt"], 1.0, "one message a send: {put}");
    for w in ["statsHour", "statsDay"] {
        assert!(put[w]["sum"].is_u64() && put[w]["tps"].is_f64(), "{put}");
    }
    let size = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_SIZE", "ST")).await);
    assert!(size["statsMinute"]["sum"].as_u64().unwrap() > 1000, "10 records of 100-byte bodies: {size}");
    let get = json(&call_addr(&c, &b.addr, view("GROUP_GET_NUMS", "ST@CG")).await);
    assert_eq!(get["statsMinute"]["sum"], 10, "{get}");
    let r = call_addr(&c, &b.addr, view("NO_SUCH_STATS", "ST")).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);

    // consumerProgress: the group's consume TPS over the last minute.
    let stats = request(RequestCode::GET_CONSUME_STATS, &[("consumerGroup", "CG"), ("topic", "ST")]);
    let r = call_addr(&c, &b.addr, stats).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert!(number_after(&r.body, "consumeTps") > 0.0, "{}", String::from_utf8_lossy(&r.body));
    let other = request(RequestCode::GET_CONSUME_STATS, &[("consumerGroup", "IDLE"), ("topic", "ST")]);
    assert_eq!(number_after(&call_addr(&c, &b.addr, other).await.body, "consumeTps"), 0.0);

    // A deleted group, then a deleted topic, is forgotten (`onGroupDeleted`, `onTopicDeleted`).
    let delete_group = request(RequestCode::DELETE_SUBSCRIPTIONGROUP, &[("groupName", "CG")]);
    assert_eq!(call_addr(&c, &b.addr, delete_group).await.response_code(), ResponseCode::SUCCESS);
    let r = call_addr(&c, &b.addr, view("GROUP_GET_NUMS", "ST@CG")).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    let delete_topic = request(RequestCode::DELETE_TOPIC_IN_BROKER, &[("topic", "ST")]);
    assert_eq!(call_addr(&c, &b.addr, delete_topic).await.response_code(), ResponseCode::SUCCESS);
    let r = call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "ST")).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    b.stop().await;
}

#[tokio::test]
async fn broker_consume_stats_list_every_group_with_its_lag() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for _ in 0..10 {
        call_addr(&c, &b.addr, send("BCS", 0, b"m", "A")).await;
    }
    wait_max_offset(&c, &b.addr, "BCS", 0, 10).await;
    let create_group =
        request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[]).with_body(r#"{"groupName":"CG"}"#);
    assert_eq!(call_addr(&c, &b.addr, create_group).await.response_code(), ResponseCode::SUCCESS);
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "CG"), ("topic", "BCS"), ("queueId", "0"), ("commitOffset", "4")],
    );
    assert_eq!(call_addr(&c, &b.addr, commit).await.response_code(), ResponseCode::SUCCESS);

    let r = call_addr(&c, &b.addr, request(RequestCode(317), &[("isOrder", "false")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(text.contains(&format!("\"brokerAddr\":\"{}\"", b.addr)), "{text}");
    assert!(text.contains("{\"CG\":[{\"consumeTps\":"), "{text}");
    assert!(text.contains("\"brokerOffset\":10,\"consumerOffset\":4"), "{text}");
    assert_eq!(number_after(&r.body, "totalDiff"), 6.0, "{text}");
    // Ordered topics only: BCS is not one.
    let r = call_addr(&c, &b.addr, request(RequestCode(317), &[("isOrder", "true")])).await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(text.contains("{\"CG\":[]}") && text.contains("\"totalDiff\":0"), "{text}");
    b.stop().await;
}

#[tokio::test]
async fn producer_info_lists_every_producer_connection() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let empty = json(&call_addr(&c, &b.addr, request(RequestCode(328), &[])).await);
    assert_eq!(empty, serde_json::json!({"data": {}}));
    let hb = serde_json::json!({"clientID": "127.0.0.1@7#1", "producerDataSet": [{"groupName": "PG1"}], "consumerDataSet": []});
    let r =
        call_addr(&c, &b.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let t = json(&call_addr(&c, &b.addr, request(RequestCode(328), &[])).await);
    let p = &t["data"]["PG1"][0];
    assert_eq!(p["clientId"], "127.0.0.1@7#1", "{t}");
    assert!(p["remoteIP"].as_str().unwrap().starts_with("/127.0.0.1:"), "{t}");
    assert!(p["language"].is_string() && p["version"].is_i64(), "{t}");
    let age = now_ms() as i64 - p["lastUpdateTimestamp"].as_i64().unwrap();
    assert!((0..60_000).contains(&age), "{t}");
    b.stop().await;
}

/// Java 5.3.3's keys (a broker without a transient store pool, timer wheel on), as
/// `brokerStatus` prints them; `scheduleMessageOffset_<level>` follows for each delay level
/// that delivered, and `commitLogDiskRatio_<commit log dir>`.
const JAVA_KEYS: &[&str] = &[
    "bootTimestamp",
    "runtime",
    "putMessageEntireTimeMax",
    "putMessageTimesTotal",
    "putMessageFailedTimes",
    "putMessageSizeTotal",
    "putMessageDistributeTime",
    "putMessageAverageSize",
    "dispatchMaxBuffer",
    "getMessageEntireTimeMax",
    "putTps",
    "getFoundTps",
    "getMissTps",
    "getTotalTps",
    "getTransferredTps",
    "putLatency99",
    "putLatency999",
    "commitLogDiskRatio",
    "consumeQueueDiskRatio",
    "commitLogMinOffset",
    "commitLogMaxOffset",
    "brokerActive",
    "brokerVersionDesc",
    "brokerVersion",
    "msgPutTotalYesterdayMorning",
    "msgPutTotalTodayMorning",
    "msgPutTotalTodayNow",
    "msgGetTotalYesterdayMorning",
    "msgGetTotalTodayMorning",
    "msgGetTotalTodayNow",
    "dispatchBehindBytes",
    "pageCacheLockTimeMills",
    "earliestMessageTimeStamp",
    "startAcceptSendRequestTimeStamp",
    "timerReadBehind",
    "timerOffsetBehind",
    "timerCongestNum",
    "timerEnqueueTps",
    "timerDequeueTps",
    "remainTransientStoreBufferNumbs",
    "remainHowManyDataToFlush",
    "commitLogDirCapacity",
    "sendThreadPoolQueueSize",
    "sendThreadPoolQueueCapacity",
    "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity",
    "litePullThreadPoolQueueSize",
    "litePullThreadPoolQueueCapacity",
    "queryThreadPoolQueueSize",
    "queryThreadPoolQueueCapacity",
    "ackThreadPoolQueueSize",
    "ackThreadPoolQueueCapacity",
    "sendThreadPoolQueueHeadWaitTimeMills",
    "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills",
    "litePullThreadPoolQueueHeadWaitTimeMills",
    "ackThreadPoolQueueHeadWaitTimeMills",
    "EndTransactionQueueSize",
    "EndTransactionThreadPoolQueueCapacity",
];

#[tokio::test]
async fn runtime_info_has_javas_keys_in_javas_formats() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let before = now_ms() as i64;
    b.inner.stats.tick(now_ms());
    for _ in 0..5 {
        call_addr(&c, &b.addr, send("RT", 0, b"m", "A")).await;
    }
    wait_max_offset(&c, &b.addr, "RT", 0, 5).await;
    b.inner.stats.tick(now_ms() + 10_000);

    let r = call_addr(&c, &b.addr, request(RequestCode::GET_BROKER_RUNTIME_INFO, &[])).await;
    let t = &json(&r)["table"];
    let missing: Vec<_> = JAVA_KEYS.iter().filter(|k| t.get(**k).is_none()).collect();
    assert!(missing.is_empty(), "missing {missing:?} in {t}");
    let s = |k: &str| t[k].as_str().unwrap_or_else(|| panic!("{k} in {t}")).to_owned();
    let commit_log = dir.path().join("commitlog");
    assert!(t.get(format!("commitLogDiskRatio_{}", commit_log.display())).is_some(), "{t}");
    assert!(s("runtime").starts_with("[ 0 days, 0 hours, "), "{t}");
    let boot: i64 = s("bootTimestamp").parse().unwrap();
    assert!(boot <= before && before - boot < 60_000, "{t}");
    // clusterList parses these: the first TPS as a double, the ratio as a double.
    for k in ["putTps", "getTransferredTps", "getTotalTps"] {
        let v = s(k);
        assert_eq!(v.split(' ').count(), 3, "{k}={v}");
        for part in v.split(' ').filter(|p| !p.is_empty()) {
            part.parse::<f64>().unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
    }
    assert!(!s("putTps").starts_with(' '), "two samples make the 10 s rate: {t}");
    let ratio: f64 = s("commitLogDiskRatio").parse().unwrap();
    assert!((0.0..=1.0).contains(&ratio), "{t}");
    assert!(s("commitLogDirCapacity").starts_with("Total : ") && s("commitLogDirCapacity").ends_with('.'), "{t}");
    let earliest: i64 = s("earliestMessageTimeStamp").parse().unwrap();
    assert!(earliest >= before && earliest <= now_ms() as i64, "{t}");
    assert_eq!(s("msgPutTotalTodayNow"), "5", "{t}");
    assert_eq!(s("putMessageTimesTotal"), "5", "{t}");
    assert_eq!(s("sendThreadPoolQueueHeadWaitTimeMills"), "0");
    assert_eq!(s("brokerActive"), "true");
    assert_eq!(s("putLatency99").split('.').nth(1).map(str::len), Some(2), "{t}");
    b.stop().await;
}

#[tokio::test]
async fn kafka_produce_and_fetch_are_counted_too() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = super::kafka::kafka_broker(dir.path()).await;
    let mut k = Conn::open(port).await;
    create(&mut k, "kst", 1).await;
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &produce("kst", 1, batch(3, None))).await;
    assert_eq!(first(&r).0, 0);
    let fetch =
        FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_wait_ms(0).with_max_bytes(1 << 20).with_topics(
            vec![fetch_request::FetchTopic::default().with_topic(super::kafka::name("kst")).with_partitions(vec![
                fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
            ])],
        );
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch).await;
    assert_eq!(r.responses[0].partitions[0].high_watermark, 3);
    b.inner.stats.tick(now_ms());
    let c = client();
    let put = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "kst")).await);
    assert_eq!(put["statsMinute"]["sum"], 3, "one produce of 3 records: {put}");
    assert_eq!(put["statsMinute"]["avgpt"], 3.0, "{put}");
    let r = call_addr(&c, &b.addr, request(RequestCode::GET_BROKER_RUNTIME_INFO, &[])).await;
    let t = &json(&r)["table"];
    assert_eq!(t["msgPutTotalTodayNow"], "3", "{t}");
    assert_eq!(t["msgGetTotalTodayNow"], "3", "{t}");
    b.stop().await;
}

/// Java counts a put under the topic it is stored on: a delayed send under
/// SCHEDULE_TOPIC_XXXX, its delivery under its own topic (`ScheduleMessageService`), a half
/// message under RMQ_SYS_TRANS_HALF_TOPIC (its commit counts under its own topic). Each message
/// counts once under its own topic.
#[tokio::test]
async fn a_delayed_or_half_message_counts_under_the_topic_it_is_stored_on() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.message_delay_level = "1s 2s".into()).await;
    let c = client();
    let mut delayed = send("SD", 0, b"later", "A");
    delayed.ext_fields.insert("i".into(), properties_to_string([("TAGS", "A"), ("DELAY", "1"), ("WAIT", "true")]));
    assert_eq!(call_addr(&c, &b.addr, delayed).await.response_code(), ResponseCode::SUCCESS);
    b.inner.stats.tick(now_ms());
    let scheduled = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "SCHEDULE_TOPIC_XXXX")).await);
    assert_eq!(scheduled["statsMinute"]["sum"], 1, "{scheduled}");
    wait_max_offset(&c, &b.addr, "SD", 0, 1).await;
    b.inner.stats.tick(now_ms());
    let delivered = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "SD")).await);
    assert_eq!(delivered["statsMinute"]["sum"], 1, "counted once, at delivery: {delivered}");

    let r = call_addr(&c, &b.addr, super::transactions::half("SH")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    b.inner.stats.tick(now_ms());
    let half = json(&call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "RMQ_SYS_TRANS_HALF_TOPIC")).await);
    assert_eq!(half["statsMinute"]["sum"], 1, "{half}");
    let r = call_addr(&c, &b.addr, view("TOPIC_PUT_NUMS", "SH")).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "not stored on SH before its commit");
    b.stop().await;
}
