//! Kafka SASL and ACL (`aclEnable=true` with `kafkaListenPort`): unauthenticated requests close
//! the connection, PLAIN and SCRAM-SHA-256/512 against the ACL accounts (a client-side SCRAM
//! here), wrong passwords refused, topic/group/admin permissions applied, no secret logged.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use ring::{digest, hmac, pbkdf2};
use tokio::io::AsyncWriteExt;

use super::broker_harness::*;
use super::kafka::{batch, name, Conn};
use super::support::logs;

const ACL: &str = "\
accounts:
  - accessKey: producer1
    secretKey: producerSecret9
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['allowed=PUB|SUB', 'writeonly=PUB']
    groupPerms: ['g1=SUB']
  - accessKey: adminUser
    secretKey: adminSecret77
    admin: true
";

pub(super) struct Broker {
    pub(super) b: TestBroker,
    pub(super) port: u16,
    _home: tempfile::TempDir,
    _store: tempfile::TempDir,
}

pub(super) async fn broker() -> Broker {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), ACL).unwrap();
    let store = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let home_dir = home.path().display().to_string();
    let b = start_broker(store.path(), |c| {
        c.acl_enable = true;
        c.rocketmq_home = home_dir;
        c.kafka_listen_port = port;
        c.kafka_advertised_address = format!("127.0.0.1:{port}");
    })
    .await;
    Broker { b, port, _home: home, _store: store }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

async fn handshake(c: &mut Conn, mechanism: &str) -> SaslHandshakeResponse {
    c.call(ApiKey::SaslHandshake, 1, &SaslHandshakeRequest::default().with_mechanism(s(mechanism))).await
}

async fn authenticate(c: &mut Conn, token: Vec<u8>) -> SaslAuthenticateResponse {
    c.call(ApiKey::SaslAuthenticate, 2, &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token))).await
}

/// A PLAIN login; the SaslAuthenticate answer.
pub(super) async fn plain(port: u16, user: &str, password: &str) -> (Conn, SaslAuthenticateResponse) {
    let mut c = Conn::open(port).await;
    let h = handshake(&mut c, "PLAIN").await;
    assert_eq!(h.error_code, 0);
    let r = authenticate(&mut c, format!("\0{user}\0{password}").into_bytes()).await;
    (c, r)
}

/// The client side of RFC 5802: `Ok(conn)` when the server accepted the proof and its own
/// signature verified, `Err(answer)` with the server's refusal.
async fn scram(port: u16, sha512: bool, user: &str, password: &str) -> Result<Conn, SaslAuthenticateResponse> {
    let (mech, alg, dig, kdf) = if sha512 {
        ("SCRAM-SHA-512", hmac::HMAC_SHA512, &digest::SHA512, pbkdf2::PBKDF2_HMAC_SHA512)
    } else {
        ("SCRAM-SHA-256", hmac::HMAC_SHA256, &digest::SHA256, pbkdf2::PBKDF2_HMAC_SHA256)
    };
    let mut c = Conn::open(port).await;
    assert_eq!(handshake(&mut c, mech).await.error_code, 0);
    let bare = format!("n={user},r=clientNonce123");
    let first = authenticate(&mut c, format!("n,,{bare}").into_bytes()).await;
    assert_eq!(first.error_code, 0, "{:?}", first.error_message);
    let server_first = String::from_utf8(first.auth_bytes.to_vec()).unwrap();
    let mut parts = server_first.split(',');
    let nonce = parts.next().unwrap().strip_prefix("r=").unwrap().to_owned();
    assert!(nonce.starts_with("clientNonce123") && nonce.len() > 20, "{server_first}");
    let salt = STANDARD.decode(parts.next().unwrap().strip_prefix("s=").unwrap()).unwrap();
    let iterations: u32 = parts.next().unwrap().strip_prefix("i=").unwrap().parse().unwrap();
    assert_eq!(iterations, 4096);
    let mut salted = vec![0u8; dig.output_len()];
    pbkdf2::derive(kdf, iterations.try_into().unwrap(), &salt, password.as_bytes(), &mut salted);
    let key = hmac::Key::new(alg, &salted);
    let client_key = hmac::sign(&key, b"Client Key");
    let stored_key = digest::digest(dig, client_key.as_ref());
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{bare},{server_first},{without_proof}");
    let signature = hmac::sign(&hmac::Key::new(alg, stored_key.as_ref()), auth_message.as_bytes());
    let proof: Vec<u8> = client_key.as_ref().iter().zip(signature.as_ref()).map(|(a, b)| a ^ b).collect();
    let last = authenticate(&mut c, format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes()).await;
    if last.error_code != 0 {
        return Err(last);
    }
    let server_key = hmac::sign(&key, b"Server Key");
    let expected = hmac::sign(&hmac::Key::new(alg, server_key.as_ref()), auth_message.as_bytes());
    assert_eq!(last.auth_bytes, format!("v={}", STANDARD.encode(expected.as_ref())).into_bytes(), "server signature");
    Ok(c)
}

fn produce_req(topic: &str) -> ProduceRequest {
    ProduceRequest::default().with_acks(1).with_timeout_ms(5000).with_topic_data(vec![TopicProduceData::default()
        .with_name(name(topic))
        .with_partition_data(vec![PartitionProduceData::default().with_index(0).with_records(Some(batch(1, None)))])])
}

async fn create(c: &mut Conn, topic: &str) -> CreateTopicsResponse {
    let req = CreateTopicsRequest::default().with_topics(vec![create_topics_request::CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(1)
        .with_replication_factor(1)]);
    c.call(ApiKey::CreateTopics, 7, &req).await
}

#[tokio::test]
async fn unauthenticated_requests_close_the_connection_and_plain_checks_the_password() {
    let logs = logs();
    let b = broker().await;
    // ApiVersions is served before authentication and advertises the SASL APIs.
    let mut c = Conn::open(b.port).await;
    let v: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert!(v.api_keys.iter().any(|k| k.api_key == ApiKey::SaslAuthenticate as i16 && k.max_version == 2));
    assert!(v.api_keys.iter().any(|k| k.api_key == ApiKey::SaslHandshake as i16 && k.max_version == 1));
    // A produce before authentication: the connection closes, nothing is stored.
    c.send(ApiKey::Produce, 9, &produce_req("allowed")).await;
    assert!(c.recv().await.is_none(), "an unauthenticated produce must close the connection");
    // A frame over 64 KiB announced before authentication closes the connection at its size.
    let mut c = Conn::open(b.port).await;
    c.stream.write_all(&(100 * 1024i32).to_be_bytes()).await.unwrap();
    assert!(c.recv().await.is_none());

    // An unknown mechanism is answered with the offered ones.
    let mut c = Conn::open(b.port).await;
    let h = handshake(&mut c, "GSSAPI").await;
    assert_eq!(h.error_code, 33, "UNSUPPORTED_SASL_MECHANISM");
    let offered: Vec<&str> = h.mechanisms.iter().map(|m| m.as_str()).collect();
    assert_eq!(offered, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);

    let (mut c, bad) = plain(b.port, "producer1", "wrongPassword1").await;
    assert_eq!(bad.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert_eq!(bad.error_message.as_deref(), Some("Authentication failed: Invalid username or password"));
    assert!(c.recv().await.is_none(), "a failed authentication closes the connection");
    let (_, unknown) = plain(b.port, "nobodyAtAll", "producerSecret9").await;
    assert_eq!(unknown.error_code, 58);

    let (mut c, ok) = plain(b.port, "producer1", "producerSecret9").await;
    assert_eq!(ok.error_code, 0, "{:?}", ok.error_message);
    // A second handshake on an authenticated connection is refused.
    let again = handshake(&mut c, "PLAIN").await;
    assert_eq!(again.error_code, 34, "ILLEGAL_SASL_STATE");

    let log = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(log.contains("Kafka SASL authentication failed") && log.contains("producer1"), "{log}");
    for secret in ["wrongPassword1", "producerSecret9", "adminSecret77"] {
        assert!(!log.contains(secret), "a secret reached the log: {secret}");
    }
    b.b.stop().await;
}

#[tokio::test]
async fn scram_sha_256_and_512_exchanges_verify_both_ways() {
    let b = broker().await;
    for sha512 in [false, true] {
        let mut c = scram(b.port, sha512, "producer1", "producerSecret9").await.expect("the right password");
        // Authenticated: Metadata is served.
        let m: MetadataResponse = c.call(ApiKey::Metadata, 9, &MetadataRequest::default()).await;
        assert_eq!(m.brokers.len(), 1);
        // Cached credentials: a second exchange works with the same salt.
        scram(b.port, sha512, "producer1", "producerSecret9").await.expect("again");
        let refused = scram(b.port, sha512, "producer1", "wrongPassword1").await.err().expect("a wrong password");
        assert_eq!(refused.error_code, 58);
        let msg = refused.error_message.unwrap();
        assert!(msg.starts_with("Authentication failed during authentication due to invalid credentials"), "{msg}");
        assert!(scram(b.port, sha512, "nobodyAtAll", "whatever12").await.is_err(), "an unknown user");
    }
    b.b.stop().await;
}

#[tokio::test]
async fn topic_group_and_admin_permissions_apply() {
    let b = broker().await;
    let (mut admin, ok) = plain(b.port, "adminUser", "adminSecret77").await;
    assert_eq!(ok.error_code, 0);
    for t in ["allowed", "secret"] {
        assert_eq!(create(&mut admin, t).await.topics[0].error_code, 0);
    }
    let (mut c, ok) = plain(b.port, "producer1", "producerSecret9").await;
    assert_eq!(ok.error_code, 0);

    // Produce: the allowed topic is written, the other refused in the same request.
    let mut req = produce_req("allowed");
    req.topic_data.extend(produce_req("secret").topic_data);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &req).await;
    let code = |t: &str| r.responses.iter().find(|x| x.name.0.as_str() == t).unwrap().partition_responses[0].error_code;
    assert_eq!(code("allowed"), 0);
    assert_eq!(code("secret"), 29, "TOPIC_AUTHORIZATION_FAILED");
    let only_refused: ProduceResponse = c.call(ApiKey::Produce, 9, &produce_req("secret")).await;
    let p = &only_refused.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 29);
    assert!(p.error_message.as_deref().unwrap().contains("secret"));

    // Metadata lists only the topics the account may use and refuses the others by name.
    let all: MetadataResponse = c.call(ApiKey::Metadata, 9, &MetadataRequest::default().with_topics(None)).await;
    let names: Vec<&str> = all.topics.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.as_str())).collect();
    assert_eq!(names, ["allowed"]);
    let named = MetadataRequest::default().with_topics(Some(vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(name("secret"))),
        metadata_request::MetadataRequestTopic::default().with_name(Some(name("brandNew"))),
    ]));
    let m: MetadataResponse = c.call(ApiKey::Metadata, 9, &named.with_allow_auto_topic_creation(true)).await;
    assert_eq!(m.topics.iter().find(|t| t.name.as_ref().unwrap().0.as_str() == "secret").unwrap().error_code, 29);
    assert!(b.b.inner.topics.view("brandNew").is_none(), "a non-admin's Metadata creates no topic");

    // Group permissions: g1 allowed, g2 refused.
    let fc = |g: &str| FindCoordinatorRequest::default().with_key(s(g));
    let ok: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 3, &fc("g1")).await;
    assert_eq!(ok.error_code, 0);
    let no: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 3, &fc("g2")).await;
    assert_eq!(no.error_code, 30, "GROUP_AUTHORIZATION_FAILED");
    let hb: HeartbeatResponse =
        c.call(ApiKey::Heartbeat, 4, &HeartbeatRequest::default().with_group_id(GroupId(s("g2")))).await;
    assert_eq!(hb.error_code, 30);

    // Admin APIs.
    let del = DeleteTopicsRequest::default().with_topic_names(vec![name("allowed")]);
    let d: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 5, &del).await;
    assert_eq!(d.responses[0].error_code, 31, "CLUSTER_AUTHORIZATION_FAILED");
    assert!(d.responses[0].error_message.is_some());
    assert_eq!(create(&mut c, "mine").await.topics[0].error_code, 31);
    assert!(b.b.inner.topics.view("allowed").is_some(), "the topic survived");
    let d: DeleteTopicsResponse = admin.call(ApiKey::DeleteTopics, 5, &del).await;
    assert_eq!(d.responses[0].error_code, 0, "an admin may");
    b.b.stop().await;
}

/// Transactions (`authz_txn.rs`): AddPartitionsToTxn needs PUB on every topic it adds (nothing is
/// added otherwise), AddOffsetsToTxn the group's SUB, EndTxn any account, ListTransactions and
/// DescribeTransactions an admin.
#[tokio::test]
async fn transaction_apis_map_onto_topic_group_and_admin_permissions() {
    use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let b = broker().await;
    let (mut admin, _) = plain(b.port, "adminUser", "adminSecret77").await;
    for t in ["allowed", "secret"] {
        assert_eq!(create(&mut admin, t).await.topics[0].error_code, 0);
    }
    let (mut c, ok) = plain(b.port, "producer1", "producerSecret9").await;
    assert_eq!(ok.error_code, 0);
    let tid = TransactionalId(s("tx1"));
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid.clone()))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let r: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, &init).await;
    assert_eq!(r.error_code, 0);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    let add = |topics: &[&str]| {
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(tid.clone())
            .with_v3_and_below_producer_id(pid)
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(
                topics
                    .iter()
                    .map(|t| AddPartitionsToTxnTopic::default().with_name(name(t)).with_partitions(vec![0]))
                    .collect(),
            )
    };
    let r: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, &add(&["allowed", "secret"])).await;
    let codes: Vec<(String, i16)> = r
        .results_by_topic_v3_and_below
        .iter()
        .map(|t| (t.name.0.to_string(), t.results_by_partition[0].partition_error_code))
        .collect();
    assert_eq!(
        codes,
        [("allowed".to_owned(), 55), ("secret".to_owned(), 29)],
        "OPERATION_NOT_ATTEMPTED, TOPIC_AUTHORIZATION_FAILED"
    );
    let r: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, &add(&["allowed"])).await;
    assert_eq!(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code, 0);
    let offsets = |g: &str| {
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(tid.clone())
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_group_id(GroupId(s(g)))
    };
    let r: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 3, &offsets("g2")).await;
    assert_eq!(r.error_code, 30, "GROUP_AUTHORIZATION_FAILED");
    let r: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 3, &offsets("g1")).await;
    assert_eq!(r.error_code, 0);
    let end =
        EndTxnRequest::default().with_transactional_id(tid.clone()).with_producer_id(pid).with_producer_epoch(epoch);
    let r: EndTxnResponse = c.call(ApiKey::EndTxn, 3, &end.with_committed(true)).await;
    assert_eq!(r.error_code, 0);
    let list = ListTransactionsRequest::default().with_duration_filter(-1);
    let r: ListTransactionsResponse = c.call(ApiKey::ListTransactions, 1, &list).await;
    assert!(r.transaction_states.is_empty(), "a non-admin lists nothing");
    let r: ListTransactionsResponse = admin.call(ApiKey::ListTransactions, 1, &list).await;
    assert_eq!(r.transaction_states[0].transactional_id, tid);
    let describe = DescribeTransactionsRequest::default().with_transactional_ids(vec![tid.clone()]);
    let r: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, &describe).await;
    assert_eq!(r.transaction_states[0].error_code, 53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
    let r: DescribeTransactionsResponse = admin.call(ApiKey::DescribeTransactions, 0, &describe).await;
    assert_eq!(
        (r.transaction_states[0].error_code, r.transaction_states[0].transaction_state.as_str()),
        (0, "CompleteCommit")
    );
    b.b.stop().await;
}
