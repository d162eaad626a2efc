//! The `ferrocket admin` subcommands (names follow mqadmin's).
//!
//! May import: `model`, `protocol` and modules of `tools/`; the area's rule is its line in
//! docs/architecture.md.

use clap::Subcommand;

use super::admin::{mq_table, parse_msg_id, records, table, Admin, AdminError};
use crate::model::message::{offset_msg_id, parse_properties};
use crate::protocol::{RemotingCommand, RequestCode};

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Brokers per cluster, with their addresses and versions.
    ClusterList,
    /// All topics the NameServer knows.
    TopicList,
    /// Where a topic's queues live.
    TopicRoute {
        #[arg(short = 't', long)]
        topic: String,
    },
    /// Min/max offsets and last update per queue.
    TopicStatus {
        #[arg(short = 't', long)]
        topic: String,
    },
    /// Creates or updates a topic on every master of a cluster (or one broker).
    UpdateTopic {
        #[arg(short = 't', long)]
        topic: String,
        #[arg(short = 'c', long)]
        cluster: Option<String>,
        #[arg(short = 'b', long)]
        broker: Option<String>,
        #[arg(short = 'r', long, default_value_t = 8)]
        read_queues: i32,
        #[arg(short = 'w', long, default_value_t = 8)]
        write_queues: i32,
        #[arg(short = 'p', long, default_value_t = 6)]
        perm: i32,
        /// A topic attribute, `key=value` or mqadmin's `+key=value` (repeatable), such as
        /// `message.type=FIFO` (NORMAL, FIFO, DELAY, TRANSACTION or MIXED: what 5.x clients may send).
        #[arg(short = 'a', long = "attribute")]
        attributes: Vec<String>,
    },
    /// Creates or updates a subscription group on every master of a cluster (or one broker).
    UpdateSubGroup {
        #[arg(short = 'g', long)]
        group: String,
        #[arg(short = 'c', long)]
        cluster: Option<String>,
        #[arg(short = 'b', long)]
        broker: Option<String>,
        /// consumeMessageOrderly: the group consumes each queue in order (5.x FIFO consumers).
        #[arg(short = 'o', long, default_value_t = false)]
        consume_orderly: bool,
        /// retryMaxTimes: deliveries past it go to `%DLQ%<group>`.
        #[arg(short = 'r', long, default_value_t = 16)]
        retry_max_times: i32,
    },
    /// Deletes a topic from every master of a cluster and from the NameServer.
    DeleteTopic {
        #[arg(short = 't', long)]
        topic: String,
        #[arg(short = 'c', long)]
        cluster: String,
    },
    /// Consumer offsets and lag of a group, per queue.
    ConsumerProgress {
        #[arg(short = 'g', long)]
        group: String,
    },
    /// The clients connected in a consumer group.
    ConsumerConnection {
        #[arg(short = 'g', long)]
        group: String,
    },
    /// Messages by key.
    QueryMsgByKey {
        #[arg(short = 't', long)]
        topic: String,
        #[arg(short = 'k', long)]
        key: String,
    },
    /// A message by its offset message id.
    QueryMsgById {
        #[arg(short = 'i', long)]
        id: String,
    },
    /// Resets a group's offsets on a topic to a time (ms since epoch, or -1 for the end).
    ResetOffsetByTime {
        #[arg(short = 'g', long)]
        group: String,
        #[arg(short = 't', long)]
        topic: String,
        #[arg(short = 's', long, allow_negative_numbers = true)]
        timestamp: i64,
    },
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

pub async fn run(namesrv: &str, cmd: AdminCommand) -> Result<String, AdminError> {
    let admin = Admin::new(namesrv);
    match cmd {
        AdminCommand::ClusterList => cluster_list(&admin).await,
        AdminCommand::TopicList => Ok(admin.topic_list().await?.topic_list.join("\n") + "\n"),
        AdminCommand::TopicRoute { topic } => {
            let r = admin.route(&topic).await?;
            let mut rows = vec![vec![s("broker"), s("read"), s("write"), s("perm"), s("addresses")]];
            for q in &r.queue_datas {
                let addrs =
                    r.broker_datas.iter().find(|b| b.broker_name == q.broker_name).map(|b| {
                        b.broker_addrs.iter().map(|(id, a)| format!("{id}={a}")).collect::<Vec<_>>().join(" ")
                    });
                rows.push(vec![
                    q.broker_name.clone(),
                    s(q.read_queue_nums),
                    s(q.write_queue_nums),
                    crate::model::perm::to_string(q.perm),
                    addrs.unwrap_or_default(),
                ]);
            }
            Ok(table(&rows))
        }
        AdminCommand::TopicStatus { topic } => topic_status(&admin, &topic).await,
        AdminCommand::UpdateTopic { topic, cluster, broker, read_queues, write_queues, perm, attributes } => {
            let attributes = attributes_header(&attributes)?;
            let mut done = Vec::new();
            for (name, addr) in admin.masters(cluster.as_deref(), broker.as_deref()).await? {
                let req = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC)
                    .with_ext("topic", &topic)
                    .with_ext("defaultTopic", "TBW102")
                    .with_ext("readQueueNums", read_queues.to_string())
                    .with_ext("writeQueueNums", write_queues.to_string())
                    .with_ext("perm", perm.to_string())
                    .with_ext("topicFilterType", "SINGLE_TAG")
                    .with_ext("topicSysFlag", "0")
                    .with_ext("order", "false");
                let req = match &attributes {
                    Some(a) => req.with_ext("attributes", a),
                    None => req,
                };
                admin.call(&addr, req, &format!("create {topic} on {name}")).await?;
                done.push(format!("create topic {topic} on {name} ({addr}) OK"));
            }
            Ok(done.join("\n") + "\n")
        }
        AdminCommand::UpdateSubGroup { group, cluster, broker, consume_orderly, retry_max_times } => {
            let mut config = crate::model::group::SubscriptionGroupConfig::named(&group);
            config.consume_message_orderly = consume_orderly;
            config.retry_max_times = retry_max_times;
            let body = serde_json::to_vec(&config).map_err(|e| AdminError::Usage(e.to_string()))?;
            let mut done = Vec::new();
            for (name, addr) in admin.masters(cluster.as_deref(), broker.as_deref()).await? {
                let mut req = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP);
                req.body = body.clone().into();
                admin.call(&addr, req, &format!("create group {group} on {name}")).await?;
                done.push(format!("create subscription group {group} on {name} ({addr}) OK"));
            }
            Ok(done.join("\n") + "\n")
        }
        AdminCommand::DeleteTopic { topic, cluster } => {
            for (name, addr) in admin.masters(Some(&cluster), None).await? {
                let req = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_BROKER).with_ext("topic", &topic);
                admin.call(&addr, req, &format!("delete {topic} on {name}")).await?;
            }
            // Like mqadmin: every NameServer forgets the topic.
            for ns in namesrv.split(';').map(str::trim).filter(|n| !n.is_empty()) {
                let req = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV)
                    .with_ext("topic", &topic)
                    .with_ext("clusterName", &cluster);
                admin.call(ns, req, &format!("delete topic in NameServer {ns}")).await?;
            }
            Ok(format!("delete topic {topic} from cluster {cluster} OK\n"))
        }
        AdminCommand::ConsumerProgress { group } => consumer_progress(&admin, &group).await,
        AdminCommand::ConsumerConnection { group } => consumer_connection(&admin, &group).await,
        AdminCommand::QueryMsgByKey { topic, key } => query_by_key(&admin, &topic, &key).await,
        AdminCommand::QueryMsgById { id } => {
            let (addr, offset) = parse_msg_id(&id)?;
            let req = RemotingCommand::request(RequestCode::VIEW_MESSAGE_BY_ID).with_ext("offset", offset.to_string());
            let resp = admin.call(&addr, req, &format!("view message {id}")).await?;
            Ok(records(&resp.body).iter().map(describe).collect::<Vec<_>>().join("\n"))
        }
        AdminCommand::ResetOffsetByTime { group, topic, timestamp } => {
            let route = admin.route(&topic).await?;
            let mut rows = vec![vec![s("broker"), s("queue"), s("new offset")]];
            for b in &route.broker_datas {
                let Some(addr) = b.master_addr() else { continue };
                let req = RemotingCommand::request(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("topic", &topic)
                    .with_ext("group", &group)
                    .with_ext("timestamp", timestamp.to_string())
                    .with_ext("isForce", "true");
                let resp = admin.call(addr, req, &format!("reset offsets on {}", b.broker_name)).await?;
                for (mq, v) in
                    mq_table(&resp.body).map_err(|why| AdminError::Body { what: "reset offsets".into(), why })?
                {
                    rows.push(vec![mq.broker_name, s(mq.queue_id), v.to_string()]);
                }
            }
            Ok(table(&rows))
        }
    }
}

async fn cluster_list(admin: &Admin) -> Result<String, AdminError> {
    let info = admin.cluster_info().await?;
    let mut rows = vec![vec![s("cluster"), s("broker"), s("id"), s("address"), s("version")]];
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else { continue };
            for (id, addr) in &data.broker_addrs {
                let version = match admin
                    .call(addr, RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO), "runtime info")
                    .await
                {
                    Ok(r) => serde_json::from_slice::<serde_json::Value>(&r.body)
                        .ok()
                        .and_then(|v| v["table"]["brokerVersionDesc"].as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    Err(e) => format!("unreachable: {e}"),
                };
                rows.push(vec![cluster.clone(), name.clone(), s(id), addr.clone(), version]);
            }
        }
    }
    Ok(table(&rows))
}

async fn topic_status(admin: &Admin, topic: &str) -> Result<String, AdminError> {
    let route = admin.route(topic).await?;
    let mut rows = vec![vec![s("broker"), s("queue"), s("min offset"), s("max offset"), s("last update")]];
    for b in &route.broker_datas {
        let Some(addr) = b.master_addr().or(b.broker_addrs.values().next().map(String::as_str)) else { continue };
        let req = RemotingCommand::request(RequestCode::GET_TOPIC_STATS_INFO).with_ext("topic", topic);
        let resp = admin.call(addr, req, &format!("topic stats on {}", b.broker_name)).await?;
        for (mq, v) in mq_table(&resp.body).map_err(|why| AdminError::Body { what: "topic stats".into(), why })? {
            rows.push(vec![
                mq.broker_name,
                s(mq.queue_id),
                v["minOffset"].to_string(),
                v["maxOffset"].to_string(),
                v["lastUpdateTimestamp"].to_string(),
            ]);
        }
    }
    Ok(table(&rows))
}

async fn consumer_progress(admin: &Admin, group: &str) -> Result<String, AdminError> {
    let route = match admin.route(&crate::model::group::retry_topic(group)).await {
        Ok(r) => r,
        Err(_) => admin.route(group).await?,
    };
    let mut rows = vec![vec![s("topic"), s("broker"), s("queue"), s("broker offset"), s("consumer offset"), s("lag")]];
    let mut total = 0i64;
    for b in &route.broker_datas {
        let Some(addr) = b.master_addr() else { continue };
        let req = RemotingCommand::request(RequestCode::GET_CONSUME_STATS).with_ext("consumerGroup", group);
        let resp = admin.call(addr, req, &format!("consume stats on {}", b.broker_name)).await?;
        for (mq, v) in mq_table(&resp.body).map_err(|why| AdminError::Body { what: "consume stats".into(), why })? {
            let (bo, co) = (v["brokerOffset"].as_i64().unwrap_or(0), v["consumerOffset"].as_i64().unwrap_or(0));
            total += bo - co;
            rows.push(vec![mq.topic, mq.broker_name, s(mq.queue_id), s(bo), s(co), s(bo - co)]);
        }
    }
    Ok(format!("{}total lag: {total}\n", table(&rows)))
}

async fn consumer_connection(admin: &Admin, group: &str) -> Result<String, AdminError> {
    let route = admin.route(&crate::model::group::retry_topic(group)).await?;
    let mut rows = vec![vec![s("client id"), s("address"), s("language"), s("version")]];
    for b in &route.broker_datas {
        let Some(addr) = b.master_addr() else { continue };
        let req = RemotingCommand::request(RequestCode::GET_CONSUMER_CONNECTION_LIST).with_ext("consumerGroup", group);
        let resp = admin.call(addr, req, &format!("connections on {}", b.broker_name)).await?;
        let v: serde_json::Value = serde_json::from_slice(&resp.body)
            .map_err(|e| AdminError::Body { what: "connections".into(), why: e.to_string() })?;
        for c in v["connectionSet"].as_array().into_iter().flatten() {
            rows.push(vec![
                s(c["clientId"].as_str().unwrap_or("")),
                s(c["clientAddr"].as_str().unwrap_or("")),
                s(c["language"].as_str().unwrap_or("")),
                c["version"].to_string(),
            ]);
        }
    }
    Ok(table(&rows))
}

async fn query_by_key(admin: &Admin, topic: &str, key: &str) -> Result<String, AdminError> {
    let route = admin.route(topic).await?;
    let mut out = Vec::new();
    for b in &route.broker_datas {
        let Some(addr) = b.master_addr() else { continue };
        let req = RemotingCommand::request(RequestCode::QUERY_MESSAGE)
            .with_ext("topic", topic)
            .with_ext("key", key)
            .with_ext("maxNum", "64")
            .with_ext("beginTimestamp", "0")
            .with_ext("endTimestamp", i64::MAX.to_string());
        match admin.call(addr, req, &format!("query on {}", b.broker_name)).await {
            Ok(resp) => out.extend(records(&resp.body).iter().map(describe)),
            Err(AdminError::Refused { code: 22, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(if out.is_empty() { "no message found\n".into() } else { out.join("\n") })
}

fn describe(m: &crate::model::message::StoredMessage) -> String {
    let props = parse_properties(&m.properties);
    format!(
        "msgId: {}\ntopic: {}  queue: {}  queueOffset: {}\nkeys: {}  tags: {}  uniqKey: {}\nstoreTime: {}  bornHost: {}  reconsumeTimes: {}\nbody: {} bytes\n",
        offset_msg_id(m.store_host, m.commit_log_offset),
        m.topic,
        m.queue_id,
        m.queue_offset,
        props.get("KEYS").map_or("", String::as_str),
        props.get("TAGS").map_or("", String::as_str),
        props.get("UNIQ_KEY").map_or("", String::as_str),
        m.store_timestamp,
        m.born_host,
        m.reconsume_times,
        m.body.len()
    )
}

/// `-a key=value` / `-a +key=value` into UPDATE_AND_CREATE_TOPIC's `attributes` header
/// (`+k=v,+k2=v2`, as mqadmin's `updateTopic -a` writes it); `None` when none are given.
fn attributes_header(given: &[String]) -> Result<Option<String>, AdminError> {
    let mut parts = Vec::with_capacity(given.len());
    for a in given {
        let kv = a.trim().strip_prefix('+').unwrap_or(a.trim());
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() && !kv.contains(',') => parts.push(format!("+{k}={v}")),
            _ => return Err(AdminError::Usage(format!("attribute '{a}' is not key=value (e.g. message.type=FIFO)"))),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_as_mqadmin_writes_them() {
        let a = |v: &[&str]| attributes_header(&v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(a(&[]).unwrap(), None);
        assert_eq!(a(&["message.type=FIFO"]).unwrap().as_deref(), Some("+message.type=FIFO"));
        assert_eq!(a(&["+message.type=DELAY", "k=v"]).unwrap().as_deref(), Some("+message.type=DELAY,+k=v"));
        assert!(a(&["novalue"]).is_err());
        assert!(a(&["a=b,c=d"]).is_err());
    }
}
