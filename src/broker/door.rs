//! The gRPC door's clients in the broker's ProducerManager and ConsumerManager, as Java's proxy
//! registers them in local mode (`ClientActivity.registerProducer` / `registerConsumer`): a
//! producer in the group of each topic it publishes to that the broker has (a gRPC producer's
//! group is its topic), a consumer in its group as CLUSTERING, CONSUME_FROM_LAST_OFFSET,
//! CONSUME_ACTIVELY (simple) or CONSUME_PASSIVELY (push), with its subscriptions. So mqadmin's `producerConnection`,
//! `consumerConnection` and `consumerProgress` list them, and the transaction check service
//! asks their producers (`client::DoorClient`). Their heartbeats (every 10 s from the SDKs) keep
//! them, and expire them as any client's; the end of their Telemetry stream or
//! NotifyClientTermination removes them ([`gone`]). They are not told of membership changes
//! (a gRPC client does not rebalance).
//!
//! May import: `broker`, `core` (the session's shapes), `protocol` (the client data shapes).

use std::sync::Arc;
use std::time::Instant;

use tracing::info;

use super::client::{ClientChannel, Link, DOOR_LINK_IDS};
use super::BrokerInner;
use crate::core::door::{DoorRole, DoorSession};
use crate::protocol::body::client::{ConsumerData, SubscriptionData};
use crate::protocol::command::CURRENT_VERSION;
use crate::protocol::LanguageCode;

/// Records a heartbeat of a door's client.
pub async fn heartbeat(b: &Arc<BrokerInner>, s: DoorSession, role: DoorRole) {
    let language = match s.language.as_str() {
        "GOLANG" => LanguageCode::GO,
        other => LanguageCode::from_name(other),
    };
    let channel = ClientChannel {
        link: Link::Door { id: DOOR_LINK_IDS | s.session, peer: s.peer, client: s.client },
        client_id: s.client_id,
        language,
        // Java's proxy reports its own version for a version string it cannot map.
        version: CURRENT_VERSION,
        last_update: Instant::now(),
    };
    match role {
        DoorRole::Producer { topics } => {
            // Only topics this broker has: a client's settings may name up to 1024 of any
            // name, and the table must not grow with names (Java registers every one).
            for topic in topics.iter().filter(|t| b.topics.get(t).is_some()) {
                b.producers.register(topic, channel.clone());
            }
        }
        DoorRole::Consumer { group, push, subscriptions } => {
            let now = crate::store::now_ms();
            let data = ConsumerData {
                group_name: group,
                consume_type: if push { "CONSUME_PASSIVELY" } else { "CONSUME_ACTIVELY" }.to_owned(),
                message_model: "CLUSTERING".to_owned(),
                consume_from_where: "CONSUME_FROM_LAST_OFFSET".to_owned(),
                subscription_data_set: subscriptions
                    .iter()
                    .map(|(topic, expression, kind)| {
                        let mut sub = SubscriptionData::build(topic, expression, Some(kind));
                        sub.sub_version = now;
                        sub
                    })
                    .collect(),
                unit_mode: false,
            };
            if b.consumers.register(&data, channel.clone(), 0) {
                info!(group = data.group_name, client = channel.client_id, peer = %channel.link.peer(), "gRPC consumer joined");
                b.notify_consumer_ids_changed(&data.group_name).await;
            }
        }
    }
}

/// A door's client session ended: it leaves every group.
pub async fn gone(b: &Arc<BrokerInner>, session: u64) {
    let id = DOOR_LINK_IDS | session;
    b.producers.connection_closed(id);
    for group in b.consumers.connection_closed(id) {
        info!(group, "gRPC consumer left");
        b.notify_consumer_ids_changed(&group).await;
    }
}
