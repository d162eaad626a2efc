//! Tests of `meta::config`.
//!
//! Unit tests of `meta::config` (included with `#[path]`): they may import what it may.
use super::*;
use crate::store::FlushDiskType;

#[test]
fn java_keys_load_and_refusals_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.conf");
    std::fs::write(&path, "brokerClusterName=C\nbrokerName=broker-a\nflushDiskType=SYNC_FLUSH\nlistenPort=10921\nsendMessageThreadPoolNums=4\nbogus=1\n").unwrap();
    let c = BrokerConfig::load(Some(&path), Some("127.0.0.1:9876")).unwrap();
    assert_eq!(c.broker_name, "broker-a");
    assert_eq!(c.store_config().flush_disk_type, FlushDiskType::SyncFlush);
    assert_eq!(c.namesrv_addrs(), vec!["127.0.0.1:9876"]);
    assert!(c.ha_server_addr().ends_with(":10922"));
    for (text, key) in [
        ("brokerRole=SLAVE\n", "brokerId"),
        ("brokerRole=MASTER\n", "brokerRole"),
        ("brokerRole=SYNC_MASTER\nbrokerId=2\n", "brokerId"),
        ("aclEnable=true\nrocketmqHome=\n", "rocketmqHome"),
        ("authenticationEnabled=true\n", "authenticationEnabled"),
        ("listenPort=x\n", "listenPort"),
        ("flushDiskType=FAST\n", "flushDiskType"),
        ("grpcClientConsumerMaxLongPollingTimeoutMillis=60001\n", "grpcClientConsumerMaxLongPollingTimeoutMillis"),
        ("grpcClientConsumerMinLongPollingTimeoutMillis=30000\n", "grpcClientConsumerMaxLongPollingTimeoutMillis"),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = BrokerConfig::load(Some(&path), None).unwrap_err().to_string();
        assert!(err.contains(key), "{text}: {err}");
    }
}

#[test]
fn tls_keys_load_into_the_nested_struct_and_come_back_in_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.conf");
    std::fs::write(&path, "tls.server.mode=enforcing\ntls.server.certPath=/c.pem\nlistenPort=10911\n").unwrap();
    let c = BrokerConfig::load(Some(&path), None).unwrap();
    assert_eq!((c.tls.server_mode.as_str(), c.tls.server_cert_path.as_str()), ("enforcing", "/c.pem"));
    let entries = c.entries();
    assert!(entries.iter().any(|(k, v)| *k == "tls.server.mode" && v == "enforcing"));
    let tls = crate::net::tls::tls_settings(&entries).unwrap();
    // (meta may not name remoting's types: the mode is checked by its name.)
    assert_eq!(format!("{:?}", tls.mode), "Enforcing");
    assert_eq!(tls.server_cert.as_deref(), Some(std::path::Path::new("/c.pem")));
    std::fs::write(&path, "tls.server.mode=sometimes\n").unwrap();
    let bad = BrokerConfig::load(Some(&path), None).unwrap();
    let err = crate::net::tls::tls_settings(&bad.entries()).unwrap_err().to_string();
    assert!(err.contains("tls.server.mode"), "{err}");
}

/// UPDATE_BROKER_CONFIG hands the store `store_config()` of the new config; the store takes from
/// it exactly the keys `meta::live::LIVE_KEYS` says act at once, and keeps its boot value of
/// every other key (#28).
#[test]
fn the_store_takes_exactly_the_live_keys_from_an_update() {
    let boot = BrokerConfig::default();
    let boot_store = boot.store_config();
    let mut seen = 0;
    for (key, value) in boot.entries() {
        let candidates = ["7", if value == "true" { "false" } else { "true" }, "01"];
        let Some(next) = candidates.iter().find_map(|v| {
            let mut next = boot.clone();
            let changed = next.set(key, v).is_ok_and(|known| known) && next.validate().is_ok();
            (changed && format!("{:?}", next.store_config()) != format!("{boot_store:?}")).then_some(next)
        }) else {
            continue;
        };
        seen += 1;
        let taken = format!("{:?}", boot_store.with_live(&next.store_config()));
        if crate::meta::live::is_live(key) {
            assert_eq!(taken, format!("{:?}", next.store_config()), "{key} is live: the store must take it");
        } else {
            assert_eq!(taken, format!("{boot_store:?}"), "{key} needs a restart: the store must keep its boot value");
        }
    }
    assert!(seen > 30, "only {seen} store keys tried");
}
