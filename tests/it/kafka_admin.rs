//! The Kafka admin APIs the command-line tools send (#28.5): CreatePartitions, DescribeTopicPartitions,
//! DescribeLogDirs, OffsetDelete, ListGroups v5, DescribeConfigs' full key set with synonyms and
//! the GROUP resource, a Kafka cluster id kept across restarts, RocketMQ's own topics hidden,
//! and each of them refused to accounts without the permissions Kafka would want.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::kafka::{batch, create, first, kafka_broker, name, produce, Conn};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const GROUP_ID_NOT_FOUND: i16 = 69;
const INVALID_GROUP_ID: i16 = 24;

fn st(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn grow(topic: &str, count: i32) -> create_partitions_request::CreatePartitionsTopic {
    create_partitions_request::CreatePartitionsTopic::default()
        .with_name(name(topic))
        .with_count(count)
        .with_assignments(None)
}

async fn create_partitions(
    c: &mut Conn,
    topics: Vec<create_partitions_request::CreatePartitionsTopic>,
    validate_only: bool,
) -> Vec<(String, i16)> {
    let req =
        CreatePartitionsRequest::default().with_topics(topics).with_timeout_ms(5000).with_validate_only(validate_only);
    let r: CreatePartitionsResponse = c.call(ApiKey::CreatePartitions, 3, &req).await;
    r.results.into_iter().map(|t| (t.name.0.to_string(), t.error_code)).collect()
}

/// Partitions of `topic` in a Metadata answer.
async fn partitions(c: &mut Conn, topic: &str) -> usize {
    let req = MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic)))]));
    let r: MetadataResponse = c.call(ApiKey::Metadata, 12, &req).await;
    r.topics[0].partitions.len()
}

/// Before: CreatePartitions was not served (the connection closed). Now a topic grows, both
/// doors see the new queues, and it never shrinks.
#[tokio::test]
async fn create_partitions_grows_a_topic_both_doors_see() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "grown", 2).await;
    assert_eq!(create_partitions(&mut c, vec![grow("grown", 4)], true).await, vec![("grown".into(), 0)]);
    assert_eq!(partitions(&mut c, "grown").await, 2, "validate_only changes nothing");
    assert_eq!(create_partitions(&mut c, vec![grow("grown", 4)], false).await, vec![("grown".into(), 0)]);
    assert_eq!(partitions(&mut c, "grown").await, 4);
    let tc = b.inner.core.topics.get("grown").unwrap();
    assert_eq!((tc.read_queue_nums, tc.write_queue_nums), (4, 4), "RocketMQ's queue numbers grew");
    // The new partition takes records.
    let mut p = produce("grown", 1, batch(2, None));
    p.topic_data[0].partition_data[0].index = 3;
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &p).await;
    assert_eq!(first(&r), (0, 0));
    // Refused as Kafka refuses.
    for (count, code) in [(4, INVALID_PARTITIONS), (3, INVALID_PARTITIONS), (5000, INVALID_PARTITIONS)] {
        assert_eq!(create_partitions(&mut c, vec![grow("grown", count)], false).await[0].1, code, "{count}");
    }
    assert_eq!(create_partitions(&mut c, vec![grow("nosuch", 2)], false).await[0].1, UNKNOWN_TOPIC_OR_PARTITION);
    let dup = create_partitions(&mut c, vec![grow("grown", 6), grow("grown", 7)], false).await;
    assert_eq!(dup, vec![("grown".into(), INVALID_REQUEST), ("grown".into(), INVALID_REQUEST)]);
    let elsewhere = grow("grown", 5).with_assignments(Some(vec![
        create_partitions_request::CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(7)]),
    ]));
    assert_eq!(create_partitions(&mut c, vec![elsewhere], false).await[0].1, INVALID_REPLICA_ASSIGNMENT);
    let too_few = grow("grown", 6).with_assignments(Some(vec![]));
    assert_eq!(create_partitions(&mut c, vec![too_few], false).await[0].1, INVALID_REPLICA_ASSIGNMENT);
    let system = format!("{}_REPLY_TOPIC", b.inner.config.broker_cluster_name);
    assert_eq!(create_partitions(&mut c, vec![grow(&system, 9)], false).await[0].1, TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(partitions(&mut c, "grown").await, 4);
    b.stop().await;
    // Kept in topics.json.
    let (b, port) = kafka_broker(dir.path()).await;
    assert_eq!(partitions(&mut Conn::open(port).await, "grown").await, 4);
    b.stop().await;
}

/// Before: the cluster id was the RocketMQ cluster name ("DefaultCluster"). Now it is a Kafka
/// UUID (22 URL-safe base64 characters), the same in Metadata and DescribeCluster and after a
/// restart.
#[tokio::test]
async fn cluster_id_is_a_kafka_uuid_kept_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (b, port) = kafka_broker(dir.path()).await;
        let mut c = Conn::open(port).await;
        let m: MetadataResponse =
            c.call(ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(Some(vec![]))).await;
        let d: DescribeClusterResponse = c.call(ApiKey::DescribeCluster, 1, &DescribeClusterRequest::default()).await;
        let id = m.cluster_id.unwrap().to_string();
        assert_eq!(d.cluster_id.as_str(), id);
        ids.push(id);
        b.stop().await;
    }
    use base64::Engine;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&ids[0]).unwrap();
    assert_eq!((ids[0].len(), raw.len()), (22, 16), "{}", ids[0]);
    assert_eq!(ids[0], ids[1], "the same after a restart");
}

async fn describe_partitions(
    c: &mut Conn,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsResponse {
    let req = DescribeTopicPartitionsRequest::default()
        .with_topics(
            topics
                .iter()
                .map(|t| describe_topic_partitions_request::TopicRequest::default().with_name(name(t)))
                .collect(),
        )
        .with_response_partition_limit(limit)
        .with_cursor(cursor.map(|(t, p)| {
            describe_topic_partitions_request::Cursor::default().with_topic_name(name(t)).with_partition_index(p)
        }));
    c.call(ApiKey::DescribeTopicPartitions, 0, &req).await
}

fn listed(r: &DescribeTopicPartitionsResponse) -> Vec<(String, i16, Vec<i32>)> {
    r.topics
        .iter()
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            (name, t.error_code, t.partitions.iter().map(|p| p.partition_index).collect())
        })
        .collect()
}

/// Before: DescribeTopicPartitions was not served, and Metadata listed `<cluster>_REPLY_TOPIC`.
/// Now topics are paged by the partition limit with a cursor, and RocketMQ's own topics are in
/// no listing.
#[tokio::test]
async fn describe_topic_partitions_pages_and_hides_rocketmq_topics() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "pa", 3).await;
    create(&mut c, "pb", 2).await;
    let r = describe_partitions(&mut c, &[], 4, None).await;
    assert_eq!(listed(&r), vec![("pa".into(), 0, vec![0, 1, 2]), ("pb".into(), 0, vec![0])]);
    let next = r.next_cursor.as_ref().map(|c| (c.topic_name.0.to_string(), c.partition_index));
    assert_eq!(next, Some(("pb".into(), 1)));
    let r = describe_partitions(&mut c, &[], 4, Some(("pb", 1))).await;
    assert_eq!(listed(&r), vec![("pb".into(), 0, vec![1])]);
    assert!(r.next_cursor.is_none());
    assert_eq!(r.topics[0].partitions[0].leader_id, BrokerId(b.inner.config.broker_id as i32));
    // Exactly at the limit: the cursor names the next topic.
    let r = describe_partitions(&mut c, &["pa", "pb"], 3, None).await;
    let next = r.next_cursor.as_ref().map(|c| (c.topic_name.0.to_string(), c.partition_index));
    assert_eq!(next, Some(("pb".into(), 0)));
    // Named: unknown and reserved topics answer errors; a cursor outside the list is refused.
    let reply = format!("{}_REPLY_TOPIC", b.inner.config.broker_cluster_name);
    let r = describe_partitions(&mut c, &["nosuch", &reply, "RMQ_SYS_TRANS_HALF_TOPIC"], 100, None).await;
    let codes: Vec<i16> = listed(&r).into_iter().map(|t| t.1).collect();
    assert_eq!(codes, vec![TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION]);
    let r = describe_partitions(&mut c, &["pa"], 100, Some(("pb", 0))).await;
    assert_eq!(r.topics[0].error_code, INVALID_REQUEST);
    // No listing shows RocketMQ's topics.
    let all = describe_partitions(&mut c, &[], 2000, None).await;
    let m: MetadataResponse = c.call(ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(None)).await;
    let mut names: Vec<String> = m.topics.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())).collect();
    names.sort();
    assert_eq!(names, vec!["pa".to_owned(), "pb".to_owned()]);
    assert_eq!(listed(&all).into_iter().map(|t| t.0).collect::<Vec<_>>(), names);
    assert!(b.inner.core.topics.contains(&reply), "the reply topic exists, only hidden");
    b.stop().await;
}

/// Before: DescribeLogDirs was not served. Now the CommitLog's directory is described with the
/// disk's sizes and each partition's bytes.
#[tokio::test]
async fn describe_log_dirs_sizes_partitions_and_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "sized", 2).await;
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("sized", 1, batch(5, None))).await;
    assert_eq!(first(&r), (0, 0));
    b.inner.store.await_dispatched(std::time::Duration::from_secs(5)).await;
    let r: DescribeLogDirsResponse = c.call(ApiKey::DescribeLogDirs, 4, &all_log_dirs()).await;
    assert_eq!((r.error_code, r.results.len()), (0, 1));
    let d = &r.results[0];
    assert!(d.log_dir.contains("commitlog"), "{}", d.log_dir.as_str());
    assert!(d.total_bytes > 0 && d.usable_bytes > 0 && d.usable_bytes <= d.total_bytes);
    let names: Vec<&str> = d.topics.iter().map(|t| t.name.0.as_str()).collect();
    assert_eq!(names, vec!["sized"], "RocketMQ's topics are not listed");
    let sizes: Vec<(i32, i64)> = d.topics[0].partitions.iter().map(|p| (p.partition_index, p.partition_size)).collect();
    assert_eq!(sizes.len(), 2);
    assert!(sizes[0].1 > 5 * 2, "five records in partition 0: {sizes:?}");
    assert_eq!(sizes[1], (1, 0));
    // Named: unknown partitions and topics left out.
    let req = DescribeLogDirsRequest::default().with_topics(Some(vec![
        describe_log_dirs_request::DescribableLogDirTopic::default()
            .with_topic(name("sized"))
            .with_partitions(vec![0, 9]),
        describe_log_dirs_request::DescribableLogDirTopic::default()
            .with_topic(name("nosuch"))
            .with_partitions(vec![0]),
    ]));
    let r: DescribeLogDirsResponse = c.call(ApiKey::DescribeLogDirs, 1, &req).await;
    let t = &r.results[0].topics;
    assert_eq!((t.len(), t[0].partitions.len(), t[0].partitions[0].partition_size), (1, 1, sizes[0].1));
    b.stop().await;
}

/// Every topic's log dirs (a null topic list; the codec's default is an empty one).
fn all_log_dirs() -> DescribeLogDirsRequest {
    DescribeLogDirsRequest::default().with_topics(None)
}

fn commit_two(g: &str, topic: &str) -> OffsetCommitRequest {
    let parts = (0..2)
        .map(|q| {
            offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(q)
                .with_committed_offset(3)
                .with_committed_metadata(Some(st("m")))
        })
        .collect();
    OffsetCommitRequest::default()
        .with_group_id(GroupId(st(g)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(st(""))
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(parts)])
}

async fn committed(c: &mut Conn, g: &str, topic: &str) -> Vec<i64> {
    let of = OffsetFetchRequest::default().with_group_id(GroupId(st(g))).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default()
            .with_name(name(topic))
            .with_partition_indexes(vec![0, 1]),
    ]));
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, &of).await;
    r.topics[0].partitions.iter().map(|p| p.committed_offset).collect()
}

fn offset_delete(g: &str, topic: &str, parts: &[i32]) -> OffsetDeleteRequest {
    OffsetDeleteRequest::default().with_group_id(GroupId(st(g))).with_topics(vec![
        offset_delete_request::OffsetDeleteRequestTopic::default().with_name(name(topic)).with_partitions(
            parts
                .iter()
                .map(|p| offset_delete_request::OffsetDeleteRequestPartition::default().with_partition_index(*p))
                .collect(),
        ),
    ])
}

/// Before: OffsetDelete was not served and ListGroups stopped at v4. Now a group's offsets of
/// some partitions go (RocketMQ's consumer offsets too), and ListGroups v5 says "classic".
#[tokio::test]
async fn offset_delete_forgets_some_offsets_and_list_groups_v5_has_types() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "od", 2).await;
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit_two("odg", "od")).await;
    assert!(r.topics[0].partitions.iter().all(|p| p.error_code == 0));
    assert_eq!(committed(&mut c, "odg", "od").await, vec![3, 3]);
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete("odg", "od", &[0, 7])).await;
    assert_eq!(r.error_code, 0);
    let codes: Vec<i16> = r.topics[0].partitions.iter().map(|p| p.error_code).collect();
    assert_eq!(codes, vec![0, UNKNOWN_TOPIC_OR_PARTITION]);
    assert_eq!(committed(&mut c, "odg", "od").await, vec![-1, 3]);
    assert_eq!(b.inner.core.offsets.query("odg", "od", 0), -1, "RocketMQ's offset went too");
    assert_eq!(b.inner.core.offsets.query("odg", "od", 1), 3);
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete("nosuchgroup", "od", &[0])).await;
    assert_eq!(r.error_code, GROUP_ID_NOT_FOUND);
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete("a@b", "od", &[0])).await;
    assert_eq!(r.error_code, INVALID_GROUP_ID);
    // ListGroups v5: the group type, and the types filter.
    let list = |types: Vec<&str>| ListGroupsRequest::default().with_types_filter(types.into_iter().map(st).collect());
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, &list(vec![])).await;
    let g = r.groups.iter().find(|g| g.group_id.0.as_str() == "odg").expect("listed");
    assert_eq!((g.group_type.as_str(), g.group_state.as_str()), ("classic", "Empty"));
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, &list(vec!["consumer", "share"])).await;
    assert!(r.groups.is_empty());
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, &list(vec!["Classic"])).await;
    assert!(r.groups.iter().any(|g| g.group_id.0.as_str() == "odg"));
    b.stop().await;
}

async fn describe_configs(c: &mut Conn, kind: i8, resource: &str) -> describe_configs_response::DescribeConfigsResult {
    let req = DescribeConfigsRequest::default().with_include_synonyms(true).with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(st(resource))
            .with_configuration_keys(None),
    ]);
    let r: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, &req).await;
    r.results.into_iter().next().unwrap()
}

/// Before: a topic described 10 keys with one synonym each and the GROUP resource was an
/// INVALID_REQUEST. Now the key set is Kafka 4's, synonyms are Kafka's, groups are described.
#[tokio::test]
async fn describe_configs_has_kafkas_key_set_synonyms_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "cfg", 1).await;
    let d = describe_configs(&mut c, 2, "cfg").await;
    assert_eq!(d.error_code, 0);
    let keys: Vec<&str> = d.configs.iter().map(|e| e.name.as_str()).collect();
    for k in [
        "cleanup.policy",
        "compression.type",
        "flush.ms",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "remote.storage.enable",
        "retention.ms",
        "segment.index.bytes",
        "unclean.leader.election.enable",
    ] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert!(keys.len() >= 33 && keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    let get = |d: &describe_configs_response::DescribeConfigsResult, k: &str| {
        d.configs.iter().find(|e| e.name.as_str() == k).cloned().unwrap()
    };
    let ms = get(&d, "retention.ms");
    let syn: Vec<(&str, i8)> = ms.synonyms.iter().map(|s| (s.name.as_str(), s.source)).collect();
    assert_eq!(syn, vec![("log.retention.hours", 5)]);
    assert!(get(&d, "remote.storage.enable").synonyms.is_empty(), "Kafka has no broker synonym for it");
    // A fixed key is accepted at its value only.
    let set = |k: &str, v: &str| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(st("cfg"))
                .with_configs(vec![incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(st(k))
                    .with_config_operation(0)
                    .with_value(Some(st(v)))]),
        ])
    };
    let r: IncrementalAlterConfigsResponse =
        c.call(ApiKey::IncrementalAlterConfigs, 1, &set("compression.type", "lz4")).await;
    assert_eq!(r.responses[0].error_code, INVALID_CONFIG);
    let r: IncrementalAlterConfigsResponse =
        c.call(ApiKey::IncrementalAlterConfigs, 1, &set("compression.type", "producer")).await;
    assert_eq!(r.responses[0].error_code, 0);
    let r: IncrementalAlterConfigsResponse =
        c.call(ApiKey::IncrementalAlterConfigs, 1, &set("retention.ms", "60000")).await;
    assert_eq!(r.responses[0].error_code, 0);
    let d = describe_configs(&mut c, 2, "cfg").await;
    let syn: Vec<(String, i8)> =
        get(&d, "retention.ms").synonyms.iter().map(|s| (s.name.to_string(), s.source)).collect();
    assert_eq!(syn, vec![("retention.ms".to_owned(), 1), ("log.retention.hours".to_owned(), 5)]);
    assert_eq!(get(&d, "compression.type").config_source, 1);
    // Groups: Kafka 4's group configs.
    let g = describe_configs(&mut c, 32, "any-group").await;
    assert_eq!(g.error_code, 0);
    let session = get(&g, "consumer.session.timeout.ms");
    assert_eq!((session.value.as_deref(), session.config_source), (Some("45000"), 5));
    assert_eq!(session.synonyms[0].name.as_str(), "group.consumer.session.timeout.ms");
    assert_eq!(describe_configs(&mut c, 32, "a@b").await.error_code, INVALID_GROUP_ID);
    b.stop().await;
}

/// Each new API checks the account as Kafka would: ALTER/DELETE and cluster DESCRIBE are the
/// admin's, DescribeTopicPartitions needs a permission on the topic.
#[tokio::test]
async fn admin_apis_check_the_account() {
    let sb = super::kafka_sasl::broker().await;
    let (mut admin, r) = super::kafka_sasl::plain(sb.port, "adminUser", "adminSecret77").await;
    assert_eq!(r.error_code, 0);
    create(&mut admin, "allowed", 1).await;
    create(&mut admin, "hidden", 1).await;
    let (mut c, r) = super::kafka_sasl::plain(sb.port, "producer1", "producerSecret9").await;
    assert_eq!(r.error_code, 0);
    assert_eq!(create_partitions(&mut c, vec![grow("allowed", 2)], false).await[0].1, TOPIC_AUTHORIZATION_FAILED);
    let r: DescribeLogDirsResponse = c.call(ApiKey::DescribeLogDirs, 4, &all_log_dirs()).await;
    assert_eq!((r.error_code, r.results.len()), (CLUSTER_AUTHORIZATION_FAILED, 0));
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete("g1", "allowed", &[0])).await;
    assert_eq!(r.error_code, GROUP_AUTHORIZATION_FAILED);
    let all = describe_partitions(&mut c, &[], 100, None).await;
    assert_eq!(listed(&all).into_iter().map(|t| t.0).collect::<Vec<_>>(), vec!["allowed".to_owned()]);
    let named = describe_partitions(&mut c, &["allowed", "hidden"], 100, None).await;
    let mut codes: Vec<(String, i16)> = listed(&named).into_iter().map(|t| (t.0, t.1)).collect();
    codes.sort();
    assert_eq!(codes, vec![("allowed".into(), 0), ("hidden".into(), TOPIC_AUTHORIZATION_FAILED)]);
    assert_eq!(describe_configs(&mut c, 32, "g1").await.error_code, 0);
    assert_eq!(describe_configs(&mut c, 32, "other").await.error_code, GROUP_AUTHORIZATION_FAILED);
    // The admin may.
    assert_eq!(create_partitions(&mut admin, vec![grow("allowed", 2)], false).await[0].1, 0);
    let r: DescribeLogDirsResponse = admin.call(ApiKey::DescribeLogDirs, 4, &all_log_dirs()).await;
    assert_eq!(r.error_code, 0);
    sb.b.stop().await;
}
