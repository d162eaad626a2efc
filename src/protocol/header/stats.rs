//! Headers of the statistics and group queries (`AdminBrokerProcessor`).
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use super::command_header;

command_header! {
    /// VIEW_BROKER_STATS_DATA (315): `ViewBrokerStatsDataRequestHeader`.
    pub struct ViewBrokerStatsDataRequestHeader {
        stats_name: String = "statsName",
        stats_key: String = "statsKey",
    }
}

command_header! {
    /// GET_BROKER_CONSUME_STATS (317): `GetConsumeStatsInBrokerHeader` (only the groups'
    /// ordered topics when `isOrder`).
    pub struct GetConsumeStatsInBrokerHeader {
        is_order: bool = "isOrder",
    }
}

command_header! {
    /// QUERY_TOPICS_BY_CONSUMER (343) and GET_SUBSCRIPTIONGROUP_CONFIG (352).
    pub struct GroupHeader {
        group: String = "group",
    }
}

command_header! {
    /// QUERY_SUBSCRIPTION_BY_CONSUMER (345) and QUERY_CONSUME_TIME_SPAN (303).
    pub struct GroupTopicHeader {
        group: String = "group",
        topic: String = "topic",
    }
}

command_header! {
    /// RESET_MASTER_FLUSH_OFFSET (908): `ResetMasterFlushOffsetHeader`.
    pub struct ResetMasterFlushOffsetHeader {
        master_flush_offset: Option<i64> = "masterFlushOffset",
    }
}
