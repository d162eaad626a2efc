//! `ferrocket admin`: the everyday mqadmin operations for users without a JVM, with readable
//! tables. Talks to the NameServer and brokers over the remoting protocol like mqadmin does.
//!
//! May import: `model`, `protocol`, `remoting`, `store` and modules of `tools/`; the area's rule is
//! its line in docs/architecture.md.

use std::time::Duration;

use crate::model::message::{decode_offset_msg_id, StoredMessage};
use crate::protocol::body::client::MessageQueue;
use crate::protocol::body::route::{ClusterInfo, TopicRouteData};
use crate::protocol::body::{json, TopicList};
use crate::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::NoCallbacks;
use crate::remoting::{RemotingClient, RemotingError};

/// An admin operation that failed; the message says which call and why.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{what}: {source}")]
    Transport { what: String, source: RemotingError },
    #[error("{what}: code {code}, {remark}")]
    Refused { what: String, code: i32, remark: String },
    #[error("{what}: unreadable answer: {why}")]
    Body { what: String, why: String },
    #[error("{0}")]
    Usage(String),
}

pub struct Admin {
    client: RemotingClient<NoCallbacks>,
    namesrv: String,
}

const TIMEOUT: Duration = Duration::from_secs(5);

impl Admin {
    pub fn new(namesrv: &str) -> Self {
        let namesrv = namesrv.split(';').next().unwrap_or("127.0.0.1:9876").trim().to_owned();
        let client = RemotingClient::new(
            std::sync::Arc::new(NoCallbacks),
            FrameLimits::default(),
            tokio_util::task::TaskTracker::new(),
            tokio_util::sync::CancellationToken::new(),
        );
        Self { client, namesrv }
    }

    /// Sends `req` to `addr`; any code but SUCCESS is an error naming `what`.
    pub async fn call(&self, addr: &str, req: RemotingCommand, what: &str) -> Result<RemotingCommand, AdminError> {
        let resp = self
            .client
            .invoke(addr, req, TIMEOUT)
            .await
            .map_err(|source| AdminError::Transport { what: what.to_owned(), source })?;
        if resp.response_code() != ResponseCode::SUCCESS {
            return Err(AdminError::Refused {
                what: what.to_owned(),
                code: resp.code,
                remark: resp.remark.unwrap_or_default(),
            });
        }
        Ok(resp)
    }

    fn parse<T: serde::de::DeserializeOwned>(resp: &RemotingCommand, what: &str) -> Result<T, AdminError> {
        json::from_slice(&resp.body).map_err(|e| AdminError::Body { what: what.to_owned(), why: e.to_string() })
    }

    pub async fn cluster_info(&self) -> Result<ClusterInfo, AdminError> {
        let resp = self
            .call(&self.namesrv.clone(), RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO), "cluster info")
            .await?;
        Self::parse(&resp, "cluster info")
    }

    pub async fn topic_list(&self) -> Result<TopicList, AdminError> {
        let resp = self
            .call(
                &self.namesrv.clone(),
                RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
                "topic list",
            )
            .await?;
        Self::parse(&resp, "topic list")
    }

    pub async fn route(&self, topic: &str) -> Result<TopicRouteData, AdminError> {
        let req = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
        let resp = self.call(&self.namesrv.clone(), req, &format!("route of {topic}")).await?;
        Self::parse(&resp, "route")
    }

    /// Master addresses of a cluster, or the one broker address given.
    pub async fn masters(
        &self,
        cluster: Option<&str>,
        broker: Option<&str>,
    ) -> Result<Vec<(String, String)>, AdminError> {
        if let Some(b) = broker {
            return Ok(vec![(b.to_owned(), b.to_owned())]);
        }
        let cluster =
            cluster.ok_or_else(|| AdminError::Usage("give a cluster (-c) or a broker address (-b)".into()))?;
        let info = self.cluster_info().await?;
        let names = info
            .cluster_addr_table
            .get(cluster)
            .ok_or_else(|| AdminError::Usage(format!("no cluster named {cluster}")))?;
        Ok(names
            .iter()
            .filter_map(|n| {
                info.broker_addr_table.get(n).and_then(|d| d.master_addr().map(|a| (n.clone(), a.to_owned())))
            })
            .collect())
    }
}

/// A text table: the first row is the header; columns padded to their widest cell.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row.iter().enumerate().map(|(i, cell)| format!("{cell:<w$}", w = widths[i])).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Parses an object-keyed offset table (`{"offsetTable":{{MQ}:{…}}}`) into (MessageQueue, value).
pub fn mq_table(body: &[u8]) -> Result<Vec<(MessageQueue, serde_json::Value)>, String> {
    crate::protocol::body::admin::parse_mq_keyed(body, "offsetTable")
}

/// Decodes stored records back to back (query answers).
pub fn records(body: &[u8]) -> Vec<StoredMessage> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(m) = body.get(pos..).and_then(|b| crate::store::commit_log::record::decode(b, false)) {
        pos += m.total_size as usize;
        out.push(m);
    }
    out
}

/// The broker address and CommitLog offset an offset message id points at.
pub fn parse_msg_id(id: &str) -> Result<(String, i64), AdminError> {
    decode_offset_msg_id(id)
        .map(|(a, o)| (a.to_string(), o))
        .ok_or_else(|| AdminError::Usage(format!("'{id}' is not an offset message id")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_align() {
        let t = super::table(&[vec!["a".into(), "bb".into()], vec!["ccc".into(), "d".into()]]);
        assert_eq!(t, "a    bb\nccc  d\n");
    }
}
