//! Broker settings that admin may change while the broker runs (UPDATE_BROKER_CONFIG), read by
//! both front ends.
//!
//! May import: nothing outside `meta/` (the area's rule: docs/architecture.md).

use super::config::BrokerConfig;

/// Broker settings that admin may change while the broker runs (UPDATE_BROKER_CONFIG).
pub struct LiveConfig {
    broker_permission: std::sync::atomic::AtomicI32,
    auto_create_topic_enable: std::sync::atomic::AtomicBool,
}

impl LiveConfig {
    pub fn new(c: &BrokerConfig) -> Self {
        Self {
            broker_permission: c.broker_permission.into(),
            auto_create_topic_enable: c.auto_create_topic_enable.into(),
        }
    }

    pub fn broker_permission(&self) -> i32 {
        self.broker_permission.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn auto_create_topic_enable(&self) -> bool {
        self.auto_create_topic_enable.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn set_broker_permission(&self, v: i32) {
        self.broker_permission.store(v, std::sync::atomic::Ordering::Release);
    }

    pub fn set_auto_create_topic_enable(&self, v: bool) {
        self.auto_create_topic_enable.store(v, std::sync::atomic::Ordering::Release);
    }
}
