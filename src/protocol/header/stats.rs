//! Headers of the statistics requests (`AdminBrokerProcessor`).
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
