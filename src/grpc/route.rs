//! QueryRoute (Java's `RouteActivity` over the proxy's local route): this broker's queues of
//! the topic, each with its permission, the broker's gRPC address as endpoints, and the message
//! types the topic accepts (its `message.type` attribute: NORMAL, FIFO, DELAY, TRANSACTION or
//! MIXED; NORMAL when unset).
//!
//! May import: `core`, `model`, `meta`, `grpc`.

use std::net::IpAddr;

use super::pb::{
    Address, AddressScheme, Broker, Code, Endpoints, MessageQueue, MessageType, Permission, QueryRouteRequest,
    QueryRouteResponse, Resource,
};
use super::status::{self, Refused};
use super::{validate, Grpc};
use crate::model::perm;

/// The topic attribute that types a topic (`TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE`).
pub const MESSAGE_TYPE_ATTRIBUTE: &str = "message.type";

pub fn query_route(g: &Grpc, req: &QueryRouteRequest) -> QueryRouteResponse {
    match route(g, req) {
        Ok(queues) => QueryRouteResponse { status: Some(status::ok()), message_queues: queues },
        Err(r) => QueryRouteResponse { status: Some(r.status()), message_queues: Vec::new() },
    }
}

fn route(g: &Grpc, req: &QueryRouteRequest) -> Result<Vec<MessageQueue>, Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let tc = g
        .core
        .topics
        .get(topic)
        .ok_or_else(|| Refused::new(Code::TopicNotFound, format!("topic {topic} not found")))?;
    let types = accepted_types(tc.attributes.get(MESSAGE_TYPE_ATTRIBUTE).map(String::as_str));
    let broker = Broker { name: g.core.config.broker_name.clone(), id: 0, endpoints: Some(g.endpoints()) };
    let resource = Resource { resource_namespace: String::new(), name: topic.to_owned() };
    // As `genMessageQueueFromQueueData`: read-only queues first, then write-only, then both.
    let (r, w, rw, n) = queue_counts(tc.perm, tc.read_queue_nums, tc.write_queue_nums);
    let perms = std::iter::repeat_n(Permission::Read, r)
        .chain(std::iter::repeat_n(Permission::Write, w))
        .chain(std::iter::repeat_n(Permission::ReadWrite, rw))
        .chain(std::iter::repeat_n(Permission::None, n));
    Ok(perms
        .enumerate()
        .map(|(id, p)| MessageQueue {
            topic: Some(resource.clone()),
            id: id as i32,
            permission: p as i32,
            broker: Some(broker.clone()),
            accept_message_types: types.clone(),
        })
        .collect())
}

fn queue_counts(p: i32, read: i32, write: i32) -> (usize, usize, usize, usize) {
    let (read, write) = (read.max(0) as usize, write.max(0) as usize);
    match (perm::is_readable(p), perm::is_writeable(p)) {
        (true, true) => {
            let rw = read.min(write);
            (read - rw, write - rw, rw, 0)
        }
        (false, true) => (0, write, 0, 0),
        (true, false) => (read, 0, 0, 0),
        (false, false) => (0, 0, 0, read.max(write).max(1)),
    }
}

/// `parseTopicMessageType`.
pub fn accepted_types(attribute: Option<&str>) -> Vec<i32> {
    let one = |t: MessageType| vec![t as i32];
    match attribute.map(str::trim) {
        Some("FIFO") => one(MessageType::Fifo),
        Some("DELAY") => one(MessageType::Delay),
        Some("TRANSACTION") => one(MessageType::Transaction),
        Some("MIXED") => [MessageType::Normal, MessageType::Fifo, MessageType::Delay, MessageType::Transaction]
            .map(|t| t as i32)
            .to_vec(),
        _ => one(MessageType::Normal),
    }
}

/// `host:port` as the v2 `Endpoints` (IPv4, IPv6 or a domain name).
pub fn endpoints(host: &str, port: u16) -> Endpoints {
    let scheme = match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => AddressScheme::IPv4,
        Ok(IpAddr::V6(_)) => AddressScheme::IPv6,
        Err(_) => AddressScheme::DomainName,
    };
    Endpoints { scheme: scheme as i32, addresses: vec![Address { host: host.to_owned(), port: i32::from(port) }] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_and_types_as_java_lists_them() {
        assert_eq!(queue_counts(perm::READ | perm::WRITE, 8, 4), (4, 0, 4, 0));
        assert_eq!(queue_counts(perm::READ | perm::WRITE, 4, 8), (0, 4, 4, 0));
        assert_eq!(queue_counts(perm::WRITE, 4, 8), (0, 8, 0, 0));
        assert_eq!(queue_counts(perm::READ, 4, 8), (4, 0, 0, 0));
        assert_eq!(queue_counts(0, 4, 8), (0, 0, 0, 8));
        assert_eq!(accepted_types(None), vec![MessageType::Normal as i32]);
        assert_eq!(accepted_types(Some("FIFO")), vec![MessageType::Fifo as i32]);
        assert_eq!(accepted_types(Some("MIXED")).len(), 4);
        assert_eq!(endpoints("127.0.0.1", 1).scheme, AddressScheme::IPv4 as i32);
        assert_eq!(endpoints("::1", 1).scheme, AddressScheme::IPv6 as i32);
        assert_eq!(endpoints("broker.example", 1).scheme, AddressScheme::DomainName as i32);
    }
}
