//! Master/slave replication, the classic RocketMQ HA protocol (`DefaultHAService`): raw TCP on
//! `haListenPort`, no remoting frames.
//!
//! May import: `crate::store`, `crate::model`.
//!
//! ```text
//! slave  -> master  report   slaveMaxPhyOffset:i64                     (every 5 s, and after each frame)
//! master -> slave   transfer masterPhyOffset:i64 bodySize:i32 body     (bodySize 0 = heartbeat)
//! an empty slave is sent data from the start of the master's last CommitLog segment
//! ```

pub mod master;
pub mod slave;
pub mod wire;

pub use master::HaService;
pub use slave::HaClient;
