//! Requests on one connection are served independently: a request that waits never holds up the
//! next one, and a handler that panics loses its request, not the connection. Answers leave only
//! after the handler's `before_write`; when it refuses, the connection closes unanswered.

use std::sync::Arc;
use std::time::Duration;

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use ferrocket::remoting::{Connection, RemotingServer, RequestHandler, ServerConfig};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::support::*;

const QUICK: RequestCode = RequestCode(9001);
const SLOW: RequestCode = RequestCode(9002);
const PANICS: RequestCode = RequestCode(9003);

/// SLOW tells `entered` it is in its handler, then waits until the test `release`s it.
#[derive(Default)]
struct Handler {
    entered: Notify,
    release: Notify,
}

impl RequestHandler for Handler {
    async fn handle(&self, _conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        let code = req.request_code();
        if code == SLOW {
            // `notify_one` keeps a permit when nobody waits yet: neither side can miss the other.
            self.entered.notify_one();
            self.release.notified().await;
        } else if code == PANICS {
            panic!("handler bug (expected by the test)");
        }
        Some(RemotingCommand::response_to(&req, ResponseCode::SUCCESS).with_body(format!("{}", code.0)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_requests_become_tasks_and_a_panic_loses_only_its_request() {
    let server = RemotingServer::bind("127.0.0.1:0", ServerConfig::default()).await.unwrap();
    let addr = server.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let handler = Arc::new(Handler::default());
    tokio::spawn(server.serve(handler.clone(), shutdown.clone(), TaskTracker::new()));
    let c = client();
    let first_conn = c.connection(&addr).await.unwrap().id();
    let call = |code: RequestCode, timeout: Duration| {
        let (c, addr) = (&c, addr.clone());
        async move { c.invoke(&addr, RemotingCommand::request(code), timeout).await }
    };
    // A slow request first, then a quick one on the same connection: the quick one is answered
    // while the slow one is still in its handler (it leaves only when released, after that).
    let slow = call(SLOW, Duration::from_secs(5));
    let quick = async {
        handler.entered.notified().await;
        let r = call(QUICK, Duration::from_secs(5)).await;
        handler.release.notify_one();
        r
    };
    let (slow, quick) = tokio::join!(slow, quick);
    let quick = quick.expect("the quick request was not answered while the slow one waited");
    assert_eq!(quick.response_code(), ResponseCode::SUCCESS);
    assert_eq!(&quick.body[..], b"9001");
    assert_eq!(&slow.unwrap().body[..], b"9002");
    // A panicking handler: no answer to that request, the connection keeps serving.
    let lost = call(PANICS, Duration::from_millis(300)).await;
    assert!(lost.is_err(), "a panicked request cannot be answered: {lost:?}");
    let after = call(QUICK, Duration::from_secs(5)).await.unwrap();
    assert_eq!(&after.body[..], b"9001");
    assert_eq!(c.connection(&addr).await.unwrap().id(), first_conn, "the same connection served every request");
    shutdown.cancel();
}

/// Counts requests handled and, at each `before_write`, how many had been handled then.
#[derive(Default)]
struct Committing {
    handled: std::sync::atomic::AtomicU64,
    committed: std::sync::atomic::AtomicU64,
    fail: std::sync::atomic::AtomicBool,
}

impl RequestHandler for Committing {
    async fn handle(&self, _conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        let n = self.handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Some(RemotingCommand::response_to(&req, ResponseCode::SUCCESS).with_body(n.to_string()))
    }

    fn before_write(&self) -> Result<(), String> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("the test refuses".into());
        }
        self.committed
            .fetch_max(self.handled.load(std::sync::atomic::Ordering::SeqCst), std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_written_after_before_write_and_a_refusal_closes_the_connection() {
    use std::sync::atomic::Ordering::SeqCst;
    let server = RemotingServer::bind("127.0.0.1:0", ServerConfig::default()).await.unwrap();
    let addr = server.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let handler = Arc::new(Committing::default());
    tokio::spawn(server.serve(handler.clone(), shutdown.clone(), TaskTracker::new()));
    let c = client();
    let first_conn = c.connection(&addr).await.unwrap().id();
    let calls = (0..64).map(|_| c.invoke(&addr, RemotingCommand::request(QUICK), Duration::from_secs(5)));
    for r in futures_util::future::join_all(calls).await {
        let n: u64 = std::str::from_utf8(&r.unwrap().body).unwrap().parse().unwrap();
        assert!(handler.committed.load(SeqCst) >= n, "answer {n} was written before before_write covered it");
    }
    handler.fail.store(true, SeqCst);
    let refused = c.invoke(&addr, RemotingCommand::request(QUICK), Duration::from_millis(500)).await;
    assert!(refused.is_err(), "an answer was written although before_write refused: {refused:?}");
    handler.fail.store(false, SeqCst);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let again = loop {
        match c.invoke(&addr, RemotingCommand::request(QUICK), Duration::from_secs(1)).await {
            Ok(r) => break r,
            Err(e) => assert!(std::time::Instant::now() < deadline, "no answer after the refusal: {e}"),
        }
    };
    assert_eq!(again.response_code(), ResponseCode::SUCCESS);
    assert_ne!(c.connection(&addr).await.unwrap().id(), first_conn, "the refusing connection was closed");
    shutdown.cancel();
}
