//! Broker metadata shared by both front ends (the RocketMQ handlers in `broker`, the Kafka
//! handlers in `kafka`): the broker config (`broker.conf`), topics, subscription groups,
//! committed consumer offsets, and the per-queue arrival signals long polls wait on.
//!
//! May import: `model`, `store`, `persist`, `telemetry`, `properties`, `config` (typed config
//! keys, a leaf). Never a wire codec (`protocol`, `kafka-protocol`) nor a front
//! end. Rules: docs/architecture.md.
//!
//! ```text
//! <root>/config/topics.json, subscriptionGroup.json, consumerOffset.json   (written atomically)
//! store dispatcher --arrival--> hold::PullHold --wakes--> RocketMQ pulls, Kafka fetches
//! ```

pub mod config;
pub mod hold;
pub mod live;
pub mod names;
pub mod offset;
pub mod subscription;
pub mod topic;
