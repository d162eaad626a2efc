//! `ferrocket admin` against an in-process NameServer and broker.

use ferrocket::tools::admin::AdminError;
use ferrocket::tools::admin_cmd::{run, AdminCommand};

use super::broker::{call_addr, send, start_broker, wait_max_offset};
use super::support::*;

#[tokio::test]
async fn admin_commands_show_cluster_topics_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let ns = b.ns.as_ref().unwrap().addr.to_string();
    let c = client();
    for i in 0..3 {
        let mut req = send("AdminT", 0, format!("m{i}").as_bytes(), "A");
        req.ext_fields
            .insert("i".into(), ferrocket::model::message::properties_to_string([("KEYS", "order-7"), ("TAGS", "A")]));
        call_addr(&c, &b.addr, req).await;
    }
    wait_max_offset(&c, &b.addr, "AdminT", 0, 3).await;

    let out = run(&ns, AdminCommand::ClusterList).await.unwrap();
    assert!(out.contains("broker-t") && out.contains(&b.addr) && out.contains("V5_3_3"), "{out}");
    let out = run(&ns, AdminCommand::TopicStatus { topic: "AdminT".into() }).await.unwrap();
    let row = out.lines().find(|l| l.starts_with("broker-t  0")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(row.split_whitespace().nth(3), Some("3"), "max offset of queue 0: {out}");
    let out = run(&ns, AdminCommand::QueryMsgByKey { topic: "AdminT".into(), key: "order-7".into() }).await.unwrap();
    assert_eq!(out.matches("msgId:").count(), 3, "{out}");
    let id = out.lines().next().unwrap().trim_start_matches("msgId: ").to_owned();
    let out = run(&ns, AdminCommand::QueryMsgById { id }).await.unwrap();
    assert!(out.contains("keys: order-7"), "{out}");

    let create = AdminCommand::UpdateTopic {
        topic: "Made".into(),
        cluster: Some("DefaultCluster".into()),
        broker: None,
        read_queues: 3,
        write_queues: 2,
        perm: 6,
        attributes: Vec::new(),
    };
    assert!(run(&ns, create).await.unwrap().contains("OK"));
    let route = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            if let Ok(out) = run(&ns, AdminCommand::TopicRoute { topic: "Made".into() }).await {
                return out;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("created topic never reached the NameServer");
    assert!(route.contains("broker-t  3     2      RW-"), "{route}");

    let err = run(&ns, AdminCommand::TopicRoute { topic: "Nope".into() }).await.unwrap_err();
    assert!(matches!(err, AdminError::Refused { code: 17, .. }), "{err}");

    let group = AdminCommand::UpdateSubGroup {
        group: "MadeG".into(),
        cluster: Some("DefaultCluster".into()),
        broker: None,
        consume_orderly: true,
        retry_max_times: 1,
    };
    assert!(run(&ns, group).await.unwrap().contains("create subscription group MadeG on broker-t"));
    let made = b.inner.groups.get("MadeG").expect("the group");
    assert!(made.consume_message_orderly);
    assert_eq!(made.retry_max_times, 1);
    b.stop().await;
}

/// UPDATE_BROKER_CONFIG: refusals name the key and write nothing; accepted keys land in the
/// config file in place (comments kept), live keys at once, the others with a remark that they
/// need a restart; a broker without a config file refuses the latter.
#[tokio::test]
async fn broker_config_updates_are_checked_and_written_back_to_the_config_file() {
    use ferrocket::protocol::{RequestCode, ResponseCode};
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "# mine\nbrokerName=broker-t\nbrokerPermission=6\n").unwrap();
    let path = conf.display().to_string();
    let b = start_broker(dir.path(), |c| c.broker_config_path = path).await;
    let c = client();
    let update = |body: &str| request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(body.to_owned());
    let refused = [
        ("brokerConfigPath=/tmp/x\n", ResponseCode::NO_PERMISSION, "black list"),
        ("noSuchKey=1\n", ResponseCode::SYSTEM_ERROR, "noSuchKey"),
        ("defaultTopicQueueNums=many\n", ResponseCode::SYSTEM_ERROR, "defaultTopicQueueNums"),
        ("brokerRole=LEADER\n", ResponseCode::SYSTEM_ERROR, "brokerRole"),
    ];
    for (body, code, names) in refused {
        let resp = call_addr(&c, &b.addr, update(body)).await;
        assert_eq!(resp.response_code(), code, "{body}");
        assert!(resp.remark.as_deref().unwrap_or("").contains(names), "{body}: {:?}", resp.remark);
    }
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "# mine\nbrokerName=broker-t\nbrokerPermission=6\n");

    let resp = call_addr(&c, &b.addr, update("brokerPermission=4\ndefaultTopicQueueNums=3\n")).await;
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    let remark = resp.remark.unwrap_or_default();
    assert!(remark.contains("defaultTopicQueueNums") && remark.contains("restart"), "{remark}");
    assert!(!remark.contains("brokerPermission"), "a live key is not said to need a restart: {remark}");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(text, "# mine\nbrokerName=broker-t\nbrokerPermission=4\ndefaultTopicQueueNums=3\n");
    let loaded = ferrocket::broker::BrokerConfig::load(Some(&conf), None).unwrap();
    assert_eq!((loaded.broker_permission, loaded.default_topic_queue_nums), (4, 3));
    let get = call_addr(&c, &b.addr, request(RequestCode::GET_BROKER_CONFIG, &[])).await;
    assert!(String::from_utf8_lossy(&get.body).contains("brokerPermission=4\n"), "live value");
    b.stop().await;

    // No config file: a key that needs a restart could never take effect.
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let resp = call_addr(&c, &b.addr, update("defaultTopicQueueNums=3\n")).await;
    assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(resp.remark.unwrap_or_default().contains("no config file"));
    let resp = call_addr(&c, &b.addr, update("autoCreateTopicEnable=false\n")).await;
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "a live key without a file: {:?}", resp.remark);
    b.stop().await;
}
