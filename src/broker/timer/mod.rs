//! Timer messages (5.x `TimerMessageStore` with `HookUtils.handleScheduleMessage`): a message
//! with `TIMER_DELAY_SEC`, `TIMER_DELAY_MS` or `TIMER_DELIVER_MS` is stored on
//! `rmq_sys_wheel_timer` queue 0 (real topic and queue in `REAL_TOPIC`/`REAL_QID`, slot time in
//! `TIMER_OUT_MS`); the service ([`engine`]) enters it into the persistent wheel
//! (`store::timer`) and puts it back on its real topic when due.
//!
//! ```text
//! send ──divert──> rmq_sys_wheel_timer/0 ──engine: enqueue──> timerlog + timerwheel
//!                                          engine: slot due ──> real topic/queue (new record)
//! ```
//! A requested time d fires at the first precision boundary at or after d (never early): the
//! slot is `floor(d/p)*p` (one step less when d is a multiple of p) and a slot T is read once
//! the clock passes T + p.
//!
//! May import: `broker` (config, inner), `model`, `protocol` (response codes), `store`.

pub mod engine;

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use tokio::sync::Notify;

use super::config::BrokerConfig;
use crate::model::group::RETRY_GROUP_TOPIC_PREFIX;
use crate::model::message::{self, property, MessageToStore};
use crate::protocol::ResponseCode;
use crate::store::timer::{TimerFiles, TimerProgress};
use crate::store::StoreError;

/// The properties that make a message a timer message (`checkIfTimerMessage`).
pub const TIMER_PROPERTIES: [&str; 3] =
    [property::TIMER_DELAY_SEC, property::TIMER_DELAY_MS, property::TIMER_DELIVER_MS];

pub use crate::model::TIMER_TOPIC;

/// Why a timer message was refused: the response code and remark Java gives.
pub type Refusal = (ResponseCode, String);

pub struct TimerService {
    pub enabled: bool,
    pub precision_ms: i64,
    max_delay_ms: i64,
    pub roll_window_slots: i64,
    congest_per_slot: i64,
    pub flush_interval_ms: u64,
    /// The wheel and log; `None` when the wheel is disabled or on a slave.
    pub files: Option<Mutex<TimerFiles>>,
    /// Rung when a message lands on the timer topic.
    pub arrived: Arc<Notify>,
    /// The engine's progress (where recovery left off until it starts), for `brokerStatus`: the
    /// next slot to deliver (0: a fresh store) and the next timer topic offset to enter into the
    /// wheel.
    pub read_time_ms: std::sync::atomic::AtomicI64,
    pub queue_offset: std::sync::atomic::AtomicI64,
    /// Deliveries of due timers the store refused (each is tried again until stored).
    pub refused_puts: std::sync::atomic::AtomicU64,
}

impl TimerService {
    /// Opens the timer files (masters with `timerWheelEnable`).
    pub fn open(config: &BrokerConfig) -> Result<Self, StoreError> {
        let precision_ms = config.timer_precision();
        let mut recovered = TimerProgress { read_time_ms: 0, queue_offset: 0 };
        let files = if config.timer_wheel_enable && !config.is_slave() {
            let (files, progress) =
                TimerFiles::open(&config.store_path_root_dir, precision_ms, config.mapped_file_size_timer_log)?;
            recovered = progress;
            Some(Mutex::new(files))
        } else {
            None
        };
        // `TimerMessageStore`: a window outside [2, 604740] slots is reset to the largest.
        let window = config.timer_roll_window_slot;
        let roll_window_slots = if !(2..=604_740).contains(&window) { 604_740 } else { window };
        Ok(Self {
            enabled: config.timer_wheel_enable,
            precision_ms,
            max_delay_ms: config.timer_max_delay_sec.saturating_mul(1000),
            roll_window_slots,
            congest_per_slot: config.timer_congest_num_each_slot,
            flush_interval_ms: config.timer_flush_interval_ms.max(10),
            files,
            arrived: Arc::new(Notify::new()),
            read_time_ms: recovered.read_time_ms.into(),
            queue_offset: recovered.queue_offset.into(),
            refused_puts: 0.into(),
        })
    }

    /// `checkIfTimerMessage` + `transformTimerMessage`, on a message about to be stored (a send
    /// or a committed transaction): a timer message goes to the timer topic; a delay level wins
    /// over timer properties (which are dropped); a time not in the future is delivered at once.
    pub fn divert(&self, msg: &mut MessageToStore) -> Result<(), Refusal> {
        if !message::has_any_property(&msg.properties, &TIMER_PROPERTIES) {
            return Ok(());
        }
        let mut props = message::parse_properties(&msg.properties);
        if props.get(property::DELAY).and_then(|d| d.parse::<i32>().ok()).is_some_and(|l| l > 0) {
            for k in TIMER_PROPERTIES {
                props.remove(k);
            }
            msg.properties = message::map_to_properties(&props);
            return Ok(());
        }
        if msg.topic == TIMER_TOPIC || props.contains_key(property::TIMER_OUT_MS) {
            return Ok(());
        }
        if !self.enabled {
            return Err((
                ResponseCode::SYSTEM_ERROR,
                "accurate timer message is not enabled, timerWheelEnable is false".into(),
            ));
        }
        let illegal = || {
            (
                ResponseCode::MESSAGE_ILLEGAL,
                format!(
                    "timer message illegal, the delay time should not be bigger than the max delay {}ms; or if set del msg, the delay time should be bigger than the current time",
                    self.max_delay_ms
                ),
            )
        };
        let now = crate::store::now_ms();
        // Java's order of precedence, and `Long.parseLong` (Rust's parse takes the same forms).
        let deliver_ms = if let Some(v) = props.get(property::TIMER_DELAY_SEC) {
            now.wrapping_add(v.parse::<i64>().map_err(|_| illegal())?.wrapping_mul(1000))
        } else if let Some(v) = props.get(property::TIMER_DELAY_MS) {
            now.wrapping_add(v.parse::<i64>().map_err(|_| illegal())?)
        } else {
            props.get(property::TIMER_DELIVER_MS).and_then(|v| v.parse::<i64>().ok()).ok_or_else(illegal)?
        };
        if deliver_ms <= now {
            return if props.contains_key(property::TIMER_DEL_UNIQKEY) { Err(illegal()) } else { Ok(()) };
        }
        if deliver_ms - crate::store::now_ms() > self.max_delay_ms {
            return Err(illegal());
        }
        let p = self.precision_ms;
        let slot = if deliver_ms % p == 0 { deliver_ms - p } else { deliver_ms / p * p };
        if self.is_congested(slot) {
            let c = self.congest_per_slot;
            return Err((
                ResponseCode::SYSTEM_ERROR,
                format!(
                    "timer message is under flow control, max num limit is {} or the current value is greater than {} and less than {}, trigger random flow control",
                    c * 2,
                    c,
                    c * 2
                ),
            ));
        }
        props.insert(property::TIMER_OUT_MS.to_owned(), slot.to_string());
        props.insert(property::REAL_TOPIC.to_owned(), std::mem::take(&mut msg.topic));
        props.insert(property::REAL_QID.to_owned(), msg.queue_id.to_string());
        msg.properties = message::map_to_properties(&props);
        msg.topic = TIMER_TOPIC.to_owned();
        msg.queue_id = 0;
        Ok(())
    }

    /// `isReject`: flow control per slot when `timerCongestNumEachSlot` is set (off by default):
    /// up to C timers are taken, from 2C none, in between at random in proportion.
    fn is_congested(&self, slot: i64) -> bool {
        let c = self.congest_per_slot;
        let Some(files) = self.files.as_ref().filter(|_| c < i64::from(i32::MAX)) else { return false };
        let n = i64::from(files.lock().unwrap_or_else(|e| e.into_inner()).slot_count(slot));
        if n <= c {
            return false;
        }
        if n >= 2 * c {
            return true;
        }
        use std::hash::{BuildHasher, Hasher};
        let roll = (std::collections::hash_map::RandomState::new().build_hasher().finish() % 1000) as f64;
        roll > 1000.0 * (n - c) as f64 / (c as f64 + 0.1)
    }

    /// GET_TIMER_CHECK_POINT's body (`None` without a timer store, as on a slave).
    pub fn checkpoint(&self) -> Option<Vec<u8>> {
        Some(self.files.as_ref()?.lock().unwrap_or_else(|e| e.into_inner()).checkpoint_bytes())
    }

    /// `timerReadBehind` (seconds) and `timerOffsetBehind` (messages) of GET_BROKER_RUNTIME_INFO.
    pub fn behind(&self, timer_queue_max: i64) -> Option<(i64, i64)> {
        self.files.as_ref()?;
        let read = self.read_time_ms.load(std::sync::atomic::Ordering::Relaxed);
        let read_behind = if read == 0 { 0 } else { (crate::store::now_ms() - read).max(0) / 1000 };
        let offset = self.queue_offset.load(std::sync::atomic::Ordering::Relaxed);
        Some((read_behind, (timer_queue_max - offset).max(0)))
    }
}

/// `attachRecallHandle`: the handle a 5.x producer may use to recall a timer message, for a
/// single send of a timer message to a topic other than a retry topic.
pub fn recall_handle(stored: &MessageToStore, broker_name: &str) -> Option<String> {
    let props = &stored.properties;
    let out = message::property_value(props, property::TIMER_OUT_MS)?.parse::<i64>().ok()?;
    let topic = message::property_value(props, property::REAL_TOPIC)?;
    if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return None;
    }
    let uniq = message::property_value(props, property::UNIQ_KEY).unwrap_or("");
    let raw = format!("v1 {topic} {broker_name} {} {uniq}", out + 1);
    Some(base64::engine::general_purpose::URL_SAFE.encode(raw))
}

#[cfg(test)]
mod tests;
