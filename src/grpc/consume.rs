//! ReceiveMessage (Java's `ReceiveMessageActivity` and its stream writer) over the core's POP:
//! the request checked as the proxy checks it, one pop of every readable queue of the topic
//! (`queue -1`; orderly when the group consumes orderly), and the answer streamed as Java
//! writes it:
//!
//! ```text
//!   Status (OK | MESSAGE_NOT_FOUND after the long poll | TOO_MANY_REQUESTS when polling full
//!          | the refusal) -> Message ... (convert.rs, handles sealed by receipt.rs)
//!   -> delivery_timestamp (always last)
//! ```
//!
//! Bounds (the proxy's defaults): long polling 5 s..20 s and within the call's deadline
//! (ILLEGAL_POLLING_TIME when less than 5 s is left), invisible time 10 s..12 h
//! (ILLEGAL_INVISIBLE_TIME; auto_renew takes the default 60 s, renewed by `renew.rs`), batch 1..32 (more is capped).
//!
//! May import: `core`, `model`, `store`, `grpc`.

use std::time::Duration;

use super::pb::receive_message_response::Content;
use super::pb::{Code, FilterType, ReceiveMessageRequest, ReceiveMessageResponse};
use super::status::{self, Refused};
use super::{convert, validate, Grpc};
use crate::core::pop::filter::Subscription;
use crate::core::pop::{self, Handle, PopError, PopRequest, Popped, TopicMark};
use crate::model::group::SubscriptionGroupConfig;
use crate::model::perm;

/// `minInvisibleTimeMillsForRecv`, `maxInvisibleTimeMills`, `defaultInvisibleTimeMills`.
pub const MIN_INVISIBLE_MS: i64 = 10_000;
pub const MAX_INVISIBLE_MS: i64 = pop::MAX_INVISIBLE_MS;
pub const DEFAULT_INVISIBLE_MS: i64 = 60_000;
/// `KeyBuilder.POP_ORDER_REVIVE_QUEUE`: an orderly pop's handles carry it.
const ORDER_REVIVE_QID: i32 = 999;

/// The whole answer of one ReceiveMessage, in order.
pub async fn receive(
    g: &Grpc,
    client: &str,
    req: &ReceiveMessageRequest,
    remaining: Option<Duration>,
) -> Vec<ReceiveMessageResponse> {
    let mut out = match try_receive(g, client, req, remaining).await {
        Ok(v) => v,
        Err(r) => vec![content(Content::Status(r.status()))],
    };
    out.push(content(Content::DeliveryTimestamp(convert::millis(crate::store::now_ms()))));
    out
}

fn content(c: Content) -> ReceiveMessageResponse {
    ReceiveMessageResponse { content: Some(c) }
}

/// `validateInvisibleTime`.
pub fn invisible_time(ms: i64, min: i64) -> Result<i64, Refused> {
    if ms < min {
        return Err(Refused::new(Code::IllegalInvisibleTime, format!("the invisibleTime is too small. min is {min}")));
    }
    if ms > MAX_INVISIBLE_MS {
        return Err(Refused::new(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime is too large. max is {MAX_INVISIBLE_MS}"),
        ));
    }
    Ok(ms)
}

/// The SDKs' default request timeout (Java, Go, Python, Node.js: 3 s): a receive that names no
/// long-polling time is held for what is left of its call less half of it, as the Java proxy does
/// with the client's own `request_timeout`.
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// How long to hold the pop: the asked time within `(min, max)` (5..20 s by default), and
/// within the call's deadline. A request without one (the Go SDK sends none) gets the deadline
/// less half a request timeout, so the answer comes before the client gives up.
pub fn polling_time(
    asked: Option<&prost_types::Duration>,
    remaining: Option<Duration>,
    (min, max): (Duration, Duration),
) -> Result<Duration, Refused> {
    let unasked = remaining.map_or(max, |left| left.saturating_sub(CLIENT_REQUEST_TIMEOUT / 2));
    let asked = asked.map_or(unasked, |d| Duration::from_millis(convert::duration_ms(d).max(0) as u64));
    let poll = asked.clamp(min, max);
    match remaining {
        Some(left) if poll > left && left >= min => Ok(left),
        Some(left) if poll > left => Err(Refused::new(
            Code::IllegalPollingTime,
            "The deadline time remaining is not enough for polling, please check network condition",
        )),
        _ => Ok(poll),
    }
}

async fn try_receive(
    g: &Grpc,
    client: &str,
    req: &ReceiveMessageRequest,
    remaining: Option<Duration>,
) -> Result<Vec<ReceiveMessageResponse>, Refused> {
    let core = &g.core;
    let poll = polling_time(req.long_polling_timeout.as_ref(), remaining, core.config.grpc_long_polling())?;
    let topic = validate::topic(&core.config, req.message_queue.as_ref().and_then(|q| q.topic.as_ref()))?;
    let group = validate::group(req.group.as_ref())?;
    let invisible_ms = if req.auto_renew {
        DEFAULT_INVISIBLE_MS
    } else {
        invisible_time(req.invisible_duration.as_ref().map_or(0, convert::duration_ms), MIN_INVISIBLE_MS)?
    };
    let sub = filter(g, req)?;
    if req.batch_size < 1 {
        return Err(Refused::new(Code::BadRequest, "batch size must be positive"));
    }
    let max_nums = (req.batch_size as usize).min(pop::MAX_POP_NUMS);
    if !perm::is_readable(core.live.broker_permission()) {
        let why = format!("the broker[{}] peeking message is forbidden", core.config.broker_name);
        return Err(Refused::new(Code::Forbidden, why));
    }
    readable_topic(g, topic)?;
    let fifo = consuming_group(g, group).await?.consume_message_orderly;
    let request = PopRequest {
        group,
        topic,
        queue_id: -1,
        max_nums,
        invisible_ms,
        poll,
        init_from_min: false,
        retry_v2: core.config.enable_retry_topic_v2,
        filter: &sub,
        order: fifo,
        attempt: req.attempt_id.as_deref(),
    };
    core.store.await_dispatched(crate::store::READ_AFTER_SEND_WAIT).await;
    let popped = match core.pop(&request).await {
        Ok(p) => p,
        Err(PopError::PollingFull) => return Err(Refused::new(Code::TooManyRequests, "polling full")),
    };
    if popped.count() == 0 {
        return Err(Refused::new(Code::MessageNotFound, "no new message"));
    }
    let (out, sealed) = messages(g, group, topic, fifo, popped);
    if req.auto_renew {
        for (receipt, handle) in sealed {
            g.renewals.add(client, group, topic, &receipt, handle).await;
        }
    }
    Ok(out)
}

/// The subscription's filter; ILLEGAL_FILTER_EXPRESSION when it does not compile.
fn filter(g: &Grpc, req: &ReceiveMessageRequest) -> Result<Subscription, Refused> {
    let (expression, kind) = req.filter_expression.as_ref().map_or(("*", 0), |f| (f.expression.as_str(), f.r#type));
    let sql = match FilterType::try_from(kind) {
        Ok(FilterType::Sql) => true,
        Ok(FilterType::Tag | FilterType::Unspecified) => false,
        Err(_) => return Err(Refused::new(Code::IllegalFilterExpression, format!("unknown filter type {kind}"))),
    };
    if sql && !g.core.live.config().enable_property_filter {
        return Err(Refused::new(
            Code::IllegalFilterExpression,
            "the broker does not support SQL92 filtering (enablePropertyFilter=false)",
        ));
    }
    Subscription::build(expression, sql).map_err(|why| Refused::new(Code::IllegalFilterExpression, why))
}

/// The topic exists and may be read.
pub fn readable_topic(g: &Grpc, topic: &str) -> Result<crate::model::TopicConfig, Refused> {
    let Some(tc) = g.core.topics.get(topic) else {
        return Err(Refused::new(Code::TopicNotFound, format!("topic {topic} not found")));
    };
    if !perm::is_readable(tc.perm) {
        return Err(Refused::new(Code::Forbidden, format!("the topic[{topic}] peeking message is forbidden")));
    }
    Ok(tc)
}

/// The group, created if absent (autoCreateSubscriptionGroup) and allowed to consume.
pub async fn consuming_group(g: &Grpc, name: &str) -> Result<SubscriptionGroupConfig, Refused> {
    let Some((group, created)) = g.core.groups.find_or_create(name) else {
        return Err(Refused::new(Code::ConsumerGroupNotFound, format!("subscription group [{name}] does not exist")));
    };
    if created {
        g.core.persist_groups().await;
    }
    if !group.consume_enable {
        return Err(Refused::new(Code::Forbidden, format!("subscription group no permission, {name}")));
    }
    Ok(group)
}

/// The answer, and each message's receipt with its handle.
fn messages(
    g: &Grpc,
    group: &str,
    topic: &str,
    fifo: bool,
    p: Popped,
) -> (Vec<ReceiveMessageResponse>, Vec<(String, Handle)>) {
    let mut out = Vec::with_capacity(p.count() + 1);
    let mut sealed = Vec::with_capacity(p.count());
    out.push(content(Content::Status(status::ok())));
    let revive_qid = if fifo { ORDER_REVIVE_QID } else { p.revive_qid };
    let (mut count, mut bytes) = (0u64, 0u64);
    for q in p.queues {
        let mark = TopicMark::of(&q.topic);
        for m in q.messages {
            let handle = Handle {
                ck_offset: q.start_offset,
                pop_time: q.pop_time,
                invisible_time: p.invisible_time,
                revive_qid,
                mark,
                broker_name: g.core.config.broker_name.clone(),
                queue_id: q.queue_id,
                queue_offset: Some(m.queue_offset),
            };
            let receipt = g.receipts.seal(group, &handle);
            if let Some(msg) = convert::message(&m.record, topic, receipt.clone(), p.invisible_time) {
                sealed.push((receipt, handle));
                count += 1;
                bytes += m.record.len() as u64;
                out.push(content(Content::Message(msg)));
            }
        }
    }
    g.core.count_popped(crate::telemetry::Protocol::Grpc, group, topic, count, bytes);
    (out, sealed)
}

/// The `grpc-timeout` header (`1*8DIGIT unit`): what is left of the call.
pub fn grpc_timeout(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `grpcClientConsumerMinLongPollingTimeoutMillis`, `...Max...` by default.
    const POLL: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(20));

    #[test]
    fn bounds_as_the_proxy() {
        assert_eq!(invisible_time(9_999, MIN_INVISIBLE_MS).unwrap_err().code, Code::IllegalInvisibleTime);
        assert_eq!(
            invisible_time(MAX_INVISIBLE_MS + 1, MIN_INVISIBLE_MS).unwrap_err().code,
            Code::IllegalInvisibleTime
        );
        assert_eq!(invisible_time(10_000, MIN_INVISIBLE_MS).unwrap(), 10_000);
        let d = |s| prost_types::Duration { seconds: s, nanos: 0 };
        assert_eq!(polling_time(Some(&d(1)), None, POLL).unwrap(), POLL.0);
        assert_eq!(polling_time(Some(&d(60)), None, POLL).unwrap(), POLL.1);
        assert_eq!(polling_time(Some(&d(15)), Some(Duration::from_secs(8)), POLL).unwrap(), Duration::from_secs(8));
        // The Go SDK asks no polling time; its call has await (5 s) + request timeout (3 s).
        assert_eq!(polling_time(None, Some(Duration::from_secs(8)), POLL).unwrap(), Duration::from_millis(6_500));
        assert_eq!(polling_time(None, Some(Duration::from_secs(60)), POLL).unwrap(), POLL.1);
        assert_eq!(polling_time(None, None, POLL).unwrap(), POLL.1);
        assert_eq!(
            polling_time(Some(&d(15)), Some(Duration::from_secs(2)), POLL).unwrap_err().code,
            Code::IllegalPollingTime
        );
        assert_eq!(grpc_timeout("2999m"), Some(Duration::from_millis(2999)));
        assert_eq!(grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(grpc_timeout("123456789S"), None);
        assert_eq!(grpc_timeout("x"), None);
        assert_eq!(grpc_timeout("12q"), None);
    }
}
