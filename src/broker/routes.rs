//! Topic routes as the NameServers have them (Java's `TopicRouteInfoManager.getTopicSubscribeInfo`):
//! the readable queues of every broker that serves a topic. QUERY_ASSIGNMENT divides these, not
//! only this broker's queues: a client with `clientRebalance=false` asks one broker of the route,
//! picked at random, for its whole assignment, so an answer of one broker's queues left the other
//! masters' messages unread.
//!
//! Bounded: a route is asked only for a topic this broker has (the client names the topic), kept
//! 30 s (Java refreshes every 30 s; 5 s when no NameServer answered), and the table is swept of stale entries and deleted topics as it
//! grows. Without an answer from a NameServer, this broker's own queues. A route names at most
//! [`MAX_ROUTE_QUEUES`] queues in all.
//!
//! May import: `model`, `protocol` and modules of `broker/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::debug;

use super::BrokerInner;
use crate::model::perm;
use crate::protocol::body::route::TopicRouteData;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};

/// How long a route is used before it is asked again.
const FRESH: Duration = Duration::from_secs(30);
/// How long this broker's own queues stand in when no NameServer answered, so that a NameServer
/// that is down does not delay every QUERY_ASSIGNMENT by the ask timeout.
const FALLBACK: Duration = Duration::from_secs(5);
/// The table is swept of stale routes and deleted topics when it reaches this size; it holds at
/// most one route per topic of this broker.
const SWEEP_AT: usize = 1024;
/// How long a NameServer is given to answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);
/// Most queues a route gives, over all its brokers: the counts come from a peer (a broker's
/// registration, through the NameServer) and size the assignment's list.
pub const MAX_ROUTE_QUEUES: i32 = 65_536;

/// A broker's readable queues of a topic: its name and how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerQueues {
    pub broker_name: String,
    pub read_queue_nums: i32,
}

/// Per topic: until when the entry is used, and the queues.
type Table = HashMap<String, (Instant, Arc<Vec<BrokerQueues>>)>;

#[derive(Default)]
pub struct TopicRoutes {
    table: Mutex<Table>,
}

impl TopicRoutes {
    /// The readable queues of `topic` on every broker of its route; `None` if this broker has no
    /// such topic.
    pub async fn subscribe_queues(&self, b: &BrokerInner, topic: &str) -> Option<Arc<Vec<BrokerQueues>>> {
        let own = b.topics.view(topic)?;
        if let Some((until, queues)) = self.lock().get(topic) {
            if Instant::now() < *until {
                return Some(queues.clone());
            }
        }
        let (queues, keep) = match ask(b, topic).await {
            Some(route) => (Arc::new(readable(&route)), FRESH),
            None => {
                let mine = perm::is_readable(own.perm).then(|| BrokerQueues {
                    broker_name: b.config.broker_name.clone(),
                    read_queue_nums: own.read_queue_nums.min(MAX_ROUTE_QUEUES),
                });
                (Arc::new(mine.into_iter().collect()), FALLBACK)
            }
        };
        let mut table = self.lock();
        if table.len() >= SWEEP_AT {
            let now = Instant::now();
            table.retain(|t, (until, _)| now < *until && b.topics.contains(t));
        }
        table.insert(topic.to_owned(), (Instant::now() + keep, queues.clone()));
        Some(queues)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `topicRouteData2TopicSubscribeInfo`: every queue data with read permission, by broker name,
/// at most [`MAX_ROUTE_QUEUES`] in all (the brokers past that are left out).
fn readable(route: &TopicRouteData) -> Vec<BrokerQueues> {
    let mut out: Vec<BrokerQueues> = route
        .queue_datas
        .iter()
        .filter(|q| perm::is_readable(q.perm) && q.read_queue_nums > 0)
        .map(|q| BrokerQueues { broker_name: q.broker_name.clone(), read_queue_nums: q.read_queue_nums })
        .collect();
    out.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    out.dedup_by(|a, b| a.broker_name == b.broker_name);
    let mut room = MAX_ROUTE_QUEUES;
    out.retain_mut(|q| {
        q.read_queue_nums = q.read_queue_nums.min(room);
        room -= q.read_queue_nums;
        q.read_queue_nums > 0
    });
    out
}

/// GET_ROUTEINFO_BY_TOPIC from the NameServers in turn; the first route found.
async fn ask(b: &BrokerInner, topic: &str) -> Option<TopicRouteData> {
    for addr in b.config.namesrv_addrs() {
        let req = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext("topic", topic)
            .with_ext("acceptStandardJsonOnly", "true");
        match b.outbound.invoke(&addr, req, ASK_TIMEOUT).await {
            Ok(r) if r.response_code() == ResponseCode::SUCCESS => match crate::model::json::from_slice(&r.body) {
                Ok(route) => return Some(route),
                Err(e) => debug!(namesrv = addr, topic, error = %e, "unreadable route"),
            },
            Ok(r) => debug!(namesrv = addr, topic, code = r.code, "no route"),
            Err(e) => debug!(namesrv = addr, topic, error = %e, "route not asked"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::route::QueueData;

    #[test]
    fn only_readable_queue_data_count_once_per_broker() {
        let q = |name: &str, perm: i32, n: i32| QueueData {
            broker_name: name.into(),
            read_queue_nums: n,
            write_queue_nums: n,
            perm,
            topic_sys_flag: 0,
        };
        let route = TopicRouteData {
            queue_datas: vec![q("b", 6, 2), q("a", 4, 3), q("c", 2, 4), q("d", 6, 0), q("a", 6, 9)],
            ..TopicRouteData::default()
        };
        let names: Vec<_> = readable(&route).into_iter().map(|q| (q.broker_name, q.read_queue_nums)).collect();
        assert_eq!(names, [("a".to_owned(), 3), ("b".to_owned(), 2)]);
    }

    #[test]
    fn a_route_sizes_no_assignment_past_max_route_queues() {
        let q = |name: &str, n: i32| QueueData {
            broker_name: name.into(),
            read_queue_nums: n,
            write_queue_nums: n,
            perm: 6,
            topic_sys_flag: 0,
        };
        let route =
            TopicRouteData { queue_datas: vec![q("a", 8), q("b", i32::MAX), q("c", 8)], ..TopicRouteData::default() };
        let names: Vec<_> = readable(&route).into_iter().map(|q| (q.broker_name, q.read_queue_nums)).collect();
        assert_eq!(names, [("a".to_owned(), 8), ("b".to_owned(), MAX_ROUTE_QUEUES - 8)]);
    }
}
