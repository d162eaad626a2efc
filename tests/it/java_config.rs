//! The Java broker's config files make the round trip through ferrocket without loss: members
//! ferrocket does not model (a 5.x group's `groupRetryPolicy` and `subscriptionDataSet`,
//! `resetOffsetTable`, `pullOffsetTable`, a newer release's members) are written back as read.
//! compat-tests (JavaConfigRoundTripTest) does the same with files the Java broker wrote.

use ferrocket::protocol::{RequestCode, ResponseCode};
use serde_json::{json, Value};

use super::broker::{call_addr, start_broker};
use super::support::*;

/// What Java 5.x writes (fastjson, pretty; bare integer keys in the offset tables).
const GROUPS: &str = r#"{
	"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1733000000000},
	"forbiddenTable":{},
	"subscriptionGroupTable":{
		"RetryGroup":{
			"attributes":{},
			"brokerId":0,
			"consumeBroadcastEnable":true,
			"consumeEnable":true,
			"consumeFromMinEnable":true,
			"consumeMessageOrderly":false,
			"consumeTimeoutMinute":15,
			"groupName":"RetryGroup",
			"groupRetryPolicy":{
				"exponentialRetryPolicy":{"initial":2000,"max":60000,"multiplier":3},
				"type":"EXPONENTIAL"
			},
			"groupSysFlag":0,
			"notifyConsumerIdsChangedEnable":true,
			"retryMaxTimes":5,
			"retryQueueNums":1,
			"subscriptionDataSet":[{"expressionType":"TAG","subString":"*","topic":"T1"}],
			"whichBrokerWhenConsumeSlowly":1,
			"someFutureMember":{"nested":[1,2,3]}
		}
	}
}"#;

const TOPICS: &str = r#"{
	"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1733000000000},
	"topicConfigTable":{
		"T1":{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":6,"readQueueNums":4,
			"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4,
			"topicMessageType":"NORMAL"}
	},
	"topicQueueMappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1733000000000}
}"#;

const OFFSETS: &str = r#"{
	"dataVersion":{"counter":9,"stateVersion":0,"timestamp":1733000000000},
	"offsetTable":{"T1@RetryGroup":{0:5,1:7}},
	"pullOffsetTable":{"T1@RetryGroup":{0:5,1:7}},
	"resetOffsetTable":{}
}"#;

const DELAY: &str = r#"{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1733000000000},"offsetTable":{1:4,3:2},"futureDelayMember":true}"#;

fn read(dir: &std::path::Path, file: &str) -> Value {
    let text = std::fs::read_to_string(dir.join("config").join(file)).unwrap();
    // Java's bare integer keys, normalized by the same lenient reader ferrocket loads them with.
    ferrocket::protocol::body::json::from_slice(text.as_bytes()).unwrap()
}

/// Every member of `java` is in `ours` with the same value (objects compared member by member,
/// recursively), except the paths in `changed`.
fn assert_kept(java: &Value, ours: &Value, path: &str, changed: &[&str]) {
    if changed.contains(&path) {
        return;
    }
    match (java, ours) {
        (Value::Object(j), Value::Object(o)) => {
            for (k, v) in j {
                let at = format!("{path}/{k}");
                let Some(ov) = o.get(k) else { panic!("{at} lost in ferrocket's rewrite") };
                assert_kept(v, ov, &at, changed);
            }
        }
        _ => assert_eq!(java, ours, "{path} changed"),
    }
}

#[tokio::test]
async fn java_config_members_survive_a_ferrocket_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    for (file, text) in [
        ("subscriptionGroup.json", GROUPS),
        ("topics.json", TOPICS),
        ("consumerOffset.json", OFFSETS),
        ("delayOffset.json", DELAY),
    ] {
        std::fs::write(config.join(file), text).unwrap();
    }
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    // Changes that make ferrocket rewrite each file (delayOffset.json is written at shutdown).
    let topic = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[("topic", "T2"), ("readQueueNums", "2"), ("writeQueueNums", "2"), ("perm", "6")],
    );
    assert_eq!(call_addr(&c, &b.addr, topic).await.response_code(), ResponseCode::SUCCESS);
    let group = request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[]).with_body(r#"{"groupName":"G2"}"#);
    assert_eq!(call_addr(&c, &b.addr, group).await.response_code(), ResponseCode::SUCCESS);
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "RetryGroup"), ("topic", "T1"), ("queueId", "2"), ("commitOffset", "3")],
    );
    assert_eq!(call_addr(&c, &b.addr, commit).await.response_code(), ResponseCode::SUCCESS);
    b.stop().await;

    let java_groups: Value = ferrocket::protocol::body::json::from_slice(GROUPS.as_bytes()).unwrap();
    let groups = read(dir.path(), "subscriptionGroup.json");
    assert_kept(&java_groups, &groups, "", &["/dataVersion"]);
    assert!(groups["subscriptionGroupTable"]["G2"].is_object());

    let java_topics: Value = ferrocket::protocol::body::json::from_slice(TOPICS.as_bytes()).unwrap();
    let topics = read(dir.path(), "topics.json");
    assert_kept(&java_topics, &topics, "", &["/dataVersion"]);
    assert!(topics["topicConfigTable"]["T2"].is_object());

    let java_offsets: Value = ferrocket::protocol::body::json::from_slice(OFFSETS.as_bytes()).unwrap();
    let offsets = read(dir.path(), "consumerOffset.json");
    assert_kept(&java_offsets, &offsets, "", &["/dataVersion/timestamp"]);
    assert_eq!(offsets["offsetTable"]["T1@RetryGroup"], json!({"0": 5, "1": 7, "2": 3}));

    let java_delay: Value = ferrocket::protocol::body::json::from_slice(DELAY.as_bytes()).unwrap();
    assert_kept(&java_delay, &read(dir.path(), "delayOffset.json"), "", &["/dataVersion/timestamp"]);
}
