//! Unit tests of `acl` (through `use super::*`): they may import what it may, plus test crates.

use super::*;

const FILE: &str = "\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
dataVersion:
  - counter: 7
    timestamp: 1700000000000
";

fn home(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    std::fs::write(dir.path().join("conf/plain_acl.yml"), text).unwrap();
    dir
}

fn signed<'a>(
    ak: &'a str,
    sk: &str,
    code: i32,
    values: &[&'a str],
    body: &'a [u8],
    host: &str,
) -> (AccessRequest<'a>, String) {
    let mut all: Vec<&str> = values.to_vec();
    all.push(ak);
    let sig = signature(sk, &all, body);
    let req = AccessRequest {
        code,
        host: host.into(),
        access_key: Some(ak),
        signature: None,
        signed_values: all,
        body,
        resources: Vec::new(),
    };
    (req, sig)
}

#[test]
fn signature_is_base64_hmac_sha1() {
    // RFC 2202 test case 2.
    assert_eq!(signature("Jefe", &["what do ya ", "want for nothing?"], b""), "7/zfauXrL6LSdBbV8YTfnCWafHk=");
    assert_eq!(signature("Jefe", &["what do ya "], b"want for nothing?"), "7/zfauXrL6LSdBbV8YTfnCWafHk=");
}

#[test]
fn requests_are_checked_in_javas_order() {
    let dir = home(FILE);
    let acl = Acl::open(dir.path()).unwrap();
    let anonymous = AccessRequest { code: 310, host: "10.10.103.7".into(), ..Default::default() };
    assert_eq!(acl.validate(&anonymous), Ok(()), "a global white address needs no key");
    let anonymous = AccessRequest { host: "127.0.0.1".into(), ..anonymous };
    assert_eq!(acl.validate(&anonymous).unwrap_err(), "No accessKey is configured");
    let unknown = AccessRequest { access_key: Some("nobody12"), ..anonymous };
    assert_eq!(acl.validate(&unknown).unwrap_err(), "No acl config for nobody12");

    let (mut req, sig) = signed("RocketMQ", "12345678", 310, &["PG", "topicB"], b"body", "127.0.0.1");
    req.resources = vec![("topicB".into(), perm::PUB)];
    assert_eq!(acl.validate(&req).unwrap_err(), "Check signature failed for accessKey=RocketMQ");
    req.signature = Some(&sig);
    assert_eq!(acl.validate(&req), Ok(()));
    req.body = b"other";
    assert_eq!(acl.validate(&req).unwrap_err(), "Check signature failed for accessKey=RocketMQ", "the body is signed");

    let (mut req, sig) = signed("RocketMQ", "12345678", 310, &["PG", "topicA"], b"", "127.0.0.1");
    req.signature = Some(&sig);
    req.resources = vec![("topicA".into(), perm::PUB)];
    assert_eq!(acl.validate(&req).unwrap_err(), "No default permission for topic:topicA");
    req.resources = vec![(TRACE_TOPIC.into(), perm::PUB)];
    assert_eq!(acl.validate(&req), Ok(()), "publishing traces needs no permission");
    req.resources = vec![("topicA".into(), perm::SUB), ("topicA".into(), perm::PUB), ("topicC".into(), perm::SUB)];
    assert_eq!(
        acl.validate(&req).unwrap_err(),
        "No default permission for topic:topicA",
        "the last entry for a resource wins"
    );
    req.code = 17;
    req.resources.clear();
    assert_eq!(
        acl.validate(&req).unwrap_err(),
        "Need admin permission for request code=17, but accessKey=RocketMQ is not"
    );

    let white =
        AccessRequest { code: 17, host: "192.168.1.9".into(), access_key: Some("rocketmq2"), ..Default::default() };
    assert_eq!(acl.validate(&white), Ok(()), "the account's white address needs no signature");
}

#[test]
fn admin_edits_write_the_file_and_take_effect() {
    let dir = home(FILE);
    let acl = Acl::open(dir.path()).unwrap();
    assert!(acl.version_json().starts_with("{\"counter\":7,"), "{}", acl.version_json());

    let cfg = AccountConfig {
        access_key: Some("newUser1".into()),
        secret_key: Some("newSecret1".into()),
        default_topic_perm: Some("PUB".into()),
        topic_perms: Some(vec!["secret=DENY".into()]),
        ..Default::default()
    };
    acl.update_account(&cfg).unwrap();
    let text = std::fs::read_to_string(dir.path().join("conf/plain_acl.yml")).unwrap();
    assert!(text.contains("newUser1") && text.contains("secret=DENY"), "{text}");
    assert!(acl.version_json().starts_with("{\"counter\":8,"), "{}", acl.version_json());
    assert!(!acl.reload_if_changed().unwrap(), "our own write is already loaded");

    let (mut req, sig) = signed("newUser1", "newSecret1", 310, &["T"], b"", "127.0.0.1");
    req.signature = Some(&sig);
    req.resources = vec![("anyTopic".into(), perm::PUB)];
    assert_eq!(acl.validate(&req), Ok(()));
    req.resources = vec![("secret".into(), perm::PUB)];
    assert!(acl.validate(&req).is_err());

    // An update keeps what it does not name and replaces what it does.
    let cfg = AccountConfig { topic_perms: Some(vec![]), ..cfg };
    acl.update_account(&cfg).unwrap();
    assert_eq!(acl.validate(&req), Ok(()));

    assert!(acl.delete_account("newUser1").unwrap());
    assert!(!acl.delete_account("newUser1").unwrap(), "gone already");
    assert_eq!(acl.validate(&req).unwrap_err(), "No acl config for newUser1");

    let short =
        AccountConfig { access_key: Some("abc".into()), secret_key: Some("12345678".into()), ..Default::default() };
    assert!(acl.update_account(&short).unwrap_err().contains("length should longer than 6"));
    let bad_perm = AccountConfig {
        access_key: Some("user1234".into()),
        secret_key: Some("12345678".into()),
        topic_perms: Some(vec!["t=READ".into()]),
        ..Default::default()
    };
    assert!(acl.update_account(&bad_perm).is_err());
    assert!(
        !std::fs::read_to_string(dir.path().join("conf/plain_acl.yml")).unwrap().contains("user1234"),
        "nothing written"
    );

    assert!(acl.update_global_white(&["127.0.0.*".into()], None).unwrap());
    let anonymous = AccessRequest { code: 17, host: "127.0.0.1".into(), ..Default::default() };
    assert_eq!(acl.validate(&anonymous), Ok(()));
    let outside = acl.update_global_white(&["1.1.1.1".into()], Some("/etc/passwd")).unwrap_err();
    assert!(outside.contains("is not one of the ACL files"), "{outside}");
    let default_file = dir.path().join("conf/plain_acl.yml").display().to_string();
    assert!(acl.update_global_white(&["127.0.0.*".into()], Some(&default_file)).unwrap());
    let dotted = dir.path().join("conf/../conf/plain_acl.yml").display().to_string();
    assert!(acl.update_global_white(&["1.1.1.1".into()], Some(&dotted)).is_err(), "no `..`, even inside");
    assert!(acl.all_versions_json().contains("plain_acl.yml\":{\"counter\":"), "{}", acl.all_versions_json());
}

#[test]
fn changed_files_are_reloaded_and_bad_ones_keep_the_old_tables() {
    let dir = home(FILE);
    let acl = Acl::open(dir.path()).unwrap();
    assert!(!acl.reload_if_changed().unwrap());
    std::fs::create_dir_all(dir.path().join("conf/acl")).unwrap();
    std::fs::write(
        dir.path().join("conf/acl/more.yml"),
        "accounts:\n  - accessKey: another1\n    secretKey: another1\n    whiteRemoteAddress: 127.0.0.1\n",
    )
    .unwrap();
    assert!(acl.reload_if_changed().unwrap());
    let white =
        AccessRequest { code: 310, host: "127.0.0.1".into(), access_key: Some("another1"), ..Default::default() };
    assert_eq!(acl.validate(&white), Ok(()));

    std::fs::write(dir.path().join("conf/acl/more.yml"), "accounts:\n  - accessKey: x\n").unwrap();
    let err = acl.reload_if_changed().unwrap_err();
    assert!(err.contains("more.yml") && err.contains("accessKey=x"), "{err}");
    assert_eq!(acl.validate(&white), Ok(()), "the previous tables stay in force");
}

#[test]
fn a_missing_file_is_created_and_a_bad_one_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let acl = Acl::open(dir.path()).unwrap();
    assert!(dir.path().join("conf/plain_acl.yml").exists());
    let req = AccessRequest { code: 310, host: "127.0.0.1".into(), access_key: Some("RocketMQ"), ..Default::default() };
    assert_eq!(acl.validate(&req).unwrap_err(), "No acl config for RocketMQ");

    let bad = home("globalWhiteRemoteAddresses:\n  - 10.10.300.*\n");
    let err = Acl::open(bad.path()).err().unwrap();
    assert!(err.contains("plain_acl.yml") && err.contains("10.10.300.*"), "{err}");
    let bad = home("accounts: [ {accessKey: RocketMQ, secretKey: 12345678, topicPerms: [topicA]} ]\n");
    assert!(Acl::open(bad.path()).err().unwrap().contains("topic:topicA"));
}

#[test]
fn a_file_that_is_not_a_map_is_refused_not_rewritten() {
    let dir = home(FILE);
    let acl = Acl::open(dir.path()).unwrap();
    let path = dir.path().join("conf/plain_acl.yml");
    let cfg = AccountConfig {
        access_key: Some("RocketMQ".into()),
        secret_key: Some("12345678".into()),
        ..Default::default()
    };
    // Hand edits after the load (the watcher keeps the old tables, which still name the file).
    for text in ["- a\n- b\n", "just text\n", "accounts: 5\n", "globalWhiteRemoteAddresses: x\n", "a: 1\n---\nb: 2\n"] {
        std::fs::write(&path, text).unwrap();
        let err = acl.update_global_white(&["10.0.0.1".into()], None).unwrap_err();
        assert!(err.contains("plain_acl.yml"), "{text:?}: {err}");
        assert!(acl.update_account(&cfg).is_err(), "{text:?}");
        assert!(acl.delete_account("RocketMQ").is_err(), "{text:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "left as it is");
    }
}
