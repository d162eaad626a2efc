//! Delay levels (`ScheduleMessageService`): a message with `DELAY=n` is stored in
//! `SCHEDULE_TOPIC_XXXX` queue n-1 (its real topic and queue kept in `REAL_TOPIC`/`REAL_QID`);
//! the store gives its ConsumeQueue unit the delivery time as tag code; this service moves it
//! to its real topic when due. Progress per level survives restarts in `config/delayOffset.json`.
//! A due message the store refuses (disk full) holds up its level until the store takes it,
//! logged once per stall; one the store can never take (larger than `maxMessageSize` since a
//! restart, ...) is dropped with a warning rather than holding up its level for ever; a flush
//! timeout counts as delivered (the message is stored: a retry would deliver it twice).
//!
//! ```text
//! delayOffset.json  {"offsetTable":{1:0,2:15,...},"dataVersion":{…}}   (level -> next queue offset)
//! ```
//!
//! May import: `model`, `persist`, `protocol`, `store` and modules of `broker/`; the area's rule is
//! its line in docs/architecture.md.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::config::BrokerConfig;
use super::BrokerInner;
use crate::model::message::{self, property, MessageToStore};
use crate::model::DataVersion;
use crate::persist::ConfigFile;
use crate::store::{AcceptAll, GetMessageStatus, PutStatus, SCHEDULE_TOPIC};

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct DelayOffsetsFile {
    offset_table: BTreeMap<i32, i64>,
    data_version: DataVersion,
    /// Members ferrocket does not model, written back as read.
    #[serde(flatten)]
    extra: crate::model::Extra,
}

pub struct ScheduleService {
    /// Deliveries of due messages the store refused (each is tried again until stored).
    pub refused_puts: std::sync::atomic::AtomicU64,
    levels: Vec<i64>,
    /// Levels whose next due message the store refused.
    stalled: Mutex<std::collections::BTreeSet<i32>>,
    offsets: Arc<Mutex<BTreeMap<i32, i64>>>,
    file: Arc<ConfigFile>,
}

impl ScheduleService {
    pub fn load(config: &BrokerConfig) -> Result<Self, String> {
        let path = config.config_dir().join("delayOffset.json");
        let parse =
            |b: &[u8]| crate::protocol::body::json::from_slice::<DelayOffsetsFile>(b).map_err(|e| e.to_string());
        let file = crate::persist::load(&path, parse)?.unwrap_or_default();
        let offsets = Arc::new(Mutex::new(file.offset_table));
        let source = offsets.clone();
        let (loaded_version, extra) = (file.data_version, file.extra);
        let snapshot = move || {
            let file = DelayOffsetsFile {
                offset_table: source.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                data_version: DataVersion { timestamp: crate::store::now_ms(), ..loaded_version.clone() },
                extra: extra.clone(),
            };
            serde_json::to_vec_pretty(&file).unwrap_or_default()
        };
        Ok(Self {
            refused_puts: 0.into(),
            levels: config.delay_levels()?,
            stalled: Mutex::default(),
            offsets,
            file: ConfigFile::new(path, Box::new(snapshot)),
        })
    }

    pub fn max_level(&self) -> i32 {
        self.levels.len() as i32
    }

    /// Diverts a message with `DELAY > 0` to the schedule topic (`handleScheduleMessage`).
    pub fn divert(&self, msg: &mut MessageToStore) {
        let Some(level) = message::property_value(&msg.properties, property::DELAY).and_then(|d| d.parse::<i32>().ok())
        else {
            return;
        };
        if level <= 0 || msg.topic == SCHEDULE_TOPIC {
            return;
        }
        let level = level.min(self.max_level());
        let mut props = message::parse_properties(&msg.properties);
        props.insert(property::DELAY.to_owned(), level.to_string());
        props.insert(property::REAL_TOPIC.to_owned(), msg.topic.clone());
        props.insert(property::REAL_QID.to_owned(), msg.queue_id.to_string());
        msg.properties = message::map_to_properties(&props);
        msg.topic = SCHEDULE_TOPIC.to_owned();
        msg.queue_id = level - 1;
    }

    fn offset(&self, level: i32) -> i64 {
        self.offsets.lock().unwrap_or_else(|e| e.into_inner()).get(&level).copied().unwrap_or(0)
    }

    fn set_offset(&self, level: i32, offset: i64) {
        self.offsets.lock().unwrap_or_else(|e| e.into_inner()).insert(level, offset);
    }

    /// The store refused a due message of `level`: counted, logged when the level starts waiting.
    fn refused(&self, level: i32, status: &PutStatus) {
        self.refused_puts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.stalled.lock().unwrap_or_else(|e| e.into_inner()).insert(level) {
            warn!(level, ?status, "the store refuses a due delayed message; its level waits until it takes writes");
        }
    }

    /// A due message of `level` was stored.
    fn delivered(&self, level: i32) {
        if self.stalled.lock().unwrap_or_else(|e| e.into_inner()).remove(&level) {
            tracing::info!(level, "the store takes writes again; delayed delivery resumed");
        }
    }

    /// Level -> next offset to deliver (GET_ALL_DELAY_OFFSET).
    pub fn offsets(&self) -> BTreeMap<i32, i64> {
        self.offsets.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `delayOffset.json` text (GET_ALL_DELAY_OFFSET).
    pub fn to_json(&self) -> Vec<u8> {
        let file = DelayOffsetsFile {
            offset_table: self.offsets(),
            data_version: DataVersion::default(),
            extra: crate::model::Extra::new(),
        };
        serde_json::to_vec(&file).unwrap_or_default()
    }

    /// Slave: takes the master's delay offsets.
    pub async fn replace_json(&self, body: &[u8]) -> Result<(), String> {
        let file: DelayOffsetsFile =
            crate::protocol::body::json::from_slice(body).map_err(|e| format!("delay offsets: {e}"))?;
        *self.offsets.lock().unwrap_or_else(|e| e.into_inner()) = file.offset_table;
        self.persist().await.map_err(|e| e.to_string())
    }

    /// Returns once `delayOffset.json` holds the progress made so far.
    pub async fn persist(&self) -> std::io::Result<()> {
        self.file.persist().await
    }
}

/// Delivers due messages every 100 ms until `shutdown`; persists progress every 10 s.
pub async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    let mut ticks = 0u32;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {},
        }
        for level in 1..=inner.schedule.max_level() {
            deliver_due(&inner, level).await;
        }
        ticks += 1;
        if ticks.is_multiple_of(100) {
            // A failed write is logged by the writer.
            let _ = inner.schedule.persist().await;
        }
    }
    let _ = inner.schedule.persist().await;
}

/// Moves the due messages of one level to their real topics, in order; stops at the first that
/// is not due yet (units of one level are in delivery order).
async fn deliver_due(inner: &BrokerInner, level: i32) {
    let queue = level - 1;
    let mut offset = inner.schedule.offset(level).max(inner.store.min_offset_in_queue(SCHEDULE_TOPIC, queue));
    loop {
        let r = inner.store.get_message(SCHEDULE_TOPIC, queue, offset, 32, usize::MAX, &AcceptAll);
        if r.status != GetMessageStatus::Found {
            if r.next_begin_offset > offset && r.status != GetMessageStatus::OffsetOverflowOne {
                inner.schedule.set_offset(level, r.next_begin_offset);
            }
            return;
        }
        let now = crate::store::now_ms();
        for rec in &r.messages {
            let Some(m) = crate::store::commit_log::record::decode(rec, false) else {
                warn!(level, offset, "unreadable scheduled message skipped");
                offset += 1;
                continue;
            };
            let due = inner.store.message_tags_code(SCHEDULE_TOPIC, queue, m.queue_offset).unwrap_or(0);
            if due > now {
                inner.schedule.set_offset(level, m.queue_offset);
                return;
            }
            let Some(real) = restore(&m) else {
                warn!(level, offset = m.queue_offset, "scheduled message without a legal REAL_TOPIC dropped");
                offset = m.queue_offset + 1;
                continue;
            };
            let put = inner.store.put_messages(std::slice::from_ref(&real), true).await;
            match &put.status {
                PutStatus::PutOk | PutStatus::FlushDiskTimeout => {
                    inner.schedule.delivered(level);
                    inner.count_delivery(&real, &put);
                }
                PutStatus::MessageIllegal(_) | PutStatus::PropertiesSizeExceeded => {
                    warn!(level, offset = m.queue_offset, status = ?put.status, "delayed message cannot be stored on its real topic; dropped");
                }
                status => {
                    inner.schedule.refused(level, status);
                    inner.schedule.set_offset(level, m.queue_offset);
                    return;
                }
            }
            offset = m.queue_offset + 1;
        }
        inner.schedule.set_offset(level, offset);
    }
}

/// The message as it goes back to its real topic and queue, without DELAY (`messageTimeup`);
/// `None` without a real topic the store could hold (the send that delayed it checked it, so
/// only a record shipped by a master or written by another build lacks one).
fn restore(m: &message::StoredMessage) -> Option<MessageToStore> {
    let mut props = message::parse_properties(&m.properties);
    let topic = props.get(property::REAL_TOPIC).filter(|t| crate::model::name::is_path_component(t))?.clone();
    let queue_id = props.get(property::REAL_QID).and_then(|q| q.parse().ok()).filter(|q: &i32| *q >= 0).unwrap_or(0);
    props.remove(property::DELAY);
    let properties = message::map_to_properties(&props);
    Some(m.to_store(topic, queue_id, properties))
}
