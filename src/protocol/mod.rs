//! The RocketMQ remoting wire format: pure functions over bytes, no I/O.
//!
//! May import: `crate::model` only.
//!
//! ```text
//! frame   [length:4][serializeType:1 | headerLength:3][header][body]
//! header  JSON (type 0) or ROCKETMQ binary (type 1) form of RemotingCommand
//! ```
//!
//! [`frame`] splits frames and holds the tokio-util codec; [`header_json`] and [`header_binary`]
//! (de)serialize the command header; [`header`] has typed ext-field headers per request code and
//! [`body`] the JSON bodies.

pub mod body;
pub mod code;
pub mod command;
mod ext_fields;
pub mod frame;
pub mod header;
pub mod header_binary;
pub mod header_json;
mod header_json_scan;
pub mod version;

pub use code::{RequestCode, ResponseCode};
pub use command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
pub use frame::{FrameLimits, RemotingCodec};

/// A frame or header that cannot be decoded. The connection it came from is closed.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("malformed frame: {0}")]
    BadFrame(String),
    #[error("frame of {size} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge { size: usize, max: usize },
    #[error("unknown header serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("invalid JSON header: {0}")]
    BadJsonHeader(String),
    #[error("invalid ROCKETMQ binary header: {0}")]
    BadBinaryHeader(String),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}
