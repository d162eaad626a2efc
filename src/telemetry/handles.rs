//! The metrics recorded on hot paths (every send, pull and request), through handles cached per
//! thread: after the first message of a topic on a thread, recording is a hash lookup and a few
//! atomic adds, with no lock and no allocation (registering a label set allocates and locks, so
//! it happens once per thread, node and label set). The label set a thread used last is kept
//! beside the maps: a stream of sends to one topic compares a name instead of hashing it.
//!
//! May import: nothing outside `telemetry/` (the area's rule: docs/architecture.md).

use std::cell::RefCell;
use std::collections::HashMap;

use metrics::{Counter, Histogram, Label};

use super::{names, Node};

/// Java's `TopicMessageType` as a metrics label (`getMetricsValue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageType {
    Normal,
    Fifo,
    Delay,
    Transaction,
}

impl MessageType {
    fn label(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Fifo => "fifo",
            Self::Delay => "delay",
            Self::Transaction => "transaction",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The door traffic came through: the `protocol` label of the message metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Remoting,
    Kafka,
    /// The 5.x SDKs' `apache.rocketmq.v2.MessagingService` (`grpcListenPort`).
    Grpc,
}

impl Protocol {
    pub fn label(self) -> &'static str {
        match self {
            Self::Remoting => "remoting",
            Self::Kafka => "kafka",
            Self::Grpc => "grpc",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone)]
struct In {
    messages: Counter,
    bytes: Counter,
    size: Histogram,
}

/// The handles a thread used last for `messages_in`, with their key.
struct LastIn {
    node: u64,
    protocol: Protocol,
    topic: Box<str>,
    kind: MessageType,
    h: In,
}

/// The handle a thread used last for `rpc_latency`, with its key.
struct LastRpc {
    node: u64,
    key: RpcKey,
    h: Histogram,
}

struct Out {
    messages: Counter,
    bytes: Counter,
}

/// Per node id: topic -> one slot per protocol and message type.
type InCache = HashMap<u64, HashMap<Box<str>, [Option<In>; 12]>>;
/// Per node id and protocol: topic -> consumer group.
type OutCache = HashMap<(u64, Protocol), HashMap<Box<str>, HashMap<Box<str>, Out>>>;
/// (protocol, request code, response code, long polling, oneway); `None` for a code the caller
/// does not know.
type RpcKey = (Protocol, Option<i32>, Option<i32>, bool, bool);
/// Per node id: one handle per key.
type RpcCache = HashMap<u64, HashMap<RpcKey, Histogram>>;

thread_local! {
    static IN: RefCell<InCache> = RefCell::default();
    static OUT: RefCell<OutCache> = RefCell::default();
    static RPC: RefCell<RpcCache> = RefCell::default();
    static LAST_IN: RefCell<Option<LastIn>> = const { RefCell::new(None) };
    static LAST_RPC: RefCell<Option<LastRpc>> = const { RefCell::new(None) };
}

/// The value under `key`, made by `make` the first time: looked up by `&str`, so a known key
/// costs no allocation (`entry` would need an owned key every time).
fn slot<'a, V>(map: &'a mut HashMap<Box<str>, V>, key: &str, make: impl FnOnce() -> V) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.into(), make());
    }
    map.get_mut(key).expect("inserted above")
}

/// A code's label value: the number, or `unknown`.
fn code_label(code: Option<i32>) -> String {
    code.map_or_else(|| "unknown".to_owned(), |c| c.to_string())
}

fn bool_str(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// A send or produce stored `count` messages of `bytes` stored bytes in `topic`
/// (`rocketmq_messages_in_total`, `rocketmq_throughput_in_total`, `rocketmq_message_size`, with
/// Java's labels and `protocol`: `remoting` or `kafka`).
pub fn messages_in(
    node: &Node,
    protocol: Protocol,
    topic: &str,
    kind: MessageType,
    is_system: bool,
    count: u64,
    bytes: u64,
) {
    if count == 0 || super::handle().is_none() {
        return;
    }
    LAST_IN.with_borrow_mut(|last| {
        let hit = last
            .as_ref()
            .filter(|l| l.node == node.id && l.protocol == protocol && l.kind == kind && *l.topic == *topic);
        let h = match hit {
            Some(l) => &l.h,
            None => {
                let h = in_handles(node, protocol, topic, kind, is_system);
                &last.insert(LastIn { node: node.id, protocol, topic: topic.into(), kind, h }).h
            }
        };
        h.messages.increment(count);
        h.bytes.increment(bytes);
        h.size.record(bytes as f64 / count as f64);
    });
}

fn in_handles(node: &Node, protocol: Protocol, topic: &str, kind: MessageType, is_system: bool) -> In {
    IN.with_borrow_mut(|all| {
        let topics = all.entry(node.id).or_default();
        let slots = slot(topics, topic, Default::default);
        slots[protocol.index() * 4 + kind.index()]
            .get_or_insert_with(|| {
                let labels = node.labels([
                    Label::new(names::LABEL_PROTOCOL, protocol.label()),
                    Label::new(names::LABEL_TOPIC, topic.to_owned()),
                    Label::new(names::LABEL_MESSAGE_TYPE, kind.label()),
                    Label::new(names::LABEL_IS_SYSTEM, bool_str(is_system)),
                ]);
                In {
                    messages: metrics::counter!(names::MESSAGES_IN_TOTAL, labels.clone()),
                    bytes: metrics::counter!(names::THROUGHPUT_IN_TOTAL, labels.clone()),
                    size: metrics::histogram!(names::MESSAGE_SIZE, labels),
                }
            })
            .clone()
    })
}

/// A pull of `group` (or a Kafka fetch, group empty) returned `count` messages of `bytes` stored
/// bytes from `topic` (`rocketmq_messages_out_total`, `rocketmq_throughput_out_total`).
pub fn messages_out(
    node: &Node,
    protocol: Protocol,
    topic: &str,
    group: &str,
    is_system: bool,
    count: u64,
    bytes: u64,
) {
    if count == 0 || super::handle().is_none() {
        return;
    }
    OUT.with_borrow_mut(|all| {
        let topics = all.entry((node.id, protocol)).or_default();
        let groups = slot(topics, topic, HashMap::new);
        let h = slot(groups, group, || {
            let labels = node.labels([
                Label::new(names::LABEL_PROTOCOL, protocol.label()),
                Label::new(names::LABEL_TOPIC, topic.to_owned()),
                Label::new(names::LABEL_CONSUMER_GROUP, group.to_owned()),
                Label::new(names::LABEL_IS_SYSTEM, bool_str(is_system)),
            ]);
            Out {
                messages: metrics::counter!(names::MESSAGES_OUT_TOTAL, labels.clone()),
                bytes: metrics::counter!(names::THROUGHPUT_OUT_TOTAL, labels),
            }
        });
        h.messages.increment(count);
        h.bytes.increment(bytes);
    });
}

/// A request took `millis` from decoding to its answer (`rocketmq_rpc_latency`, Java's
/// `RemotingMetricsManager`: result `oneway` or `success`). The codes come from the peer, so the
/// caller passes only the ones it knows (`None`: labelled `unknown`): one series per code a
/// client makes up would grow memory without bound. A Kafka request is labelled
/// `protocol_type="kafka"` with its API key as the request code.
pub fn rpc_latency(
    node: &Node,
    protocol: Protocol,
    request_code: Option<i32>,
    response_code: Option<i32>,
    long_polling: bool,
    oneway: bool,
    millis: f64,
) {
    if super::handle().is_none() {
        return;
    }
    let key = (protocol, request_code, response_code, long_polling, oneway);
    LAST_RPC.with_borrow_mut(|last| {
        let h = match last.as_ref().filter(|l| l.node == node.id && l.key == key) {
            Some(l) => &l.h,
            None => &last.insert(LastRpc { node: node.id, key, h: rpc_handle(node, key) }).h,
        };
        h.record(millis);
    });
}

fn rpc_handle(node: &Node, key: RpcKey) -> Histogram {
    let (protocol, request_code, response_code, long_polling, oneway) = key;
    RPC.with_borrow_mut(|all| {
        let codes = all.entry(node.id).or_default();
        codes
            .entry(key)
            .or_insert_with(|| {
                let labels = node.labels([
                    Label::new(names::LABEL_PROTOCOL_TYPE, protocol.label()),
                    Label::new(names::LABEL_REQUEST_CODE, code_label(request_code)),
                    Label::new(names::LABEL_RESPONSE_CODE, code_label(response_code)),
                    Label::new(names::LABEL_IS_LONG_POLLING, bool_str(long_polling)),
                    Label::new(names::LABEL_RESULT, if oneway { "oneway" } else { "success" }),
                ]);
                metrics::histogram!(names::RPC_LATENCY, labels)
            })
            .clone()
    })
}

/// An append refused by flow control (`ferrocket_flow_control_refusals_total`): the store was
/// behind and the send or produce waited too long for its turn. Rare, so no handle cache.
pub fn flow_control_refused(node: &Node, protocol: Protocol) {
    if super::handle().is_none() {
        return;
    }
    let labels = node.labels([Label::new(names::LABEL_PROTOCOL, protocol.label())]);
    metrics::counter!(names::FLOW_CONTROL_REFUSALS, labels).increment(1);
}
