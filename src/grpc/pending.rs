//! Server commands waiting for the client's answer on its Telemetry stream (Java's
//! `GrpcChannelManager` response futures): PrintThreadStackTraceCommand is answered by a
//! ThreadStackTrace, VerifyMessageCommand by a VerifyMessageResult, each naming the command's
//! nonce. A nonce is bound to the stream it was sent on, so a client can only answer what it
//! was asked. Bounded: past [`MAX_PENDING`] waiting commands a new one is not sent.
//!
//! May import: `grpc`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::oneshot;

/// Commands waiting for answers at once, over all clients.
pub const MAX_PENDING: usize = 1024;

/// A client's answer to a server command.
#[derive(Debug)]
pub enum Answer {
    Stack(String),
    /// The code of the VerifyMessageResult's status.
    Verified(i32),
}

#[derive(Default)]
pub struct Pending {
    map: Mutex<HashMap<(u64, String), oneshot::Sender<Answer>>>,
    next: AtomicU64,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(u64, String), oneshot::Sender<Answer>>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A nonce for a command sent on `stream`, and where its answer comes; `None` when too many
    /// wait already.
    pub fn open(&self, stream: u64) -> Option<(String, oneshot::Receiver<Answer>)> {
        let mut map = self.lock();
        if map.len() >= MAX_PENDING {
            return None;
        }
        let nonce = format!("{:016x}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        map.insert((stream, nonce.clone()), tx);
        Some((nonce, rx))
    }

    /// The answer to `nonce` that came on `stream`; anything else is dropped.
    pub fn answer(&self, stream: u64, nonce: &str, answer: Answer) {
        if let Some(tx) = self.lock().remove(&(stream, nonce.to_owned())) {
            let _ = tx.send(answer);
        }
    }

    /// Forgets a command no longer waited for.
    pub fn forget(&self, stream: u64, nonce: &str) {
        self.lock().remove(&(stream, nonce.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_counts_only_on_its_own_stream_and_the_table_is_bounded() {
        let p = Pending::default();
        let (nonce, mut rx) = p.open(1).unwrap();
        p.answer(2, &nonce, Answer::Stack("forged".into()));
        assert!(rx.try_recv().is_err(), "another stream cannot answer");
        p.answer(1, &nonce, Answer::Stack("mine".into()));
        assert!(matches!(rx.try_recv(), Ok(Answer::Stack(s)) if s == "mine"));
        let mut waiting = Vec::new();
        while let Some(w) = p.open(3) {
            waiting.push(w);
        }
        assert_eq!(waiting.len(), MAX_PENDING);
        p.forget(3, &waiting[0].0);
        assert!(p.open(3).is_some());
    }
}
