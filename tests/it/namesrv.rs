//! The NameServer over real TCP, driven with ferrocket's own client (the Java client drives it in
//! compat-tests/).

use std::time::Duration;

use ferrocket::protocol::body::route::{ClusterInfo, TopicRouteData};
use ferrocket::protocol::body::{json, KvTable, TopicList};
use ferrocket::protocol::{RequestCode, ResponseCode, SerializeType};

use super::support::*;

async fn route(client: &Client, ns: &TestNamesrv, topic: &str, version: i32) -> (ResponseCode, String) {
    let mut req = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)]);
    req.version = version;
    let resp = call(client, ns.addr, req).await;
    (resp.response_code(), String::from_utf8(resp.body.to_vec()).unwrap())
}

#[tokio::test]
async fn broker_registers_and_clients_get_routes() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let resp = call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "TBW102"])).await;
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);

    // Go clients (version 317) get bare numeric keys, current Java clients quoted ones.
    let (code, legacy) = route(&c, &ns, "T", 317).await;
    assert_eq!(code, ResponseCode::SUCCESS);
    assert!(legacy.contains(r#""brokerAddrs":{0:"127.0.0.1:10911"}"#), "{legacy}");
    let (_, standard) = route(&c, &ns, "T", 479).await;
    assert!(standard.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#), "{standard}");
    let data: TopicRouteData = json::from_slice(legacy.as_bytes()).unwrap();
    assert_eq!(data.queue_datas[0].write_queue_nums, 4);
    assert_eq!(data.queue_datas[0].perm, 6);

    let (code, _) = route(&c, &ns, "unknown", 479).await;
    assert_eq!(code, ResponseCode::TOPIC_NOT_EXIST);

    let info = call(&c, ns.addr, request(RequestCode::GET_BROKER_CLUSTER_INFO, &[])).await;
    let info: ClusterInfo = json::from_slice(&info.body).unwrap();
    assert!(info.cluster_addr_table["C1"].contains("broker-a"));
    assert_eq!(info.broker_addr_table["broker-a"].master_addr(), Some("127.0.0.1:10911"));

    let topics = call(&c, ns.addr, request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[])).await;
    let topics: TopicList = json::from_slice(&topics.body).unwrap();
    assert_eq!(topics.topic_list, vec!["T", "TBW102"]);
    let by_cluster = call(&c, ns.addr, request(RequestCode::GET_TOPICS_BY_CLUSTER, &[("cluster", "C1")])).await;
    let by_cluster: TopicList = json::from_slice(&by_cluster.body).unwrap();
    assert_eq!(by_cluster.topic_list.len(), 2);

    let unreg = request(
        RequestCode::UNREGISTER_BROKER,
        &[("brokerName", "broker-a"), ("brokerAddr", "127.0.0.1:10911"), ("clusterName", "C1"), ("brokerId", "0")],
    );
    assert_eq!(call(&c, ns.addr, unreg).await.response_code(), ResponseCode::SUCCESS);
    assert_eq!(route(&c, &ns, "T", 479).await.0, ResponseCode::TOPIC_NOT_EXIST);
}

#[tokio::test]
async fn slave_learns_master_and_ha_addresses() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let resp = call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10921", 1, &["T", "U"])).await;
    assert_eq!(resp.ext_fields.get("masterAddr").map(String::as_str), Some("127.0.0.1:10911"));
    assert_eq!(resp.ext_fields.get("haServerAddr").map(String::as_str), Some("127.0.0.1:10911-ha"));
}

#[tokio::test]
async fn closing_the_broker_connection_removes_it_at_once() {
    let ns = TestNamesrv::start(|_| {}).await;
    let broker = client();
    call(&broker, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let c = client();
    assert_eq!(route(&c, &ns, "T", 479).await.0, ResponseCode::SUCCESS);
    broker.close(&ns.addr.to_string());
    let gone = eventually(Duration::from_secs(3), || async {
        route(&c, &ns, "T", 479).await.0 == ResponseCode::TOPIC_NOT_EXIST
    })
    .await;
    assert!(gone, "route still served after the broker's connection closed");
}

#[tokio::test]
async fn silent_broker_expires() {
    let ns = TestNamesrv::start(|c| {
        c.broker_channel_expired_time = 400;
        c.scan_not_active_broker_interval = 50;
    })
    .await;
    let broker = client();
    call(&broker, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let conn = broker.connection(&ns.addr.to_string()).await.unwrap();
    let c = client();
    assert_eq!(route(&c, &ns, "T", 479).await.0, ResponseCode::SUCCESS);
    let gone = eventually(Duration::from_secs(3), || async {
        route(&c, &ns, "T", 479).await.0 == ResponseCode::TOPIC_NOT_EXIST
    })
    .await;
    assert!(gone, "broker did not expire");
    // The expired broker's connection is closed, as Java does.
    let closed = eventually(Duration::from_secs(2), || async { conn.is_closed() }).await;
    assert!(closed, "expired broker's connection left open");
}

#[tokio::test]
async fn kv_config_round_trip_and_persistence() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let put = request(
        RequestCode::PUT_KV_CONFIG,
        &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T"), ("value", "broker-a:4")],
    );
    assert_eq!(call(&c, ns.addr, put).await.response_code(), ResponseCode::SUCCESS);
    let get = request(RequestCode::GET_KV_CONFIG, &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T")]);
    let resp = call(&c, ns.addr, get.clone()).await;
    assert_eq!(resp.ext_fields.get("value").map(String::as_str), Some("broker-a:4"));
    let list =
        call(&c, ns.addr, request(RequestCode::GET_KVLIST_BY_NAMESPACE, &[("namespace", "ORDER_TOPIC_CONFIG")])).await;
    let table: KvTable = json::from_slice(&list.body).unwrap();
    assert_eq!(table.table["T"], "broker-a:4");

    // A broker registering gets the order-topic table back.
    let reg = call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let table: KvTable = json::from_slice(&reg.body).unwrap();
    assert_eq!(table.table["T"], "broker-a:4");

    let dir = ns.stop().await;
    let ns = TestNamesrv::start_in(dir, |_| {}).await;
    let resp = call(&c, ns.addr, get.clone()).await;
    assert_eq!(resp.ext_fields.get("value").map(String::as_str), Some("broker-a:4"), "KV not persisted");

    let del = request(RequestCode::DELETE_KV_CONFIG, &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T")]);
    assert_eq!(call(&c, ns.addr, del).await.response_code(), ResponseCode::SUCCESS);
    let resp = call(&c, ns.addr, get).await;
    assert_eq!(resp.response_code(), ResponseCode::QUERY_NOT_FOUND);
    assert!(resp.remark.unwrap().contains("Namespace: ORDER_TOPIC_CONFIG"));
}

#[tokio::test]
async fn write_permission_wipe_and_add() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let wipe = call(&c, ns.addr, request(RequestCode::WIPE_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-a")])).await;
    assert_eq!(wipe.ext_fields["wipeTopicCount"], "2");
    let (_, body) = route(&c, &ns, "T", 479).await;
    assert!(body.contains(r#""perm":4"#), "{body}");
    let add = call(&c, ns.addr, request(RequestCode::ADD_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-a")])).await;
    assert_eq!(add.ext_fields["addTopicCount"], "2");
    let (_, body) = route(&c, &ns, "T", 479).await;
    assert!(body.contains(r#""perm":6"#), "{body}");
}

#[tokio::test]
async fn namesrv_config_get_and_update() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let get = call(&c, ns.addr, request(RequestCode::GET_NAMESRV_CONFIG, &[])).await;
    let text = String::from_utf8(get.body.to_vec()).unwrap();
    assert!(text.contains("orderMessageEnable=false"), "{text}");
    let update = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[]).with_body("orderMessageEnable=true\n");
    assert_eq!(call(&c, ns.addr, update).await.response_code(), ResponseCode::SUCCESS);
    let get = call(&c, ns.addr, request(RequestCode::GET_NAMESRV_CONFIG, &[])).await;
    assert!(String::from_utf8(get.body.to_vec()).unwrap().contains("orderMessageEnable=true"));
    // Written back into the file in place: what was there stays, the changed key is replaced.
    let file = ns.dir.path().join("namesrv.properties");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "orderMessageEnable=true\n", "updated config not persisted");
    std::fs::write(&file, "# mine\norderMessageEnable=true\nlistenPort=1\n").unwrap();
    let update = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[]).with_body("orderMessageEnable=false\n");
    assert_eq!(call(&c, ns.addr, update).await.response_code(), ResponseCode::SUCCESS);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# mine\norderMessageEnable=false\nlistenPort=1\n");

    let black = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[]).with_body("kvConfigPath=/tmp/x\n");
    assert_eq!(call(&c, ns.addr, black).await.response_code(), ResponseCode::NO_PERMISSION);
    let bad = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[]).with_body("scanNotActiveBrokerInterval=soon\n");
    let resp = call(&c, ns.addr, bad).await;
    assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(resp.remark.unwrap().contains("scanNotActiveBrokerInterval"));
}

/// Concurrent updates of different keys: none is lost in memory, and the file ends with the
/// latest values (one writer; never an older snapshot over a newer one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_config_updates_keep_every_key_and_the_latest_file() {
    let ns = TestNamesrv::start(|_| {}).await;
    let mut tasks = Vec::new();
    for (key, base) in [("scanNotActiveBrokerInterval", 5_000), ("brokerChannelExpiredTime", 120_000)] {
        let addr = ns.addr;
        tasks.push(tokio::spawn(async move {
            let c = std::sync::Arc::new(client());
            let mut pending = Vec::new();
            for i in 1..=100 {
                let (c, body) = (c.clone(), format!("{key}={}\n", base + i));
                let update = request(RequestCode::UPDATE_NAMESRV_CONFIG, &[]).with_body(body);
                pending.push(tokio::spawn(async move { call(&c, addr, update).await.response_code() }));
            }
            for p in pending {
                assert_eq!(p.await.unwrap(), ResponseCode::SUCCESS);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Both keys changed; each holds a value one of its updates set, and the file agrees.
    let c = client();
    let get = call(&c, ns.addr, request(RequestCode::GET_NAMESRV_CONFIG, &[])).await;
    let live = String::from_utf8(get.body.to_vec()).unwrap();
    let file = std::fs::read_to_string(ns.dir.path().join("namesrv.properties")).unwrap();
    for (key, base) in [("scanNotActiveBrokerInterval", 5_000), ("brokerChannelExpiredTime", 120_000)] {
        let value = |text: &str| -> i64 {
            let line = text.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).expect(key);
            line.trim().parse().unwrap()
        };
        let v = value(&live);
        assert!(v > base && v <= base + 100, "{key}={v}: an update was lost");
        assert_eq!(value(&file), v, "{key}: the file holds an older config than the broker's");
    }
}

#[tokio::test]
async fn order_topic_conf_in_routes_when_enabled() {
    let ns = TestNamesrv::start(|c| c.order_message_enable = true).await;
    let c = client();
    call(&c, ns.addr, register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"])).await;
    let put = request(
        RequestCode::PUT_KV_CONFIG,
        &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T"), ("value", "broker-a:4")],
    );
    call(&c, ns.addr, put).await;
    let (_, body) = route(&c, &ns, "T", 479).await;
    assert!(body.contains(r#""orderTopicConf":"broker-a:4""#), "{body}");
}

#[tokio::test]
async fn bad_requests_get_codes_and_remarks() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let resp = call(&c, ns.addr, request(ferrocket::protocol::RequestCode(9999), &[])).await;
    assert_eq!(resp.response_code(), ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
    assert_eq!(resp.remark.as_deref(), Some(" request type 9999 not supported"));

    let resp = call(&c, ns.addr, request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[])).await;
    assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(resp.remark.unwrap().contains("<topic>"));

    let mut reg = register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"]);
    reg.ext_fields.insert("brokerId".into(), "zero".into());
    let resp = call(&c, ns.addr, reg).await;
    assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(resp.remark.unwrap().contains("brokerId"));

    let mut reg = register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"]);
    reg.ext_fields.insert("bodyCrc32".into(), "12345".into());
    let resp = call(&c, ns.addr, reg).await;
    assert_eq!(resp.remark.as_deref(), Some("crc32 not match"));

    let reg = register_request("C1", "broker-a", "127.0.0.1:10911", 0, &["T", "U"]).with_body("{broken");
    let resp = call(&c, ns.addr, reg).await;
    assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(resp.remark.unwrap().contains("register body"));
    // Nothing of the rejected registrations reached the tables.
    assert_eq!(route(&c, &ns, "T", 479).await.0, ResponseCode::TOPIC_NOT_EXIST);
}

#[tokio::test]
async fn binary_header_requests_get_binary_answers_and_oneway_gets_none() {
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let mut req = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
    req.serialize_type = SerializeType::RocketMq;
    let resp = call(&c, ns.addr, req).await;
    assert_eq!(resp.serialize_type, SerializeType::RocketMq);
    assert_eq!(resp.response_code(), ResponseCode::TOPIC_NOT_EXIST);

    let put = request(RequestCode::PUT_KV_CONFIG, &[("namespace", "ns"), ("key", "k"), ("value", "v")]);
    c.invoke_oneway(&ns.addr.to_string(), put).await.unwrap();
    // The oneway put is applied; the next answer on the connection is for the next request.
    let get = request(RequestCode::GET_KV_CONFIG, &[("namespace", "ns"), ("key", "k")]);
    let applied = eventually(Duration::from_secs(2), || async {
        call(&c, ns.addr, get.clone()).await.ext_fields.get("value").map(String::as_str) == Some("v")
    })
    .await;
    assert!(applied);
}

#[tokio::test]
async fn compressed_registration_body() {
    use ferrocket::model::TopicConfig;
    use ferrocket::protocol::body::register::RegisterBrokerBody;
    let ns = TestNamesrv::start(|_| {}).await;
    let c = client();
    let mut body = RegisterBrokerBody::default();
    for t in ["T", "U"] {
        body.topic_config_serialize_wrapper.topic_config_table.insert(
            t.into(),
            TopicConfig { topic_name: t.into(), read_queue_nums: 2, write_queue_nums: 2, ..Default::default() },
        );
    }
    let mut req = register_request("C1", "broker-a", "127.0.0.1:10911", 0, &[]).with_body(body.encode_compressed());
    req.ext_fields.insert("compressed".into(), "true".into());
    assert_eq!(call(&c, ns.addr, req).await.response_code(), ResponseCode::SUCCESS);
    let (code, text) = route(&c, &ns, "U", 479).await;
    assert_eq!(code, ResponseCode::SUCCESS);
    assert!(text.contains(r#""writeQueueNums":2"#), "{text}");
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let ns = TestNamesrv::start(|c| c.server_channel_max_idle_time_seconds = 1).await;
    let c = client();
    let addr = ns.addr.to_string();
    let conn = c.connection(&addr).await.unwrap();
    assert!(!conn.is_closed());
    let closed = eventually(Duration::from_secs(4), || async { conn.is_closed() }).await;
    assert!(closed, "idle connection left open");
}
