//! The admin request codes mqadmin sends that Java 5.3.3 serves (issue #28 point 4), over real
//! TCP: GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), QUERY_CONSUME_QUEUE (321),
//! UPDATE_AND_CREATE_TOPIC_LIST (18), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225), their ACL,
//! and the one rate-limited WARN line of a code nothing serves. Hostile input included: unknown
//! topics, queue ids out of range, oversize lists, invalid names in a list.

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use serde_json::{json, Value};

use super::acl::{sign, start_acl_broker};
use super::broker::{call_addr, send, start_broker, wait_max_offset};
use super::support::*;

fn body_json(r: &RemotingCommand) -> Value {
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.body)))
}

fn query_cq(topic: &str, queue: &str, index: &str, count: &str, group: Option<&str>) -> RemotingCommand {
    let mut ext = vec![("topic", topic), ("queueId", queue), ("index", index), ("count", count)];
    if let Some(g) = group {
        ext.push(("consumerGroup", g));
    }
    request(RequestCode(321), &ext)
}

fn topic_list(topics: &[Value]) -> RemotingCommand {
    request(RequestCode(18), &[]).with_body(serde_json::to_vec(&json!({ "topicConfigList": topics })).unwrap())
}

fn group_list(groups: &[Value]) -> RemotingCommand {
    request(RequestCode(225), &[]).with_body(serde_json::to_vec(&json!({ "groupConfigList": groups })).unwrap())
}

fn topic(name: &str) -> Value {
    json!({ "topicName": name, "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "attributes": {"+message.type": "NORMAL"} })
}

fn refused(r: &RemotingCommand, says: &str) {
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "{says}");
    let remark = r.remark.as_deref().unwrap_or("");
    assert!(remark.contains(says), "remark {remark:?} should say {says:?}");
}

#[tokio::test]
async fn system_topic_list_is_java_s_set() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.broker_cluster_name = "CL".into()).await;
    let list = body_json(&call_addr(&client(), &b.addr, request(RequestCode(305), &[])).await);
    let topics: Vec<&str> = list["topicList"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in [
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRACE_TOPIC",
        "CL",
        "broker-t",
        "CL_REPLY_TOPIC",
        "rmq_sys_wheel_timer",
    ] {
        assert!(topics.contains(&t), "{t} missing from {topics:?}");
    }
    assert!(!topics.iter().any(|t| t.starts_with("%RETRY%")), "{topics:?}");
    b.stop().await;
}

#[tokio::test]
async fn query_consume_queue_shows_units_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for body in [&b"one"[..], b"two", b"three"] {
        assert_eq!(call_addr(&c, &b.addr, send("CQT", 0, body, "TagA")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "CQT", 0, 3).await;

    let v = body_json(&call_addr(&c, &b.addr, query_cq("CQT", "0", "0", "10", None)).await);
    assert_eq!((v["minQueueIndex"].as_i64(), v["maxQueueIndex"].as_i64()), (Some(0), Some(3)), "{v}");
    let units = v["queueData"].as_array().unwrap();
    assert_eq!(units.len(), 3, "{v}");
    let offsets: Vec<i64> = units.iter().map(|u| u["physicOffset"].as_i64().unwrap()).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert!(units.iter().all(|u| u["physicSize"].as_i64().unwrap() > 0), "{v}");
    assert!(units.iter().all(|u| u["tagsCode"] == units[0]["tagsCode"]), "same tag, same code: {v}");
    assert!(v.get("subscriptionData").is_none() && v.get("filterData").is_none(), "{v}");
    // count bounds what is read; a count of 0 or less reads nothing, as Java's loop does.
    let v = body_json(&call_addr(&c, &b.addr, query_cq("CQT", "0", "1", "1", None)).await);
    assert_eq!(v["queueData"].as_array().unwrap().len(), 1);
    assert_eq!(v["queueData"][0]["physicOffset"].as_i64(), Some(offsets[1]));
    let v = body_json(&call_addr(&c, &b.addr, query_cq("CQT", "0", "0", "-5", None)).await);
    assert!(v["queueData"].as_array().unwrap().is_empty(), "{v}");
    let v = body_json(&call_addr(&c, &b.addr, query_cq("CQT", "0", "0", "2147483647", None)).await);
    assert_eq!(v["queueData"].as_array().unwrap().len(), 3);
    // A group named: its subscription, or that it is not online.
    let v = body_json(&call_addr(&c, &b.addr, query_cq("CQT", "0", "0", "1", Some("OFFLINE_G"))).await);
    assert_eq!(v["filterData"], "OFFLINE_G@CQT is not online!", "{v}");

    // Outside [min, max): SUCCESS without a body, as Java.
    let r = call_addr(&c, &b.addr, query_cq("CQT", "0", "3", "10", None)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(r.remark.as_deref(), Some("Index 3 of 0@CQT is not exist!"));
    assert!(r.body.is_empty());
    let r = call_addr(&c, &b.addr, query_cq("CQT", "0", "-1", "10", None)).await;
    assert_eq!(r.remark.as_deref(), Some("Index -1 of 0@CQT is not exist!"));
    // No such queue, no such topic, a hostile name, a negative queue id, missing fields.
    refused(&call_addr(&c, &b.addr, query_cq("CQT", "7", "0", "10", None)).await, "7@CQT is not exist!");
    refused(&call_addr(&c, &b.addr, query_cq("NOPE", "0", "0", "10", None)).await, "0@NOPE is not exist!");
    refused(&call_addr(&c, &b.addr, query_cq("../../etc", "0", "0", "10", None)).await, "");
    refused(&call_addr(&c, &b.addr, query_cq("CQT", "-1", "0", "10", None)).await, "queueId -1 is negative");
    refused(&call_addr(&c, &b.addr, query_cq("CQT", "0", "0", "10", Some("bad group!"))).await, "");
    refused(&call_addr(&c, &b.addr, request(RequestCode(321), &[("topic", "CQT")])).await, "");
    b.stop().await;
}

#[tokio::test]
async fn topic_list_creates_every_topic_checked_as_the_single_request() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let r = call_addr(&c, &b.addr, topic_list(&[topic("BulkA"), topic("BulkB")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    for t in ["BulkA", "BulkB"] {
        let tc = b.inner.topics.get(t).unwrap_or_else(|| panic!("{t} not created"));
        assert_eq!((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (2, 2, 6));
        assert_eq!(tc.attributes.get("message.type").map(String::as_str), Some("NORMAL"), "{:?}", tc.attributes);
    }
    // One bad entry refuses the whole list, before anything is created.
    for (bad, says) in [
        (topic("bad topic"), "bad topic"),
        (topic("TBW102"), "conflict with system topic"),
        // The broker's own topics are system topics too (TopicConfigManager adds them).
        (topic("RMQ_SYS_TRACE_TOPIC"), "conflict with system topic"),
        (topic("DefaultCluster_REPLY_TOPIC"), "conflict with system topic"),
        (json!({ "topicName": "ZeroQ", "readQueueNums": 0, "writeQueueNums": 2 }), "queue numbers must be positive"),
        (topic(&"x".repeat(300)), ""),
    ] {
        let r = call_addr(&c, &b.addr, topic_list(&[topic("NotYet"), bad])).await;
        refused(&r, says);
        assert!(!b.inner.topics.contains("NotYet"), "a refused list created a topic");
    }
    let many: Vec<Value> = (0..1001).map(|i| topic(&format!("Many{i}"))).collect();
    refused(&call_addr(&c, &b.addr, topic_list(&many)).await, "at most 1000");
    assert!(!b.inner.topics.contains("Many0"));
    refused(&call_addr(&c, &b.addr, request(RequestCode(18), &[]).with_body(b"{not json".to_vec())).await, "invalid");
    b.stop().await;
}

#[tokio::test]
async fn group_list_creates_every_group_checked_as_the_single_request() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let g = |name: &str| json!({ "groupName": name, "consumeEnable": true, "retryMaxTimes": 5 });
    let r = call_addr(&c, &b.addr, group_list(&[g("GA"), g("GB")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(b.inner.groups.get("GA").map(|g| g.retry_max_times), Some(5));
    assert!(b.inner.groups.contains("GB"));
    let r = call_addr(&c, &b.addr, group_list(&[g("GC"), g("bad/group")])).await;
    refused(&r, "");
    assert!(!b.inner.groups.contains("GC"), "a refused list created a group");
    let many: Vec<Value> = (0..1001).map(|i| g(&format!("Many{i}"))).collect();
    refused(&call_addr(&c, &b.addr, group_list(&many)).await, "at most 1000");
    refused(&call_addr(&c, &b.addr, request(RequestCode(225), &[]).with_body(b"[]".to_vec())).await, "invalid");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_cleaning_requests_need_an_admin_account() {
    let accounts = "accounts:\n  - accessKey: plainUser\n    secretKey: plainSecret\n    defaultTopicPerm: PUB|SUB\n  - accessKey: adminUser\n    secretKey: adminSecret\n    admin: true\n";
    let (b, _home, _store) = start_acl_broker(accounts).await;
    let c = client();
    let admin_only = [
        topic_list(&[topic("AclT")]),
        group_list(&[json!({ "groupName": "AclG" })]),
        request(RequestCode(306), &[]),
        request(RequestCode(316), &[]),
        request(RequestCode(329), &[]),
    ];
    for req in admin_only {
        let code = req.code;
        let r = call_addr(&c, &b.addr, sign(req.clone(), "plainUser", "plainSecret")).await;
        refused(&r, &format!("Need admin permission for request code={code}"));
        let r = call_addr(&c, &b.addr, sign(req.clone(), "adminUser", "adminSecret")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{code}: {:?}", r.remark);
        refused(&call_addr(&c, &b.addr, req).await, "No accessKey is configured");
    }
    assert!(b.inner.topics.contains("AclT") && b.inner.groups.contains("AclG"));
    // The read-only views need a valid signature only, as Java's plain ACL.
    for req in [request(RequestCode(305), &[]), request(RequestCode(907), &[])] {
        let r = call_addr(&c, &b.addr, sign(req.clone(), "plainUser", "plainSecret")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        refused(&call_addr(&c, &b.addr, req).await, "No accessKey is configured");
    }
    b.stop().await;
}

#[tokio::test]
async fn an_unsupported_code_is_refused_with_one_warn_line_a_minute() {
    let logs = logs();
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for _ in 0..5 {
        let r = call_addr(&c, &b.addr, request(RequestCode(31337), &[])).await;
        assert_eq!(r.response_code(), ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
        assert_eq!(r.remark.as_deref(), Some(" request type 31337 not supported"));
    }
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("code=31337")).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("WARN") && lines[0].contains("peer=127.0.0.1:"), "{}", lines[0]);
    assert!(!text.lines().any(|l| l.contains("ERROR") && l.contains("31337")), "{text}");
    b.stop().await;
}
