//! Headers of the NameServer requests (`org.apache.rocketmq.remoting.protocol.header.namesrv`).
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use super::command_header;

command_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105), `GetRouteInfoRequestHeader`.
    pub struct GetRouteInfoRequestHeader {
        topic: String = "topic",
        accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
    }
}

command_header! {
    /// REGISTER_BROKER (103), `RegisterBrokerRequestHeader`.
    pub struct RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: Option<String> = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        enable_acting_master: Option<bool> = "enableActingMaster",
        compressed: bool = "compressed",
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

command_header! {
    /// REGISTER_BROKER response, `RegisterBrokerResponseHeader`.
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> = "haServerAddr",
        master_addr: Option<String> = "masterAddr",
    }
}

command_header! {
    /// UNREGISTER_BROKER (104) and QUERY_DATA_VERSION (322) share these fields.
    pub struct BrokerIdentityHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// QUERY_DATA_VERSION response, `QueryDataVersionResponseHeader`.
    pub struct QueryDataVersionResponseHeader {
        changed: bool = "changed",
    }
}

command_header! {
    /// BROKER_HEARTBEAT (904), `BrokerHeartbeatRequestHeader` (the fields the NameServer reads).
    pub struct BrokerHeartbeatRequestHeader {
        cluster_name: String = "clusterName",
        broker_addr: String = "brokerAddr",
        broker_name: String = "brokerName",
        broker_id: Option<i64> = "brokerId",
        heartbeat_timeout_mills: Option<i64> = "heartbeatTimeoutMills",
    }
}

command_header! {
    /// PUT_KV_CONFIG (100), `PutKVConfigRequestHeader`.
    pub struct PutKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
        value: String = "value",
    }
}

command_header! {
    /// GET_KV_CONFIG (101) / DELETE_KV_CONFIG (102).
    pub struct KvConfigKeyHeader {
        namespace: String = "namespace",
        key: String = "key",
    }
}

command_header! {
    /// GET_KV_CONFIG response, `GetKVConfigResponseHeader`.
    pub struct GetKvConfigResponseHeader {
        value: Option<String> = "value",
    }
}

command_header! {
    /// GET_KVLIST_BY_NAMESPACE (219).
    pub struct GetKvListByNamespaceRequestHeader {
        namespace: String = "namespace",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_NAMESRV (216), `DeleteTopicFromNamesrvRequestHeader`.
    pub struct DeleteTopicFromNamesrvRequestHeader {
        topic: String = "topic",
        cluster_name: Option<String> = "clusterName",
    }
}

command_header! {
    /// GET_TOPICS_BY_CLUSTER (224).
    pub struct GetTopicsByClusterRequestHeader {
        cluster: String = "cluster",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) / ADD_WRITE_PERM_OF_BROKER (327).
    pub struct BrokerNameHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER response.
    pub struct WipeWritePermOfBrokerResponseHeader {
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

command_header! {
    /// ADD_WRITE_PERM_OF_BROKER response.
    pub struct AddWritePermOfBrokerResponseHeader {
        add_topic_count: i32 = "addTopicCount",
    }
}

command_header! {
    /// REGISTER_TOPIC_IN_NAMESRV (217), `RegisterTopicRequestHeader`.
    pub struct RegisterTopicRequestHeader {
        topic: String = "topic",
    }
}
