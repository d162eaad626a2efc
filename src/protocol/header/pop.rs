//! POP consumption headers (5.x): POP_MESSAGE (200050), ACK_MESSAGE (200051), PEEK_MESSAGE
//! (200052), NOTIFICATION (200054), POLLING_INFO (200055),
//! CHANGE_MESSAGE_INVISIBLETIME (200053) and their responses, as Java's
//! `PopMessageRequestHeader`, `PopMessageResponseHeader`, `AckMessageRequestHeader`,
//! `ChangeInvisibleTimeRequestHeader`, `ChangeInvisibleTimeResponseHeader`,
//! `PeekMessageRequestHeader`, `NotificationRequestHeader` / `NotificationResponseHeader` and
//! `PollingInfoRequestHeader` / `PollingInfoResponseHeader`. BATCH_ACK_MESSAGE (200151) has no
//! header: its body is `body::pop::BatchAckMessageRequestBody`.
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

command_header! {
    /// PEEK_MESSAGE (200052): read without popping. Answered with a [`PopMessageResponseHeader`]
    /// of which only `restNum` means anything.
    pub struct PeekMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
    }
}

command_header! {
    /// NOTIFICATION (200054): held until a queue of the topic (or its POP retry topic) has
    /// messages for the group.
    pub struct NotificationRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        poll_time: i64 = "pollTime",
        born_time: i64 = "bornTime",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

command_header! {
    /// Response to NOTIFICATION.
    pub struct NotificationResponseHeader {
        has_msg: bool = "hasMsg",
        polling_full: bool = "pollingFull",
    }
}

command_header! {
    /// POLLING_INFO (200055): how many pops of (topic, group, queue) are held.
    pub struct PollingInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    /// Response to POLLING_INFO.
    pub struct PollingInfoResponseHeader {
        polling_num: i32 = "pollingNum",
    }
}
