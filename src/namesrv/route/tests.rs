//! Unit tests of `namesrv::route` (through `use super::*`): they may import what it may, plus test crates.

use super::*;

fn topics(names: &[&str]) -> BTreeMap<String, TopicConfig> {
    names
        .iter()
        .map(|n| {
            (
                n.to_string(),
                TopicConfig {
                    topic_name: n.to_string(),
                    read_queue_nums: 4,
                    write_queue_nums: 4,
                    ..Default::default()
                },
            )
        })
        .collect()
}

fn reg(name: &str, addr: &str, id: i64, topic_names: &[&str]) -> Registration {
    Registration {
        broker: BrokerIdentity { cluster: "DefaultCluster".into(), name: name.into(), addr: addr.into(), id },
        ha_server_addr: format!("{addr}-ha"),
        timeout_ms: 120_000,
        enable_acting_master: Some(false),
        zone_name: None,
        data_version: DataVersion { counter: 1, state_version: 0, timestamp: 1 },
        topics: Some(topics(topic_names)),
        conn_id: Some(7),
    }
}

#[test]
fn registration_builds_routes() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "127.0.0.1:10911", 0, &["T", "TBW102"]), 0, false).unwrap();
    let route = r.route("T").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].write_queue_nums, 4);
    assert_eq!(route.broker_datas[0].master_addr(), Some("127.0.0.1:10911"));
    assert!(r.route("nope").is_none());
    assert_eq!(r.all_topics().topic_list, vec!["T", "TBW102"]);
    assert_eq!(r.topics_by_cluster("DefaultCluster").topic_list.len(), 2);
    assert!(r.topics_by_cluster("other").topic_list.is_empty());
}

#[test]
fn topics_of_two_groups_merge_per_broker_name() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "A"]), 0, false).unwrap();
    r.register_broker(reg("broker-b", "h:2", 0, &["T", "B"]), 0, false).unwrap();
    let route = r.route("T").unwrap();
    assert_eq!(route.queue_datas.len(), 2);
    assert_eq!(route.broker_datas.len(), 2);
    assert_eq!(r.cluster_info().cluster_addr_table["DefaultCluster"].len(), 2);
}

#[test]
fn first_single_topic_registration_is_refused() {
    let mut r = RouteInfoManager::new();
    let err = r.register_broker(reg("broker-a", "h:1", 0, &["T"]), 0, false).unwrap_err();
    assert!(matches!(err, RouteError::SingleTopicBeforeFull(_)));
    assert!(r.cluster_info().broker_addr_table.is_empty());
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    r.register_broker(reg("broker-a", "h:1", 0, &["V"]), 1, false).unwrap();
    assert!(r.route("V").is_some());
}

#[test]
fn slave_gets_master_and_ha_address() {
    let mut r = RouteInfoManager::new();
    let slave = r.register_broker(reg("broker-a", "h:2", 1, &["T", "U"]), 0, false).unwrap();
    assert_eq!(slave, RegisterResult::default());
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    let slave = r.register_broker(reg("broker-a", "h:2", 1, &["T", "U"]), 0, false).unwrap();
    assert_eq!(slave.master_addr.as_deref(), Some("h:1"));
    assert_eq!(slave.ha_server_addr.as_deref(), Some("h:1-ha"));
    assert_eq!(r.route("T").unwrap().broker_datas[0].broker_addrs.len(), 2);
}

#[test]
fn promoted_slave_keeps_one_id_per_address() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:2", 1, &["T", "U"]), 0, false).unwrap();
    r.register_broker(reg("broker-a", "h:2", 0, &["T", "U"]), 0, false).unwrap();
    let addrs = &r.route("T").unwrap().broker_datas[0].broker_addrs;
    assert_eq!(addrs.len(), 1);
    assert_eq!(addrs.get(&0).map(String::as_str), Some("h:2"));
}

#[test]
fn expiry_removes_broker_and_routes() {
    let mut r = RouteInfoManager::new();
    let mut a = reg("broker-a", "h:1", 0, &["T", "U"]);
    a.timeout_ms = 3_000;
    r.register_broker(a, 1_000, false).unwrap();
    assert!(r.scan_not_active(4_000).is_empty());
    assert!(r.touch("DefaultCluster", "h:1", 3_000));
    assert!(r.scan_not_active(5_999).is_empty());
    let gone = r.scan_not_active(6_001);
    assert_eq!(gone, vec![("DefaultCluster".to_string(), "h:1".to_string(), Some(7))]);
    assert!(r.route("T").is_none());
    assert!(r.cluster_info().cluster_addr_table.is_empty());
}

#[test]
fn master_leaving_keeps_slave_route() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    r.register_broker(reg("broker-a", "h:2", 1, &["T", "U"]), 0, false).unwrap();
    r.remove_broker_addr("DefaultCluster", "h:1");
    let route = r.route("T").unwrap();
    assert_eq!(route.broker_datas[0].master_addr(), None);
    assert_eq!(route.broker_datas[0].broker_addrs.len(), 1);
}

#[test]
fn connection_lookup_finds_registered_brokers() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    assert_eq!(r.brokers_on_connection(7), vec![("DefaultCluster".to_string(), "h:1".to_string())]);
    assert!(r.brokers_on_connection(8).is_empty());
}

#[test]
fn data_version_changes_are_tracked() {
    let mut r = RouteInfoManager::new();
    let a = reg("broker-a", "h:1", 0, &["T", "U"]);
    let dv = a.data_version.clone();
    r.register_broker(a, 0, false).unwrap();
    let (changed, stored) = r.query_data_version("DefaultCluster", "h:1", &dv, 10);
    assert!(!changed);
    assert_eq!(stored, Some(dv.clone()));
    let newer = DataVersion { counter: 2, ..dv };
    assert!(r.query_data_version("DefaultCluster", "h:1", &newer, 10).0);
    assert!(r.query_data_version("DefaultCluster", "h:9", &newer, 10).0);
}

#[test]
fn changed_version_updates_queue_counts_and_deletion_is_optional() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    let mut again = reg("broker-a", "h:1", 0, &["T", "W"]);
    again.topics.as_mut().unwrap().get_mut("T").unwrap().write_queue_nums = 8;
    again.data_version.counter = 2;
    r.register_broker(again.clone(), 1, false).unwrap();
    assert_eq!(r.route("T").unwrap().queue_datas[0].write_queue_nums, 8);
    assert!(r.route("U").is_some());
    again.data_version.counter = 3;
    r.register_broker(again, 2, true).unwrap();
    assert!(r.route("U").is_none());
    assert!(r.route("W").is_some());
}

#[test]
fn write_perm_wipe_and_add() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    assert_eq!(r.set_write_perm_of_broker("broker-a", false), 2);
    assert_eq!(r.route("T").unwrap().queue_datas[0].perm, perm::READ);
    assert_eq!(r.set_write_perm_of_broker("broker-a", true), 2);
    assert_eq!(r.route("T").unwrap().queue_datas[0].perm, perm::READ | perm::WRITE);
    assert_eq!(r.set_write_perm_of_broker("nope", true), 0);
}

#[test]
fn delete_topic_whole_or_per_cluster() {
    let mut r = RouteInfoManager::new();
    r.register_broker(reg("broker-a", "h:1", 0, &["T", "U"]), 0, false).unwrap();
    r.delete_topic("T", Some("OtherCluster"));
    assert!(r.route("T").is_some());
    r.delete_topic("T", Some("DefaultCluster"));
    assert!(r.route("T").is_none());
    r.delete_topic("U", None);
    assert!(r.route("U").is_none());
}

#[test]
fn system_and_unit_topic_lists() {
    let mut r = RouteInfoManager::new();
    let mut a = reg("broker-a", "h:1", 0, &["T", "U"]);
    a.topics.as_mut().unwrap().get_mut("U").unwrap().topic_sys_flag = perm::FLAG_UNIT;
    r.register_broker(a, 0, false).unwrap();
    let sys = r.system_topics();
    assert_eq!(sys.topic_list, vec!["DefaultCluster", "broker-a"]);
    assert_eq!(sys.broker_addr.as_deref(), Some("h:1"));
    assert_eq!(r.topics_with_sys_flag(|f| f & perm::FLAG_UNIT != 0).topic_list, vec!["U"]);
}
