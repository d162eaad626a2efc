//! REGISTER_BROKER body (`RegisterBrokerBody.java`), plain JSON or the compressed form.
//!
//! ```text
//! JSON        {"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{...},
//!              "topicConfigTable":{"T":{TopicConfig}}, ...5.x mapping members...}}
//! before V3_0_11 the body is the topicConfigSerializeWrapper object alone
//! compressed  zlib( dvLen:i32 dataVersionJson  topicCount:i32 *(len:i32 topicLine)
//!                   filterLen:i32 filterServerListJson
//!                   [V5_0_0+: mappingCount:i32 *(len:i32 mappingJson)] )
//! topicLine   "name readQueueNums writeQueueNums perm topicFilterType [attributesJson]"
//! ```
//!
//! May import: `model` and modules of `protocol/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use super::json;
use crate::model::{DataVersion, TopicConfig, TopicFilterType};
use crate::protocol::version::{V3_0_11, V5_0_0};

/// `TopicConfigSerializeWrapper.java` (the members the NameServer uses).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    pub data_version: DataVersion,
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// `RegisterBrokerBody.java`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    pub filter_server_list: Vec<String>,
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

/// A registration body that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RegisterBodyError {
    #[error("register body is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("compressed register body is truncated or not zlib: {0}")]
    Compressed(String),
}

/// Upper bound on one length-prefixed item inside a compressed body.
const MAX_ITEM: usize = 16 * 1024 * 1024;

impl RegisterBrokerBody {
    /// Decodes a body sent by a broker of `broker_version`.
    pub fn decode(body: &[u8], compressed: bool, broker_version: i32) -> Result<Self, RegisterBodyError> {
        if compressed {
            return decode_compressed(body, broker_version);
        }
        if broker_version < V3_0_11 && broker_version != 0 {
            let wrapper: TopicConfigSerializeWrapper = json::from_slice(body)?;
            return Ok(Self { filter_server_list: Vec::new(), topic_config_serialize_wrapper: wrapper });
        }
        Ok(json::from_slice(body)?)
    }

    /// The compressed form, as a 5.x broker with `compressedRegister=true` sends it.
    pub fn encode_compressed(&self) -> Vec<u8> {
        use flate2::write::ZlibEncoder;
        use std::io::Write;
        let mut raw = Vec::new();
        let item = |raw: &mut Vec<u8>, bytes: &[u8]| {
            raw.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            raw.extend_from_slice(bytes);
        };
        let w = &self.topic_config_serialize_wrapper;
        item(&mut raw, &serde_json::to_vec(&w.data_version).unwrap_or_default());
        raw.extend_from_slice(&(w.topic_config_table.len() as i32).to_be_bytes());
        for tc in w.topic_config_table.values() {
            item(&mut raw, topic_line(tc).as_bytes());
        }
        item(&mut raw, &serde_json::to_vec(&self.filter_server_list).unwrap_or_default());
        raw.extend_from_slice(&0i32.to_be_bytes());
        let mut enc = ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing into a Vec cannot fail.
        let _ = enc.write_all(&raw);
        enc.finish().unwrap_or_default()
    }
}

fn decode_compressed(body: &[u8], broker_version: i32) -> Result<RegisterBrokerBody, RegisterBodyError> {
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .take(64 * 1024 * 1024)
        .read_to_end(&mut raw)
        .map_err(|e| RegisterBodyError::Compressed(e.to_string()))?;
    let mut r = Reader { buf: &raw };
    let data_version: DataVersion = json::from_slice(r.item()?)?;
    let count = r.int()?;
    let mut table = BTreeMap::new();
    for _ in 0..count {
        let line = String::from_utf8_lossy(r.item()?).into_owned();
        let tc = parse_topic_line(&line)?;
        table.insert(tc.topic_name.clone(), tc);
    }
    let filter_server_list: Vec<String> = json::from_slice(r.item()?)?;
    if broker_version >= V5_0_0 && !r.buf.is_empty() {
        // Static-topic mapping info: read past it; ferrocket does not serve static topics.
        for _ in 0..r.int()? {
            r.item()?;
        }
    }
    Ok(RegisterBrokerBody {
        filter_server_list,
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper { data_version, topic_config_table: table },
    })
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn int(&mut self) -> Result<usize, RegisterBodyError> {
        let (head, rest) = self
            .buf
            .split_first_chunk::<4>()
            .ok_or_else(|| RegisterBodyError::Compressed("truncated length".into()))?;
        self.buf = rest;
        let n = i32::from_be_bytes(*head);
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= MAX_ITEM)
            .ok_or_else(|| RegisterBodyError::Compressed(format!("bad length {n}")))
    }

    fn item(&mut self) -> Result<&'a [u8], RegisterBodyError> {
        let n = self.int()?;
        if n > self.buf.len() {
            return Err(RegisterBodyError::Compressed(format!("item of {n} bytes past the end")));
        }
        let (item, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(item)
    }
}

/// `TopicConfig.encode`.
fn topic_line(tc: &TopicConfig) -> String {
    let mut s = format!(
        "{} {} {} {} {}",
        tc.topic_name,
        tc.read_queue_nums,
        tc.write_queue_nums,
        tc.perm,
        tc.topic_filter_type.name()
    );
    if !tc.attributes.is_empty() {
        s.push(' ');
        s.push_str(&serde_json::to_string(&tc.attributes).unwrap_or_default());
    }
    s
}

/// `TopicConfig.decode`: `topicSysFlag` and `order` do not travel in this form.
fn parse_topic_line(line: &str) -> Result<TopicConfig, RegisterBodyError> {
    let bad = || RegisterBodyError::Compressed(format!("bad topic line '{line}'"));
    let mut parts = line.splitn(6, ' ');
    let mut next = || parts.next().ok_or_else(bad);
    let topic_name = next()?.to_owned();
    let read_queue_nums = next()?.parse().map_err(|_| bad())?;
    let write_queue_nums = next()?.parse().map_err(|_| bad())?;
    let perm = next()?.parse().map_err(|_| bad())?;
    let topic_filter_type = TopicFilterType::parse(next()?).ok_or_else(bad)?;
    let attributes = match parts.next() {
        Some(text) if !text.trim().is_empty() => json::from_slice(text.as_bytes())?,
        _ => BTreeMap::new(),
    };
    Ok(TopicConfig {
        topic_name,
        read_queue_nums,
        write_queue_nums,
        perm,
        topic_filter_type,
        topic_sys_flag: 0,
        order: false,
        attributes,
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegisterBrokerBody {
        let mut table = BTreeMap::new();
        for name in ["TopicTest", "TBW102"] {
            table.insert(
                name.to_string(),
                TopicConfig { topic_name: name.into(), read_queue_nums: 4, write_queue_nums: 4, ..Default::default() },
            );
        }
        RegisterBrokerBody {
            filter_server_list: vec![],
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                data_version: DataVersion { counter: 12, state_version: 0, timestamp: 1_700_000_000_000 },
                topic_config_table: table,
            },
        }
    }

    #[test]
    fn decodes_java_json_body() {
        let text = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":12,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
        let body = RegisterBrokerBody::decode(text, false, 479).unwrap();
        let w = &body.topic_config_serialize_wrapper;
        assert_eq!(w.data_version.counter, 12);
        assert_eq!(w.topic_config_table["TopicTest"].write_queue_nums, 4);
    }

    #[test]
    fn compressed_round_trip() {
        let enc = sample().encode_compressed();
        assert_eq!(RegisterBrokerBody::decode(&enc, true, 479).unwrap(), sample());
    }

    #[test]
    fn truncated_compressed_body_is_an_error() {
        let enc = sample().encode_compressed();
        for n in [0, 1, enc.len() / 2, enc.len() - 1] {
            assert!(RegisterBrokerBody::decode(&enc[..n], true, 479).is_err(), "{n}");
        }
    }

    #[test]
    fn old_brokers_send_the_wrapper_alone() {
        let text = br#"{"dataVersion":{"counter":1,"timestamp":5},"topicConfigTable":{}}"#;
        let body = RegisterBrokerBody::decode(text, false, 30).unwrap();
        assert_eq!(body.topic_config_serialize_wrapper.data_version.counter, 1);
    }
}
