//! `ferrocket store dump` / `ferrocket store load`.
//!
//! ```text
//! one JSON object per line:
//! {"topic":"T","queueId":0,"queueOffset":0,"commitLogOffset":0,"storeTimestamp":…,"bornTimestamp":…,
//!  "bornHost":"ip:port","storeHost":"ip:port","flag":0,"sysFlag":0,"reconsumeTimes":0,
//!  "preparedTransactionOffset":0,"bodyHex":"…","properties":{"TAGS":"A",…}}
//! load reads the same shape (offsets and store time are assigned by the store); "batch":[…]
//! holds several messages appended as one batch.
//! ```
//!
//! May import: `model`, `store` and modules of `tools/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::net::SocketAddr;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::model::message::{self, MessageToStore, StoredMessage};
use crate::store::{AcceptAll, GetMessageStatus, MessageStore, StoreError};

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageLine {
    pub topic: String,
    pub queue_id: i32,
    #[serde(default)]
    pub queue_offset: i64,
    #[serde(default)]
    pub commit_log_offset: i64,
    #[serde(default)]
    pub store_timestamp: i64,
    #[serde(default)]
    pub born_timestamp: i64,
    #[serde(default = "default_host")]
    pub born_host: String,
    #[serde(default = "default_host")]
    pub store_host: String,
    #[serde(default)]
    pub flag: i32,
    #[serde(default)]
    pub sys_flag: i32,
    #[serde(default)]
    pub reconsume_times: i32,
    #[serde(default)]
    pub prepared_transaction_offset: i64,
    #[serde(default)]
    pub body_hex: String,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

fn default_host() -> String {
    "127.0.0.1:10911".into()
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LoadLine {
    Batch { batch: Vec<MessageLine> },
    One(MessageLine),
}

/// A problem with the tool's input or the store.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("line {line}: {why}")]
    Input { line: usize, why: String },
    #[error("line {line}: the store refused the message: {status}")]
    Refused { line: usize, status: String },
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

impl MessageLine {
    fn from_stored(m: &StoredMessage) -> Self {
        Self {
            topic: m.topic.clone(),
            queue_id: m.queue_id,
            queue_offset: m.queue_offset,
            commit_log_offset: m.commit_log_offset,
            store_timestamp: m.store_timestamp,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host.to_string(),
            store_host: m.store_host.to_string(),
            flag: m.flag,
            sys_flag: m.sys_flag,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
            body_hex: hex(&m.body),
            properties: message::parse_properties(&m.properties),
        }
    }

    fn to_message(&self) -> Result<MessageToStore, String> {
        let host = |s: &str| s.parse::<SocketAddr>().map_err(|e| format!("bad host '{s}': {e}"));
        let props: Vec<(&str, &str)> = self.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Ok(MessageToStore {
            topic: self.topic.clone(),
            queue_id: self.queue_id,
            flag: self.flag,
            body: Bytes::from(unhex(&self.body_hex).ok_or("bodyHex is not hex")?),
            tags_code: message::tags_code(self.properties.get(message::property::TAGS).map(String::as_str)),
            properties: message::properties_to_string(props),
            born_timestamp: self.born_timestamp,
            born_host: host(&self.born_host)?,
            store_host: host(&self.store_host)?,
            sys_flag: self.sys_flag,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
        })
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// Writes every message of every ConsumeQueue, queue by queue in offset order.
pub fn dump(store: &MessageStore, out: &mut impl Write) -> Result<usize, ToolError> {
    let mut n = 0;
    for (topic, queue_id) in store.queue_ids() {
        let mut offset = store.min_offset_in_queue(&topic, queue_id);
        loop {
            let r = store.get_message(&topic, queue_id, offset, 32, 64 << 20, &AcceptAll);
            if r.status != GetMessageStatus::Found {
                break;
            }
            for rec in &r.messages {
                if let Some(m) = crate::store::commit_log::record::decode(rec, false) {
                    serde_json::to_writer(&mut *out, &MessageLine::from_stored(&m)).map_err(std::io::Error::other)?;
                    out.write_all(b"\n")?;
                    n += 1;
                }
            }
            offset = r.next_begin_offset;
        }
    }
    Ok(n)
}

/// Appends every line of `input`, writing each stored message (with its offsets) to `out`.
pub async fn load(store: &MessageStore, input: impl BufRead, out: &mut impl Write) -> Result<usize, ToolError> {
    let mut n = 0;
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| ToolError::Input { line: i + 1, why };
        let parsed: LoadLine = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let lines = match parsed {
            LoadLine::Batch { batch } => batch,
            LoadLine::One(m) => vec![m],
        };
        let msgs = lines.iter().map(MessageLine::to_message).collect::<Result<Vec<_>, _>>().map_err(bad)?;
        let r = store.put_messages(&msgs, true).await;
        let Some(append) = r.append.filter(|_| r.status == crate::store::PutStatus::PutOk) else {
            return Err(ToolError::Refused { line: i + 1, status: format!("{:?}", r.status) });
        };
        for off in append.offsets {
            if let Some(m) = store.lookup_message(off) {
                serde_json::to_writer(&mut *out, &MessageLine::from_stored(&m)).map_err(std::io::Error::other)?;
                out.write_all(b"\n")?;
                n += 1;
            }
        }
    }
    Ok(n)
}
