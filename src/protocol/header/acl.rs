//! Headers of the ACL 1.0 admin requests (`CreateAccessConfigRequestHeader`,
//! `DeleteAccessConfigRequestHeader`, `UpdateGlobalWhiteAddrsConfigRequestHeader`,
//! `GetBrokerAclConfigResponseHeader`) and the names of the signature fields every signed request
//! carries (`SessionCredentials`).
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use super::command_header;

/// `SessionCredentials.ACCESS_KEY`.
pub const ACCESS_KEY: &str = "AccessKey";
/// `SessionCredentials.SIGNATURE`.
pub const SIGNATURE: &str = "Signature";
/// `MixAll.UNIQUE_MSG_QUERY_FLAG`: left out of the signed content for clients up to 4.9.3.
pub const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

command_header! {
    /// UPDATE_AND_CREATE_ACL_CONFIG (50). `topicPerms`/`groupPerms` are comma-separated
    /// `Res=Perm` lists, read from the ext fields as they are (an empty one clears the list).
    pub struct CreateAccessConfigRequestHeader {
        access_key: String = "accessKey",
        secret_key: Option<String> = "secretKey",
        white_remote_address: Option<String> = "whiteRemoteAddress",
        default_topic_perm: Option<String> = "defaultTopicPerm",
        default_group_perm: Option<String> = "defaultGroupPerm",
        admin: bool = "admin",
    }
}

command_header! {
    /// DELETE_ACL_CONFIG (51).
    pub struct DeleteAccessConfigRequestHeader {
        access_key: String = "accessKey",
    }
}

command_header! {
    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).
    pub struct UpdateGlobalWhiteAddrsConfigRequestHeader {
        global_white_addrs: String = "globalWhiteAddrs",
        acl_file_full_path: Option<String> = "aclFileFullPath",
    }
}

command_header! {
    /// GET_BROKER_CLUSTER_ACL_INFO (52) response.
    pub struct GetBrokerAclConfigResponseHeader {
        version: String = "version",
        all_acl_file_version: String = "allAclFileVersion",
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
    }
}
