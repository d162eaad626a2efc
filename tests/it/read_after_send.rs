//! A message is dispatched (visible to GET_MAX_OFFSET and pulls) right after its send is
//! acknowledged, even while another thread keeps a core busy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket::protocol::{RequestCode, ResponseCode};

use super::broker::{call_addr, send, start_broker};
use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_acknowledged_send_is_dispatched_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let stop = Arc::new(AtomicBool::new(false));
    let spin2 = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop()
            }
        })
    };
    let spin = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop()
            }
        })
    };
    let mut lags = Vec::new();
    for i in 1..=20i64 {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1) {
            std::hint::spin_loop()
        }
        let r = call_addr(&c, &b.addr, send("RAS", 0, b"m", "A")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        let max = request(RequestCode::GET_MAX_OFFSET, &[("topic", "RAS"), ("queueId", "0")]);
        let seen: i64 = call_addr(&c, &b.addr, max).await.ext_fields["offset"].parse().unwrap();
        lags.push(i - seen);
    }
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();
    spin2.join().unwrap();
    assert!(lags.iter().all(|l| *l == 0), "messages not yet dispatched right after their ack: {lags:?}");
    b.stop().await;
}
