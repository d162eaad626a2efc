//! Permissions (`Permission.java`) and one account of a `plain_acl.yml` (`PlainAccessConfig` as
//! `PlainPermissionManager.buildPlainAccessResource` reads it).
//!
//! ```text
//! DENY = 1   ANY = 2   PUB = 4   SUB = 8
//! "PUB" | "SUB" | "PUB|SUB" | "SUB|PUB" | "DENY"; anything else (or absent) is DENY
//! topicPerms:  ["topicA=PUB|SUB", ...]     groupPerms: ["groupA=SUB", ...]  (kept as %RETRY%groupA)
//! ```
//!
//! May import: `model` and modules of `acl/`; the area's rule is its line in docs/architecture.md.

use std::collections::HashMap;

use super::address::AddressRule;
use crate::model::group::{retry_topic, RETRY_GROUP_TOPIC_PREFIX};

pub const DENY: u8 = 1;
pub const ANY: u8 = 1 << 1;
pub const PUB: u8 = 1 << 2;
pub const SUB: u8 = 1 << 3;

/// Request codes only an `admin` account may send (5.x `Permission.ADMIN_CODE`):
/// UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG, DELETE_TOPIC_IN_BROKER,
/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP, UPDATE_AND_CREATE_STATIC_TOPIC,
/// UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, GET_BROKER_CLUSTER_ACL_INFO; and, unlike
/// Java, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): Java lets any signed account set
/// `globalWhiteRemoteAddresses: ["*"]`, which switches ACL off for everybody; and the bulk
/// forms of 17 and 200 (UPDATE_AND_CREATE_TOPIC_LIST 18, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
/// 225) and the requests that delete stored data (CLEAN_EXPIRED_CONSUMEQUEUE 306,
/// CLEAN_UNUSED_TOPIC 316, DELETE_EXPIRED_COMMITLOG 329) or change how the store reads
/// (SET_COMMITLOG_READ_MODE 2004) or throttles cold reads (UPDATE_COLD_DATA_FLOW_CTR_CONFIG
/// 2001, REMOVE_COLD_DATA_FLOW_CTR_CONFIG 2002), which Java lets any account send.
pub const ADMIN_CODES: [i32; 18] =
    [17, 25, 215, 200, 207, 513, 50, 51, 52, 53, 18, 225, 306, 316, 329, 2004, 2001, 2002];

/// `Permission.parsePermFromString`.
pub fn parse_perm(s: Option<&str>) -> u8 {
    match s.map(str::trim) {
        Some("PUB") => PUB,
        Some("SUB") => SUB,
        Some("PUB|SUB" | "SUB|PUB") => PUB | SUB,
        _ => DENY,
    }
}

/// `Permission.checkPermission`.
pub fn check(needed: u8, owned: u8) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

/// `Permission.checkResourcePerms`: each entry is `Res=Perm` with a known permission.
pub fn check_resource_perms(entries: &[String]) -> Result<(), String> {
    for e in entries {
        let items: Vec<&str> = e.split('=').filter(|s| !s.is_empty()).collect();
        if items.len() != 2 {
            return Err(format!(
                "Parse Resource format error for {e}.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB"
            ));
        }
        if items[1].trim() != "DENY" && parse_perm(Some(items[1])) == DENY {
            return Err(format!(
                "Parse resource permission error for {e}.\nThe expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            ));
        }
    }
    Ok(())
}

/// An account's fields as written in the file (and in UPDATE_AND_CREATE_ACL_CONFIG).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AccountConfig {
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub white_remote_address: Option<String>,
    pub admin: bool,
    pub default_topic_perm: Option<String>,
    pub default_group_perm: Option<String>,
    pub topic_perms: Option<Vec<String>>,
    pub group_perms: Option<Vec<String>>,
}

impl AccountConfig {
    /// `checkPlainAccessConfig`: both keys present and longer than 6 characters. Java's message
    /// prints the secret key; this one says only whether there is one (it is logged and answered).
    pub fn check_keys(&self) -> Result<(), String> {
        let ak = self.access_key.as_deref();
        let sk = self.secret_key.as_deref();
        if ak.is_none_or(|k| k.chars().count() <= 6) || sk.is_none_or(|k| k.chars().count() <= 6) {
            return Err(format!(
                "The accessKey={} and secretKey={} cannot be null and length should longer than 6",
                ak.unwrap_or("null"),
                if sk.is_some() { REDACTED } else { "null" }
            ));
        }
        Ok(())
    }
}

/// What stands for a secret key wherever one would be printed.
pub const REDACTED: &str = "<redacted>";

/// Debug without the secret key, so that no `{:?}` can log it.
impl std::fmt::Debug for AccountConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountConfig")
            .field("access_key", &self.access_key)
            .field("secret_key", &self.secret_key.as_ref().map(|_| REDACTED))
            .field("white_remote_address", &self.white_remote_address)
            .field("admin", &self.admin)
            .field("default_topic_perm", &self.default_topic_perm)
            .field("default_group_perm", &self.default_group_perm)
            .field("topic_perms", &self.topic_perms)
            .field("group_perms", &self.group_perms)
            .finish()
    }
}

/// A loaded account, ready to check requests against.
#[derive(Clone)]
pub struct Account {
    pub access_key: String,
    pub secret_key: String,
    pub white: AddressRule,
    pub admin: bool,
    pub default_topic_perm: u8,
    pub default_group_perm: u8,
    /// Topic names and `%RETRY%group` names; `None` when the account lists neither.
    pub perms: Option<HashMap<String, u8>>,
}

/// Debug without the secret key.
impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("secret_key", &REDACTED)
            .field("white", &self.white)
            .field("admin", &self.admin)
            .field("default_topic_perm", &self.default_topic_perm)
            .field("default_group_perm", &self.default_group_perm)
            .field("perms", &self.perms)
            .finish()
    }
}

impl Account {
    /// `buildPlainAccessResource`.
    pub fn build(cfg: &AccountConfig) -> Result<Self, String> {
        cfg.check_keys()?;
        let mut perms: Option<HashMap<String, u8>> = None;
        for (is_topic, list) in [(false, &cfg.group_perms), (true, &cfg.topic_perms)] {
            for entry in list.iter().flatten() {
                let items: Vec<&str> = entry.split('=').filter(|s| !s.is_empty()).collect();
                let [name, perm] = items[..] else {
                    let kind = if is_topic { "topic" } else { "group" };
                    return Err(format!("Parse resource permission failed for {kind}:{entry}"));
                };
                let key = if is_topic { name.trim().to_owned() } else { retry_topic(name.trim()) };
                perms.get_or_insert_with(HashMap::new).insert(key, parse_perm(Some(perm)));
            }
        }
        Ok(Self {
            access_key: cfg.access_key.clone().unwrap_or_default(),
            secret_key: cfg.secret_key.clone().unwrap_or_default(),
            white: AddressRule::parse(cfg.white_remote_address.as_deref())?,
            admin: cfg.admin,
            default_topic_perm: parse_perm(cfg.default_topic_perm.as_deref()),
            default_group_perm: parse_perm(cfg.default_group_perm.as_deref()),
            perms,
        })
    }

    /// `PlainPermissionManager.checkPerm`: the error is Java's AclException message.
    pub fn check_perms(&self, code: i32, needed: &[(String, u8)]) -> Result<(), String> {
        if ADMIN_CODES.contains(&code) && !self.admin {
            return Err(format!(
                "Need admin permission for request code={code}, but accessKey={} is not",
                self.access_key
            ));
        }
        if needed.is_empty() || (self.perms.is_none() && self.admin) {
            return Ok(());
        }
        for (resource, need) in needed {
            let is_group = resource.starts_with(RETRY_GROUP_TOPIC_PREFIX);
            let owned = match self.perms.as_ref().and_then(|p| p.get(resource)) {
                Some(p) => *p,
                None if is_group => self.default_group_perm,
                None => self.default_topic_perm,
            };
            if !check(*need, owned) {
                let printed = match resource.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
                    Some(group) => format!("group:{group}"),
                    None => format!("topic:{resource}"),
                };
                return Err(format!("No default permission for {printed}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(admin: bool, topics: &[&str], groups: &[&str]) -> Account {
        Account::build(&AccountConfig {
            access_key: Some("RocketMQ".into()),
            secret_key: Some("12345678".into()),
            admin,
            default_topic_perm: Some("DENY".into()),
            default_group_perm: Some("SUB".into()),
            topic_perms: Some(topics.iter().map(|s| s.to_string()).collect()),
            group_perms: Some(groups.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn permission_bits_as_java() {
        assert!(check(PUB, PUB | SUB));
        assert!(!check(PUB, SUB));
        assert!(!check(SUB, DENY | SUB));
        assert!(check(ANY, SUB));
        assert_eq!(parse_perm(Some(" SUB|PUB ")), PUB | SUB);
        assert_eq!(parse_perm(Some("READ")), DENY);
        assert_eq!(parse_perm(None), DENY);
    }

    #[test]
    fn resources_fall_back_to_the_defaults() {
        let a = account(false, &["topicA=PUB", "topicB=SUB|PUB"], &["groupA=DENY"]);
        assert!(a.check_perms(310, &[("topicA".into(), PUB)]).is_ok());
        assert_eq!(a.check_perms(11, &[("topicA".into(), SUB)]).unwrap_err(), "No default permission for topic:topicA");
        assert_eq!(a.check_perms(310, &[("other".into(), PUB)]).unwrap_err(), "No default permission for topic:other");
        assert!(a.check_perms(11, &[("topicB".into(), SUB), (retry_topic("groupB"), SUB)]).is_ok());
        assert_eq!(
            a.check_perms(11, &[("topicB".into(), SUB), (retry_topic("groupA"), SUB)]).unwrap_err(),
            "No default permission for group:groupA"
        );
        assert_eq!(
            a.check_perms(17, &[]).unwrap_err(),
            "Need admin permission for request code=17, but accessKey=RocketMQ is not"
        );
    }

    #[test]
    fn an_admin_without_listed_resources_may_do_anything() {
        let admin = account(true, &[], &[]);
        assert!(admin.perms.is_none());
        assert!(admin.check_perms(17, &[("anything".into(), PUB)]).is_ok());
        let listed = account(true, &["t=SUB"], &[]);
        assert!(listed.check_perms(310, &[("other".into(), PUB)]).is_err(), "listed resources bind an admin too");
    }

    #[test]
    fn no_debug_form_prints_the_secret_key_and_53_needs_admin() {
        let a = account(false, &[], &[]);
        assert!(!format!("{a:?}").contains("12345678"), "{a:?}");
        let cfg = AccountConfig { secret_key: Some("12345678".into()), ..Default::default() };
        assert!(!format!("{cfg:?}").contains("12345678"), "{cfg:?}");
        let global_white = a.check_perms(53, &[]).unwrap_err();
        assert!(global_white.contains("Need admin permission for request code=53"), "{global_white}");
    }

    #[test]
    fn keys_and_entries_are_checked() {
        let short =
            AccountConfig { access_key: Some("abc".into()), secret_key: Some("12345678".into()), ..Default::default() };
        assert_eq!(
            Account::build(&short).unwrap_err(),
            "The accessKey=abc and secretKey=<redacted> cannot be null and length should longer than 6"
        );
        let none = AccountConfig { access_key: Some("abcdefgh".into()), ..Default::default() };
        assert!(Account::build(&none).unwrap_err().contains("secretKey=null"));
        let bad = AccountConfig {
            access_key: Some("RocketMQ".into()),
            secret_key: Some("12345678".into()),
            topic_perms: Some(vec!["topicA".into()]),
            ..Default::default()
        };
        assert_eq!(Account::build(&bad).unwrap_err(), "Parse resource permission failed for topic:topicA");
        assert!(check_resource_perms(&["a=READ".into()]).unwrap_err().contains("expected permissions"));
        assert!(check_resource_perms(&["a=DENY".into(), "b=PUB".into()]).is_ok());
    }
}
