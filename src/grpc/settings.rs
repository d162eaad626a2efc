//! The clients this door knows (by `x-mq-client-id`) and the settings it answers them with
//! (Java's `GrpcClientSettingsManager`): a producer's merged with the proxy's defaults (3
//! attempts, 10 ms..1 s exponential backoff, `max_body_size` = `maxMessageSize`), a consumer's
//! with its group's config (max_attempts = retryMaxTimes + 1, `groupRetryPolicy` backoff,
//! fifo = consumeMessageOrderly, batch 32, long poll 20 s).
//!
//! The table is bounded ([`MAX_CLIENTS`]); a client leaves it when its Telemetry stream ends or
//! it says NotifyClientTermination.
//!
//! May import: `core`, `model`, `grpc`.

use std::collections::HashMap;
use std::sync::Mutex;

use prost_types::Duration;

use super::pb::{retry_policy, settings::PubSub, Code, CustomizedBackoff, ExponentialBackoff, RetryPolicy, Settings};
use super::status::Refused;
use crate::core::Core;
use crate::model::group::SubscriptionGroupConfig;

/// Clients known at once; a new one past it is refused (TOO_MANY_REQUESTS).
pub const MAX_CLIENTS: usize = 10_000;
/// Topics a producer may declare in its settings.
pub const MAX_PUBLISHING_TOPICS: usize = 1024;
/// `grpcClientConsumerLongPollingBatchSize`.
const RECEIVE_BATCH: i32 = 32;
/// `CustomizedRetryPolicy`'s default steps, in ms.
const DEFAULT_BACKOFF_MS: [i64; 18] = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000, 480_000, 540_000,
    600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
];

/// The sending half of a client's Telemetry stream: server commands go there.
pub type Commands = tokio::sync::mpsc::Sender<Result<super::pb::TelemetryCommand, tonic::Status>>;

/// One client: its raw settings, which Telemetry stream registered them, and that stream.
struct Client {
    settings: Settings,
    stream: u64,
    commands: Commands,
}

#[derive(Default)]
pub struct Clients {
    map: Mutex<HashMap<String, Client>>,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Client>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a client's settings from Telemetry stream `stream`, whose server commands go to
    /// `commands`.
    pub fn put(&self, id: &str, settings: Settings, stream: u64, commands: Commands) -> Result<(), Refused> {
        let mut map = self.lock();
        if !map.contains_key(id) && map.len() >= MAX_CLIENTS {
            return Err(Refused::new(Code::TooManyRequests, format!("more than {MAX_CLIENTS} clients")));
        }
        map.insert(id.to_owned(), Client { settings, stream, commands });
        Ok(())
    }

    /// Whether the client sent its Settings (without copying them).
    pub fn knows(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// A client's settings with the Telemetry stream that registered them and its sender.
    pub fn session(&self, id: &str) -> Option<(Settings, u64, Commands)> {
        self.lock().get(id).map(|c| (c.settings.clone(), c.stream, c.commands.clone()))
    }

    /// Forgets a client; with `stream`, only if that stream registered it (a reconnected
    /// client's newer stream keeps it).
    pub fn remove(&self, id: &str, stream: Option<u64>) {
        let mut map = self.lock();
        if map.get(id).is_some_and(|c| stream.is_none_or(|s| s == c.stream)) {
            map.remove(id);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

fn millis(ms: i64) -> Duration {
    Duration { seconds: ms / 1000, nanos: ((ms % 1000) * 1_000_000) as i32 }
}

/// The settings a client is answered with: its own, merged as Java merges them.
pub fn merged(core: &Core, raw: &Settings) -> Settings {
    let mut s = raw.clone();
    match &mut s.pub_sub {
        Some(PubSub::Publishing(p)) => {
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: 3,
                strategy: Some(retry_policy::Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(millis(10)),
                    max: Some(millis(1000)),
                    multiplier: 2.0,
                })),
            });
            p.validate_message_type = true;
            p.max_body_size = i32::try_from(core.live.config().max_message_size).unwrap_or(i32::MAX);
        }
        Some(PubSub::Subscription(sub)) => {
            let group = sub.group.as_ref().map_or("", |g| g.name.as_str());
            let config = core.groups.get(group).unwrap_or_else(|| SubscriptionGroupConfig::named(group));
            sub.receive_batch_size = Some(RECEIVE_BATCH);
            let max_poll = core.config.grpc_long_polling().1;
            sub.long_polling_timeout = Some(millis(i64::try_from(max_poll.as_millis()).unwrap_or(i64::MAX)));
            sub.fifo = Some(config.consume_message_orderly);
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: config.retry_max_times.saturating_add(1),
                strategy: Some(group_backoff(&config)),
            });
        }
        None => {}
    }
    s.metric = Some(super::pb::Metric { on: false, endpoints: None });
    s
}

/// `groupRetryPolicy` (kept as Java wrote it in the group's JSON): EXPONENTIAL or CUSTOMIZED
/// (the default, with `CustomizedRetryPolicy`'s steps when none are given).
fn group_backoff(config: &SubscriptionGroupConfig) -> retry_policy::Strategy {
    let policy = config.extra.get("groupRetryPolicy");
    let kind = policy.and_then(|p| p.get("type")).and_then(|t| t.as_str()).unwrap_or("CUSTOMIZED");
    if kind == "EXPONENTIAL" {
        let e = policy.and_then(|p| p.get("exponentialRetryPolicy"));
        let num = |k: &str, d: i64| e.and_then(|e| e.get(k)).and_then(serde_json::Value::as_i64).unwrap_or(d);
        return retry_policy::Strategy::ExponentialBackoff(ExponentialBackoff {
            initial: Some(millis(num("initial", 5_000))),
            max: Some(millis(num("max", 7_200_000))),
            multiplier: num("multiplier", 2) as f32,
        });
    }
    let next: Vec<i64> = policy
        .and_then(|p| p.get("customizedRetryPolicy"))
        .and_then(|c| c.get("next"))
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().take(64).filter_map(serde_json::Value::as_i64).collect())
        .unwrap_or_else(|| DEFAULT_BACKOFF_MS.to_vec());
    retry_policy::Strategy::CustomizedBackoff(CustomizedBackoff { next: next.into_iter().map(millis).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_bounded_and_a_newer_stream_keeps_its_client() {
        let c = Clients::default();
        let tx: Commands = tokio::sync::mpsc::channel(1).0;
        c.put("a", Settings::default(), 1, tx.clone()).unwrap();
        c.put("a", Settings::default(), 2, tx.clone()).unwrap();
        c.remove("a", Some(1));
        assert!(c.knows("a"));
        c.remove("a", Some(2));
        assert!(!c.knows("a"));
        for i in 0..MAX_CLIENTS {
            c.put(&i.to_string(), Settings::default(), 0, tx.clone()).unwrap();
        }
        assert_eq!(c.put("one more", Settings::default(), 0, tx.clone()).unwrap_err().code, Code::TooManyRequests);
        c.put("0", Settings::default(), 0, tx).unwrap();
        assert_eq!(c.len(), MAX_CLIENTS);
    }

    #[test]
    fn exponential_group_policy() {
        let mut g = SubscriptionGroupConfig::named("g");
        g.extra.insert(
            "groupRetryPolicy".into(),
            serde_json::json!({"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}}),
        );
        match group_backoff(&g) {
            retry_policy::Strategy::ExponentialBackoff(e) => {
                assert_eq!(e.initial, Some(millis(1000)));
                assert_eq!(e.max, Some(millis(60_000)));
                assert_eq!(e.multiplier, 3.0);
            }
            other => panic!("{other:?}"),
        }
        match group_backoff(&SubscriptionGroupConfig::named("g")) {
            retry_policy::Strategy::CustomizedBackoff(c) => assert_eq!(c.next.len(), 18),
            other => panic!("{other:?}"),
        }
    }
}
