//! QueryAssignment (Java's `RouteActivity.queryAssignment`): which queues a consumer of a group
//! reads. This broker is the only one: one assignment of queue -1 (the pop reads every readable
//! queue), or, for a group that consumes orderly, one per readable queue; FORBIDDEN when the
//! topic has none readable.
//!
//! May import: `core`, `model`, `grpc`.

use super::pb::{Assignment, Broker, Code, MessageQueue, Permission, QueryAssignmentRequest, QueryAssignmentResponse};
use super::status::{self, Refused};
use super::{validate, Grpc};
use crate::model::perm;

pub fn query_assignment(g: &Grpc, req: &QueryAssignmentRequest) -> QueryAssignmentResponse {
    match assignments(g, req) {
        Ok(a) => QueryAssignmentResponse { status: Some(status::ok()), assignments: a },
        Err(r) => QueryAssignmentResponse { status: Some(r.status()), assignments: Vec::new() },
    }
}

fn assignments(g: &Grpc, req: &QueryAssignmentRequest) -> Result<Vec<Assignment>, Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let group = validate::group(req.group.as_ref())?;
    let tc = g
        .core
        .topics
        .get(topic)
        .ok_or_else(|| Refused::new(Code::TopicNotFound, format!("topic {topic} not found")))?;
    let fifo = g.core.groups.get(group).is_some_and(|c| c.consume_message_orderly);
    if !perm::is_readable(tc.perm) || tc.read_queue_nums <= 0 {
        return Err(Refused::new(Code::Forbidden, "no readable queue"));
    }
    let permission = match (perm::is_readable(tc.perm), perm::is_writeable(tc.perm)) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    };
    let broker = Broker { name: g.core.config.broker_name.clone(), id: 0, endpoints: Some(g.endpoints()) };
    let queue = |id: i32| Assignment {
        message_queue: Some(MessageQueue {
            topic: req.topic.clone(),
            id,
            permission: permission as i32,
            broker: Some(broker.clone()),
            accept_message_types: Vec::new(),
        }),
    };
    Ok(if fifo { (0..tc.read_queue_nums).map(queue).collect() } else { vec![queue(-1)] })
}
