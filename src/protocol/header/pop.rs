//! POP consumption headers (5.x): POP_MESSAGE (200050), ACK_MESSAGE (200051),
//! CHANGE_MESSAGE_INVISIBLETIME (200053) and their responses, as Java's
//! `PopMessageRequestHeader`, `PopMessageResponseHeader`, `AckMessageRequestHeader`,
//! `ChangeInvisibleTimeRequestHeader` and `ChangeInvisibleTimeResponseHeader`.
//!
//! May import: nothing outside `protocol/`.

use super::command_header;

command_header! {
    /// POP_MESSAGE (200050).
    pub struct PopMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        invisible_time: i64 = "invisibleTime",
        poll_time: i64 = "pollTime",
        born_time: i64 = "bornTime",
        init_mode: i32 = "initMode",
        exp_type: Option<String> = "expType",
        exp: Option<String> = "exp",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

command_header! {
    /// Response to POP_MESSAGE. The client builds each message's handle from these.
    pub struct PopMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        rest_num: i64 = "restNum",
        start_offset_info: Option<String> = "startOffsetInfo",
        msg_offset_info: Option<String> = "msgOffsetInfo",
        order_count_info: Option<String> = "orderCountInfo",
    }
}

command_header! {
    /// ACK_MESSAGE (200051).
    pub struct AckMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME (200053).
    pub struct ChangeInvisibleTimeRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        invisible_time: i64 = "invisibleTime",
    }
}

command_header! {
    /// Response to CHANGE_MESSAGE_INVISIBLETIME: the new handle's pop time.
    pub struct ChangeInvisibleTimeResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
    }
}
