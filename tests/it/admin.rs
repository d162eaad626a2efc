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
    b.stop().await;
}
