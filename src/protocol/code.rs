//! Request and response codes (`RequestCode.java`, `ResponseCode.java`,
//! `RemotingSysResponseCode.java`).
//!
//! Codes are newtypes over `i32` with named constants rather than enums, so a code this build does
//! not know still survives a decode and can be answered with REQUEST_CODE_NOT_SUPPORTED.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use std::fmt;

macro_rules! code_type {
    ($(#[$meta:meta])* $name:ident { $($konst:ident = $value:expr,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub i32);

        impl $name {
            $(pub const $konst: Self = Self($value);)*

            /// The Java constant name, or `None` for a code this build does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($konst)),)*
                    _ => None,
                }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}({})", n, self.0),
                    None => write!(f, "{}", self.0),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }
    };
}

code_type! {
    /// A request code (`RequestCode.java`, 5.x values).
    RequestCode {
        SEND_MESSAGE = 10,
        PULL_MESSAGE = 11,
        QUERY_MESSAGE = 12,
        QUERY_CONSUMER_OFFSET = 14,
        UPDATE_CONSUMER_OFFSET = 15,
        UPDATE_AND_CREATE_TOPIC = 17,
        GET_ALL_TOPIC_CONFIG = 21,
        UPDATE_BROKER_CONFIG = 25,
        GET_BROKER_CONFIG = 26,
        GET_BROKER_RUNTIME_INFO = 28,
        SEARCH_OFFSET_BY_TIMESTAMP = 29,
        GET_MAX_OFFSET = 30,
        GET_MIN_OFFSET = 31,
        GET_EARLIEST_MSG_STORETIME = 32,
        VIEW_MESSAGE_BY_ID = 33,
        HEART_BEAT = 34,
        UNREGISTER_CLIENT = 35,
        CONSUMER_SEND_MSG_BACK = 36,
        END_TRANSACTION = 37,
        GET_CONSUMER_LIST_BY_GROUP = 38,
        CHECK_TRANSACTION_STATE = 39,
        NOTIFY_CONSUMER_IDS_CHANGED = 40,
        LOCK_BATCH_MQ = 41,
        UNLOCK_BATCH_MQ = 42,
        GET_ALL_CONSUMER_OFFSET = 43,
        GET_ALL_DELAY_OFFSET = 45,
        GET_TIMER_CHECK_POINT = 60,
        CHECK_CLIENT_CONFIG = 46,
        PUT_KV_CONFIG = 100,
        GET_KV_CONFIG = 101,
        DELETE_KV_CONFIG = 102,
        REGISTER_BROKER = 103,
        UNREGISTER_BROKER = 104,
        GET_ROUTEINFO_BY_TOPIC = 105,
        GET_BROKER_CLUSTER_INFO = 106,
        UPDATE_AND_CREATE_ACL_CONFIG = 50,
        DELETE_ACL_CONFIG = 51,
        GET_BROKER_CLUSTER_ACL_INFO = 52,
        UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53,
        GET_BROKER_CLUSTER_ACL_CONFIG = 54,
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200,
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201,
        GET_TOPIC_STATS_INFO = 202,
        GET_CONSUMER_CONNECTION_LIST = 203,
        GET_PRODUCER_CONNECTION_LIST = 204,
        WIPE_WRITE_PERM_OF_BROKER = 205,
        GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
        DELETE_SUBSCRIPTIONGROUP = 207,
        GET_CONSUME_STATS = 208,
        DELETE_TOPIC_IN_BROKER = 215,
        DELETE_TOPIC_IN_NAMESRV = 216,
        REGISTER_TOPIC_IN_NAMESRV = 217,
        GET_KVLIST_BY_NAMESPACE = 219,
        RESET_CONSUMER_CLIENT_OFFSET = 220,
        GET_CONSUMER_STATUS_FROM_CLIENT = 221,
        INVOKE_BROKER_TO_RESET_OFFSET = 222,
        INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223,
        GET_TOPICS_BY_CLUSTER = 224,
        QUERY_TOPIC_CONSUME_BY_WHO = 300,
        GET_SYSTEM_TOPIC_LIST_FROM_NS = 304,
        GET_CONSUMER_RUNNING_INFO = 307,
        CONSUME_MESSAGE_DIRECTLY = 309,
        SEND_MESSAGE_V2 = 310,
        GET_UNIT_TOPIC_LIST = 311,
        GET_HAS_UNIT_SUB_TOPIC_LIST = 312,
        GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313,
        CLONE_GROUP_OFFSET = 314,
        UPDATE_NAMESRV_CONFIG = 318,
        GET_NAMESRV_CONFIG = 319,
        SEND_BATCH_MESSAGE = 320,
        QUERY_DATA_VERSION = 322,
        ADD_WRITE_PERM_OF_BROKER = 327,
        GET_TOPIC_CONFIG = 351,
        LITE_PULL_MESSAGE = 361,
        QUERY_ASSIGNMENT = 400,
        SET_MESSAGE_REQUEST_MODE = 401,
        POP_MESSAGE = 200050,
        ACK_MESSAGE = 200051,
        PEEK_MESSAGE = 200052,
        CHANGE_MESSAGE_INVISIBLETIME = 200053,
        NOTIFICATION = 200054,
        POLLING_INFO = 200055,
        BATCH_ACK_MESSAGE = 200151,
        GET_BROKER_MEMBER_GROUP = 901,
        BROKER_HEARTBEAT = 904,
    }
}

code_type! {
    /// A response code (`RemotingSysResponseCode` 0–4 and `ResponseCode`, 5.x values).
    ResponseCode {
        SUCCESS = 0,
        SYSTEM_ERROR = 1,
        SYSTEM_BUSY = 2,
        REQUEST_CODE_NOT_SUPPORTED = 3,
        FLUSH_DISK_TIMEOUT = 10,
        SLAVE_NOT_AVAILABLE = 11,
        FLUSH_SLAVE_TIMEOUT = 12,
        MESSAGE_ILLEGAL = 13,
        SERVICE_NOT_AVAILABLE = 14,
        VERSION_NOT_SUPPORTED = 15,
        NO_PERMISSION = 16,
        TOPIC_NOT_EXIST = 17,
        PULL_NOT_FOUND = 19,
        PULL_RETRY_IMMEDIATELY = 20,
        PULL_OFFSET_MOVED = 21,
        QUERY_NOT_FOUND = 22,
        SUBSCRIPTION_PARSE_FAILED = 23,
        SUBSCRIPTION_NOT_EXIST = 24,
        SUBSCRIPTION_NOT_LATEST = 25,
        SUBSCRIPTION_GROUP_NOT_EXIST = 26,
        FILTER_DATA_NOT_EXIST = 27,
        FILTER_DATA_NOT_LATEST = 28,
        INVALID_PARAMETER = 29,
        CONSUMER_NOT_ONLINE = 206,
        CONSUME_MSG_TIMEOUT = 207,
        ILLEGAL_OPERATION = 604,
    }
}

/// The ACL 1.0 failure codes share their values with 5.x's POLLING_FULL, POLLING_TIMEOUT and
/// BROKER_NOT_EXIST, so they stand outside the named table.
impl ResponseCode {
    pub const UPDATE_AND_CREATE_ACL_CONFIG_FAILED: Self = Self(209);
    pub const DELETE_ACL_CONFIG_FAILED: Self = Self(210);
    pub const UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED: Self = Self(211);
    /// 5.x POP: no checkpoint matches an ack's or change's handle.
    pub const NO_MESSAGE: Self = Self(208);
    /// 5.x POP: too many pops of the group and topic are held.
    pub const POLLING_FULL: Self = Self(209);
    /// 5.x POP: a held pop found nothing.
    pub const POLLING_TIMEOUT: Self = Self(210);
}

impl From<i32> for RequestCode {
    fn from(v: i32) -> Self {
        Self(v)
    }
}

impl From<i32> for ResponseCode {
    fn from(v: i32) -> Self {
        Self(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_codes_format() {
        assert_eq!(RequestCode::GET_ROUTEINFO_BY_TOPIC.0, 105);
        assert_eq!(RequestCode(105).name(), Some("GET_ROUTEINFO_BY_TOPIC"));
        assert_eq!(format!("{}", RequestCode(9999)), "9999");
        assert_eq!(format!("{}", ResponseCode::TOPIC_NOT_EXIST), "TOPIC_NOT_EXIST(17)");
    }
}
