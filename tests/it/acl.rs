//! ACL 1.0 over TCP (`aclEnable=true`, `<rocketmqHome>/conf/plain_acl.yml`): unsigned, unknown,
//! badly signed and unpermitted requests are refused with Java's code and remark and store
//! nothing; signed ones are served; the ACL admin requests edit the file; an edited file is
//! reloaded while the broker runs.

use std::time::{Duration, Instant};

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, send};
use super::broker_harness::{start_broker, TestBroker};
use super::support::*;

const FILE: &str = "\
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - allowed=PUB|SUB
      - readonly=SUB
  - accessKey: adminUser
    secretKey: adminSecret
    admin: true
";

/// What `AclClientRPCHook.doBeforeRequest` does to a request.
pub(super) fn sign(mut req: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    req.ext_fields.insert("AccessKey".into(), ak.into());
    let values: Vec<&str> = req.ext_fields.values().map(String::as_str).collect();
    let sig = ferrocket::acl::signature(sk, &values, &req.body);
    req.with_ext("Signature", sig)
}

/// A broker with `aclEnable=true` and `accounts` as its `conf/plain_acl.yml`; the directories
/// (its home, its store) live as long as the caller keeps them.
pub(super) async fn start_acl_broker(accounts: &str) -> (TestBroker, tempfile::TempDir, tempfile::TempDir) {
    start_acl_broker_with(accounts, |_| {}).await
}

/// As [`start_acl_broker`], with `tweak` applied to the config last.
pub(super) async fn start_acl_broker_with(
    accounts: &str,
    tweak: impl FnOnce(&mut ferrocket::broker::BrokerConfig),
) -> (TestBroker, tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), accounts).unwrap();
    let store = tempfile::tempdir().unwrap();
    let home_dir = home.path().display().to_string();
    let b = start_broker(store.path(), |c| {
        c.acl_enable = true;
        c.rocketmq_home = home_dir;
        tweak(c);
    })
    .await;
    (b, home, store)
}

fn max_offset(topic: &str) -> RemotingCommand {
    request(RequestCode::GET_MAX_OFFSET, &[("topic", topic), ("queueId", "0")])
}

async fn stored(c: &Client, addr: &str, topic: &str) -> String {
    let r = call_addr(c, addr, sign(max_offset(topic), "adminUser", "adminSecret")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    r.ext_fields.get("offset").cloned().unwrap_or_default()
}

fn refused(r: &RemotingCommand, why: &str) {
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "{:?}", r.remark);
    let remark = r.remark.as_deref().unwrap_or("");
    assert!(remark.starts_with("org.apache.rocketmq.acl.common.AclException: "), "{remark}");
    assert!(remark.contains(why), "remark {remark:?} should say {why:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_checked_and_the_file_is_edited_and_reloaded() {
    let (b, home, _store) = start_acl_broker(FILE).await;
    let acl_file = home.path().join("conf/plain_acl.yml");
    let c = client();

    refused(&call_addr(&c, &b.addr, send("allowed", 0, b"x", "A")).await, "No accessKey is configured");
    refused(
        &call_addr(&c, &b.addr, sign(send("allowed", 0, b"x", "A"), "nobody12", "whatever")).await,
        "No acl config for nobody12",
    );
    refused(
        &call_addr(&c, &b.addr, sign(send("allowed", 0, b"x", "A"), "RocketMQ", "wrongSecret")).await,
        "Check signature failed for accessKey=RocketMQ",
    );
    let mut tampered = sign(send("allowed", 0, b"x", "A"), "RocketMQ", "12345678");
    tampered.body = bytes::Bytes::from_static(b"y");
    refused(&call_addr(&c, &b.addr, tampered).await, "Check signature failed");
    refused(
        &call_addr(&c, &b.addr, sign(send("readonly", 0, b"x", "A"), "RocketMQ", "12345678")).await,
        "No default permission for topic:readonly",
    );
    refused(
        &call_addr(&c, &b.addr, sign(send("other", 0, b"x", "A"), "RocketMQ", "12345678")).await,
        "No default permission for topic:other",
    );
    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "made"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    );
    refused(
        &call_addr(&c, &b.addr, sign(create.clone(), "RocketMQ", "12345678")).await,
        "Need admin permission for request code=17",
    );
    assert_eq!(
        call_addr(&c, &b.addr, sign(create, "adminUser", "adminSecret")).await.response_code(),
        ResponseCode::SUCCESS
    );
    for topic in ["allowed", "readonly", "other"] {
        assert_eq!(stored(&c, &b.addr, topic).await, "0", "a refused send stored nothing in {topic}");
    }

    let ok = call_addr(&c, &b.addr, sign(send("allowed", 0, b"x", "A"), "RocketMQ", "12345678")).await;
    assert_eq!(ok.response_code(), ResponseCode::SUCCESS, "{:?}", ok.remark);
    assert_eq!(stored(&c, &b.addr, "allowed").await, "1");

    // The ACL admin requests: an admin adds an account; a non-admin may not.
    let add = request(
        RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
        &[("accessKey", "newUser1"), ("secretKey", "newSecret1"), ("defaultTopicPerm", "PUB"), ("admin", "false")],
    );
    let r = call_addr(&c, &b.addr, sign(add.clone(), "RocketMQ", "12345678")).await;
    refused(&r, "Need admin permission for request code=50");
    let r = call_addr(&c, &b.addr, sign(add, "adminUser", "adminSecret")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert!(std::fs::read_to_string(&acl_file).unwrap().contains("newUser1"));
    let r = call_addr(&c, &b.addr, sign(send("other", 0, b"x", "A"), "newUser1", "newSecret1")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let bad = request(RequestCode::UPDATE_AND_CREATE_ACL_CONFIG, &[("accessKey", "short"), ("secretKey", "12345678")]);
    let r = call_addr(&c, &b.addr, sign(bad, "adminUser", "adminSecret")).await;
    assert_eq!(r.response_code(), ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED);
    assert!(r.remark.unwrap().contains("length should longer than 6"));

    let info = call_addr(
        &c,
        &b.addr,
        sign(request(RequestCode::GET_BROKER_CLUSTER_ACL_INFO, &[]), "adminUser", "adminSecret"),
    )
    .await;
    assert_eq!(info.response_code(), ResponseCode::SUCCESS);
    assert!(info.ext_fields["version"].starts_with("{\"counter\":1,"), "{:?}", info.ext_fields);
    assert!(info.ext_fields["allAclFileVersion"].contains("plain_acl.yml"), "{:?}", info.ext_fields);

    let del = request(RequestCode::DELETE_ACL_CONFIG, &[("accessKey", "newUser1")]);
    assert_eq!(
        call_addr(&c, &b.addr, sign(del.clone(), "adminUser", "adminSecret")).await.response_code(),
        ResponseCode::SUCCESS
    );
    let again = call_addr(&c, &b.addr, sign(del, "adminUser", "adminSecret")).await;
    assert_eq!(again.response_code(), ResponseCode::DELETE_ACL_CONFIG_FAILED);
    refused(
        &call_addr(&c, &b.addr, sign(send("other", 0, b"x", "A"), "newUser1", "newSecret1")).await,
        "No acl config for newUser1",
    );

    let white = request(RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, &[("globalWhiteAddrs", "127.0.0.*")]);
    let r = call_addr(&c, &b.addr, sign(white, "adminUser", "adminSecret")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(
        call_addr(&c, &b.addr, send("readonly", 0, b"x", "A")).await.response_code(),
        ResponseCode::SUCCESS,
        "white-listed: no key needed"
    );

    // A file edited by hand is picked up by the watcher (every 5 s): the white list it drops stops
    // serving unsigned requests, and the permission it changes takes effect.
    std::fs::write(&acl_file, FILE.replace("readonly=SUB", "readonly=PUB")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = call_addr(&c, &b.addr, send("readonly", 0, b"x", "A")).await;
        if r.response_code() != ResponseCode::SUCCESS {
            refused(&r, "No accessKey is configured");
            break;
        }
        assert!(Instant::now() < deadline, "the edited file was not reloaded");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = call_addr(&c, &b.addr, sign(send("readonly", 0, b"x", "A"), "RocketMQ", "12345678")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "readonly=PUB after the reload: {:?}", r.remark);
    b.stop().await;
}

#[tokio::test]
async fn acl_without_rocketmq_home_refuses_to_start_naming_the_key() {
    let mut config = ferrocket::broker::BrokerConfig { acl_enable: true, ..Default::default() };
    config.rocketmq_home = String::new();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("rocketmqHome"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_admin_requests_on_a_broker_without_acl_say_so() {
    let store = tempfile::tempdir().unwrap();
    let b = start_broker(store.path(), |_| {}).await;
    let add =
        request(RequestCode::UPDATE_AND_CREATE_ACL_CONFIG, &[("accessKey", "newUser1"), ("secretKey", "newSecret1")]);
    let r = call_addr(&client(), &b.addr, add).await;
    assert_eq!(r.response_code(), ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED);
    assert!(r.remark.unwrap_or_default().contains("aclEnable=false"));
    let plain = call_addr(&client(), &b.addr, send("T", 0, b"x", "A")).await;
    assert_eq!(plain.response_code(), ResponseCode::SUCCESS, "no ACL: unsigned sends are served");
    b.stop().await;
}
