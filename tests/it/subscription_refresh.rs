//! A pull naming a newer `subVersion` than the broker holds: the broker asks the consumer for
//! its running info (GET_CONSUMER_RUNNING_INFO) and serves the pull with the subscription found
//! there, once per connection however many queues ask; if the consumer has nothing newer, or
//! does not answer, the pull gets SUBSCRIPTION_NOT_LATEST as from the Java broker.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrocket::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use ferrocket::remoting::{Connection, RemotingClient, RequestHandler};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::broker::{pull, send, start_broker, wait_max_offset};
use super::support::*;

/// A consumer whose current subscription of topic `SR` has version `version`, as its running
/// info tells; counts how often it was asked.
struct RunningInfo {
    version: AtomicI64,
    asked: AtomicUsize,
}

impl RequestHandler for RunningInfo {
    async fn handle(&self, _conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        if req.request_code() != RequestCode::GET_CONSUMER_RUNNING_INFO {
            return None;
        }
        assert_eq!(req.ext_fields.get("consumerGroup").map(String::as_str), Some("CG"));
        assert_eq!(req.ext_fields.get("clientId").map(String::as_str), Some("c-refresh"));
        self.asked.fetch_add(1, Ordering::SeqCst);
        // As the Java client writes it (fastjson, MessageQueue object keys in mqTable).
        let body = format!(
            r#"{{"mqTable":{{{{"brokerName":"b","queueId":0,"topic":"SR"}}:{{"commitOffset":0}}}},"properties":{{}},"statusTable":{{}},"subscriptionSet":[{{"classFilterMode":false,"codeSet":[65],"expressionType":"TAG","subString":"A","subVersion":{},"tagsSet":["A"],"topic":"SR"}}],"userConsumerInfo":{{}}}}"#,
            self.version.load(Ordering::SeqCst)
        );
        Some(RemotingCommand::response_to(&req, ResponseCode::SUCCESS).with_body(body))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_subscription_is_refreshed_from_the_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for (q, tag) in [(0, "A"), (0, "B"), (1, "A"), (2, "A"), (3, "A")] {
        let r = super::broker::call_addr(&c, &b.addr, send("SR", q, b"m", tag)).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    wait_max_offset(&c, &b.addr, "SR", 3, 1).await;
    let handler = Arc::new(RunningInfo { version: AtomicI64::new(9), asked: AtomicUsize::new(0) });
    let consumer =
        RemotingClient::new(handler.clone(), FrameLimits::default(), TaskTracker::new(), CancellationToken::new());
    let call = |req: RemotingCommand| {
        let consumer = &consumer;
        let addr = b.addr.clone();
        async move { consumer.invoke(&addr, req, Duration::from_secs(10)).await.unwrap() }
    };
    // The heartbeat registers version 5, subscribing to everything.
    let hb = serde_json::json!({"clientID": "c-refresh", "consumerDataSet": [{"groupName":"CG",
        "subscriptionDataSet":[{"topic":"SR","subString":"*","subVersion":5}]}]});
    let r = call(request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let pull_at = |q: i32, version: i64| {
        let mut p = pull("SR", q, 0, 0, 0);
        p.ext_fields.remove("subscription");
        p.ext_fields.insert("subVersion".into(), version.to_string());
        p
    };
    // Four queues pull with version 9 at once: one question to the consumer, all served with
    // its subscription (tag A only: queue 0 returns one of its two messages).
    let answers = futures_util::future::join_all((0..4).map(|q| call(pull_at(q, 9)))).await;
    for (q, r) in answers.iter().enumerate() {
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "queue {q}: {:?}", r.remark);
    }
    assert_eq!(handler.asked.load(Ordering::SeqCst), 1, "asked once for the four pulls");
    assert_eq!(super::broker::records(&answers[0].body).len(), 1, "filtered with the refreshed subscription (tag A)");
    // Nothing newer than 9 at the consumer: Java's answer.
    let r = call(pull_at(0, 10)).await;
    assert_eq!(r.response_code(), ResponseCode::SUBSCRIPTION_NOT_LATEST);
    assert_eq!(handler.asked.load(Ordering::SeqCst), 2);
    // An older heartbeat does not take the subscription back.
    let r = call(request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(call(pull_at(1, 9)).await.response_code(), ResponseCode::SUCCESS);
    assert_eq!(handler.asked.load(Ordering::SeqCst), 2, "version 9 is held now");
    b.stop().await;
}
