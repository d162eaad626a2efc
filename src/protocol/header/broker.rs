//! Headers of the client → broker requests and their responses
//! (`org.apache.rocketmq.remoting.protocol.header`).
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use super::command_header;

command_header! {
    /// SEND_MESSAGE (10), SEND_REPLY_MESSAGE (324): `SendMessageRequestHeader`.
    pub struct SendMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        batch: Option<bool> = "batch",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    /// SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): the same fields under one-letter keys.
    pub struct SendMessageRequestHeaderV2 {
        producer_group: String = "a",
        topic: String = "b",
        default_topic: String = "c",
        default_topic_queue_nums: i32 = "d",
        queue_id: i32 = "e",
        sys_flag: i32 = "f",
        born_timestamp: i64 = "g",
        flag: i32 = "h",
        properties: Option<String> = "i",
        reconsume_times: Option<i32> = "j",
        unit_mode: Option<bool> = "k",
        max_reconsume_times: Option<i32> = "l",
        batch: Option<bool> = "m",
        broker_name: Option<String> = "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v: SendMessageRequestHeaderV2) -> Self {
        Self {
            producer_group: v.producer_group,
            topic: v.topic,
            default_topic: v.default_topic,
            default_topic_queue_nums: v.default_topic_queue_nums,
            queue_id: v.queue_id,
            sys_flag: v.sys_flag,
            born_timestamp: v.born_timestamp,
            flag: v.flag,
            properties: v.properties,
            reconsume_times: v.reconsume_times,
            unit_mode: v.unit_mode,
            batch: v.batch,
            max_reconsume_times: v.max_reconsume_times,
            broker_name: v.broker_name,
        }
    }
}

command_header! {
    /// Response to the send codes: `SendMessageResponseHeader`.
    pub struct SendMessageResponseHeader {
        msg_id: String = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<String> = "transactionId",
        /// 5.x: the handle to recall a timer message with.
        recall_handle: Option<String> = "recallHandle",
    }
}

command_header! {
    /// PULL_MESSAGE (11), LITE_PULL_MESSAGE (361): `PullMessageRequestHeader`.
    pub struct PullMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: Option<i64> = "commitOffset",
        suspend_timeout_millis: Option<i64> = "suspendTimeoutMillis",
        subscription: Option<String> = "subscription",
        sub_version: Option<i64> = "subVersion",
        expression_type: Option<String> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
    }
}

command_header! {
    /// Response to PULL_MESSAGE: `PullMessageResponseHeader`.
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        group_sys_flag: Option<i32> = "groupSysFlag",
    }
}

command_header! {
    /// QUERY_CONSUMER_OFFSET (14).
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
    }
}

command_header! {
    /// UPDATE_CONSUMER_OFFSET (15).
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
    }
}

command_header! {
    /// `offset` answers: QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP.
    pub struct OffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    /// GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32).
    pub struct TopicQueueHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29).
    pub struct SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
        boundary_type: Option<String> = "boundaryType",
    }
}

command_header! {
    /// GET_EARLIEST_MSG_STORETIME response.
    pub struct TimestampResponseHeader {
        timestamp: i64 = "timestamp",
    }
}

command_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38), NOTIFY_CONSUMER_IDS_CHANGED (40).
    pub struct ConsumerGroupHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// UNREGISTER_CLIENT (35).
    pub struct UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

command_header! {
    /// UPDATE_AND_CREATE_TOPIC (17): `CreateTopicRequestHeader`.
    pub struct CreateTopicRequestHeader {
        topic: String = "topic",
        default_topic: Option<String> = "defaultTopic",
        read_queue_nums: i32 = "readQueueNums",
        write_queue_nums: i32 = "writeQueueNums",
        perm: i32 = "perm",
        topic_filter_type: Option<String> = "topicFilterType",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        order: bool = "order",
        attributes: Option<String> = "attributes",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_BROKER (215), GET_TOPIC_STATS_INFO (202), QUERY_TOPIC_CONSUME_BY_WHO (300).
    pub struct TopicHeader {
        topic: String = "topic",
    }
}

command_header! {
    /// QUERY_MESSAGE (12).
    pub struct QueryMessageRequestHeader {
        topic: String = "topic",
        key: String = "key",
        max_num: i32 = "maxNum",
        begin_timestamp: i64 = "beginTimestamp",
        end_timestamp: i64 = "endTimestamp",
    }
}

command_header! {
    /// QUERY_MESSAGE response.
    pub struct QueryMessageResponseHeader {
        index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

command_header! {
    /// VIEW_MESSAGE_BY_ID (33).
    pub struct ViewMessageRequestHeader {
        topic: Option<String> = "topic",
        offset: i64 = "offset",
    }
}

command_header! {
    /// CONSUMER_SEND_MSG_BACK (36): `ConsumerSendMsgBackRequestHeader`.
    pub struct ConsumerSendMsgBackRequestHeader {
        offset: i64 = "offset",
        group: String = "group",
        delay_level: i32 = "delayLevel",
        origin_msg_id: Option<String> = "originMsgId",
        origin_topic: Option<String> = "originTopic",
        unit_mode: bool = "unitMode",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

command_header! {
    /// GET_CONSUME_STATS (208).
    pub struct GetConsumeStatsRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: Option<String> = "topic",
        topic_list: Option<String> = "topicList",
    }
}

command_header! {
    /// GET_PRODUCER_CONNECTION_LIST (204).
    pub struct ProducerGroupHeader {
        producer_group: String = "producerGroup",
    }
}

command_header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220).
    pub struct ResetOffsetRequestHeader {
        topic: String = "topic",
        group: String = "group",
        timestamp: i64 = "timestamp",
        is_force: bool = "isForce",
        queue_id: Option<i32> = "queueId",
        offset: Option<i64> = "offset",
    }
}

command_header! {
    /// CLONE_GROUP_OFFSET (314).
    pub struct CloneGroupOffsetRequestHeader {
        src_group: String = "srcGroup",
        dest_group: String = "destGroup",
        topic: Option<String> = "topic",
        offline: bool = "offline",
    }
}

command_header! {
    /// CONSUME_MESSAGE_DIRECTLY (309), as mqadmin sends it to the broker (which adds
    /// `brokerName` and relays it to the client).
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
        msg_id: String = "msgId",
        broker_name: Option<String> = "brokerName",
    }
}

command_header! {
    /// GET_CONSUMER_RUNNING_INFO (307).
    pub struct GetConsumerRunningInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
        jstack_enable: bool = "jstackEnable",
    }
}

command_header! {
    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and GET_CONSUMER_STATUS_FROM_CLIENT (221).
    pub struct GetConsumerStatusRequestHeader {
        topic: String = "topic",
        group: String = "group",
        client_addr: Option<String> = "clientAddr",
    }
}

command_header! {
    /// END_TRANSACTION (37): `EndTransactionRequestHeader`. `commit_or_rollback` is the
    /// transaction type of `MessageSysFlag`: 0 unknown, 8 commit, 12 rollback.
    pub struct EndTransactionRequestHeader {
        topic: Option<String> = "topic",
        producer_group: String = "producerGroup",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        commit_or_rollback: i32 = "commitOrRollback",
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        msg_id: String = "msgId",
        transaction_id: Option<String> = "transactionId",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    /// CHECK_TRANSACTION_STATE (39), broker to producer: `CheckTransactionStateRequestHeader`.
    pub struct CheckTransactionStateRequestHeader {
        topic: Option<String> = "topic",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        offset_msg_id: Option<String> = "offsetMsgId",
        broker_name: Option<String> = "bname",
    }
}
