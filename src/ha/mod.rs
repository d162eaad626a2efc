//! Master/slave replication, the classic RocketMQ HA protocol (`DefaultHAService`): raw TCP on
//! `haListenPort`, no remoting frames.
//!
//! May import: `crate::store`, `crate::model`, `crate::net` (the HA listener, TLS on the HA port).
//!
//! ```text
//! slave  -> master  report   slaveMaxPhyOffset:i64                     (every 5 s, and after each frame)
//! master -> slave   transfer masterPhyOffset:i64 bodySize:i32 body     (bodySize 0 = heartbeat)
//! an empty slave is sent data from the start of the master's last CommitLog segment
//! ```

pub mod flow;
pub mod master;
pub mod slave;
pub mod wire;

pub use master::HaService;
pub use slave::HaClient;

/// Runs replication on a thread of its own (a single-threaded runtime), as Java runs its HA
/// services on their own threads: a SYNC_MASTER put waits for the round trip master → slave →
/// master, and on the broker's shared runtime each of its hops would queue behind client work.
/// `make` builds the future on that thread (so its sockets register there); the returned
/// receiver completes when it has finished.
pub fn spawn_thread<F, Fut>(name: &str, make: F) -> std::io::Result<tokio::sync::oneshot::Receiver<()>>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let (done, finished) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        runtime.block_on(make());
        let _ = done.send(());
    })?;
    Ok(finished)
}
