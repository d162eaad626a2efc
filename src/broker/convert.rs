//! The one bridge between wire types and store types: a send request becomes the
//! `MessageToStore` records the store appends; store statuses become response codes.
//!
//! May import: `model`, `protocol`, `store` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::net::SocketAddr;

use bytes::Bytes;

pub use crate::core::properties::{new_uniq_id, stored_properties};
use crate::model::message::{self, property, MessageToStore};
use crate::protocol::header::broker::SendMessageRequestHeader;
use crate::protocol::ResponseCode;
use crate::store::{GetMessageStatus, PutStatus};

/// A single message from a send request.
#[allow(clippy::too_many_arguments)]
pub fn message_to_store(
    h: &SendMessageRequestHeader,
    topic: &str,
    queue_id: i32,
    body: Bytes,
    properties: String,
    flag: i32,
    sys_flag: i32,
    born_host: SocketAddr,
    store_host: SocketAddr,
) -> MessageToStore {
    let tags = message::property_value(&properties, property::TAGS);
    MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag,
        body,
        tags_code: message::tags_code(tags),
        properties,
        born_timestamp: h.born_timestamp,
        born_host,
        store_host,
        sys_flag,
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    }
}

/// Send response code for a store status (`SendMessageProcessor.handlePutMessageResult`).
pub fn put_status_code(status: &PutStatus) -> (ResponseCode, Option<String>) {
    // The core's outcome table decides, as for a send (`core/outcome.rs`).
    match crate::core::Outcome::of_put(status) {
        None => (ResponseCode::SUCCESS, None),
        Some(r) => (ResponseCode(r.outcome.codes().remoting), Some(r.why)),
    }
}

/// Pull response code for a store status (`PullMessageProcessor`), given the requested offset.
pub fn pull_status_code(status: GetMessageStatus, requested_offset: i64) -> ResponseCode {
    use GetMessageStatus::*;
    match status {
        Found => ResponseCode::SUCCESS,
        NoMatchedMessage | MessageWasRemoving => ResponseCode::PULL_RETRY_IMMEDIATELY,
        NoMessageInQueue | NoMatchedLogicQueue if requested_offset != 0 => ResponseCode::PULL_OFFSET_MOVED,
        NoMessageInQueue | NoMatchedLogicQueue | OffsetOverflowOne | OffsetFoundNull => ResponseCode::PULL_NOT_FOUND,
        OffsetOverflowBadly | OffsetTooSmall => ResponseCode::PULL_OFFSET_MOVED,
    }
}

/// The status name Java puts in the pull response's remark.
pub fn status_name(status: GetMessageStatus) -> &'static str {
    use GetMessageStatus::*;
    match status {
        Found => "FOUND",
        NoMatchedMessage => "NO_MATCHED_MESSAGE",
        MessageWasRemoving => "MESSAGE_WAS_REMOVING",
        OffsetFoundNull => "OFFSET_FOUND_NULL",
        OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        OffsetTooSmall => "OFFSET_TOO_SMALL",
        NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
        NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
    }
}
