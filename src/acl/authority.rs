//! What a peer that proved who it is by other means than a RocketMQ signature (Kafka's SASL) may
//! do: the same accounts, addresses and permissions as [`Acl::validate`], with no wire type.
//!
//! ```text
//! authority(access_key?, host):
//!   host in globalWhiteRemoteAddresses           -> Unrestricted  (Java: no check at all)
//!   no access key                                -> Refused("No accessKey is configured")
//!   unknown access key (deleted since login)     -> Refused("No acl config for <ak>")
//!   host in the account's whiteRemoteAddress     -> Unrestricted  (Java skips the permission check)
//!   otherwise                                    -> Account: topic/group permissions, admin flag
//! ```
//! Groups are checked as Java does, on the group's retry topic (`%RETRY%<group>`), so the
//! account's `groupPerms` and `defaultGroupPerm` apply.
//!
//! Imports `model` (group naming) only.

use std::sync::Arc;

use super::perm::{self, Account};
use super::{Acl, TRACE_TOPIC};
use crate::model::group::retry_topic;

/// What one authenticated peer may do, looked up once per request (a reload applies to the
/// next request).
#[derive(Debug, Clone)]
pub enum Authority {
    /// A white address: every request.
    Unrestricted,
    /// The account's permissions.
    Account(Arc<Account>),
    /// Nothing (the account is gone): the reason.
    Refused(String),
}

impl Acl {
    /// The account of `access_key`, for a protocol that checks its secret itself.
    pub fn account(&self, access_key: &str) -> Option<Arc<Account>> {
        self.tables().accounts.get(access_key).map(|(a, _)| a.clone())
    }

    /// Whether `host` is in `globalWhiteRemoteAddresses`.
    pub fn globally_white(&self, host: &str) -> bool {
        self.tables().global_white.iter().any(|r| r.matches(host))
    }

    /// What `access_key` (authenticated by the caller) may do from `host`.
    pub fn authority(&self, access_key: Option<&str>, host: &str) -> Authority {
        if self.globally_white(host) {
            return Authority::Unrestricted;
        }
        let Some(ak) = access_key else { return Authority::Refused("No accessKey is configured".into()) };
        match self.account(ak) {
            None => Authority::Refused(format!("No acl config for {ak}")),
            Some(a) if a.white.matches(host) => Authority::Unrestricted,
            Some(a) => Authority::Account(a),
        }
    }
}

impl Authority {
    /// Whether a topic may be used with `need` (`perm::PUB`, `perm::SUB`, `perm::ANY`).
    pub fn topic(&self, topic: &str, need: u8) -> Result<(), String> {
        if topic == TRACE_TOPIC && need == perm::PUB {
            return Ok(());
        }
        self.resource(topic.to_owned(), need)
    }

    /// Whether a group may be used with `need`, by its `groupPerms` entry.
    pub fn group(&self, group: &str, need: u8) -> Result<(), String> {
        self.resource(retry_topic(group), need)
    }

    /// Whether the account is an admin (or the peer is white).
    pub fn admin(&self) -> Result<(), String> {
        match self {
            Self::Unrestricted => Ok(()),
            Self::Account(a) if a.admin => Ok(()),
            Self::Account(a) => Err(format!("Need admin permission, but accessKey={} is not", a.access_key)),
            Self::Refused(why) => Err(why.clone()),
        }
    }

    /// Whether the peer is white or an admin: no resource check will refuse it.
    pub fn is_unrestricted(&self) -> bool {
        match self {
            Self::Unrestricted => true,
            Self::Account(a) => a.admin && a.perms.is_none(),
            Self::Refused(_) => false,
        }
    }

    fn resource(&self, resource: String, need: u8) -> Result<(), String> {
        match self {
            Self::Unrestricted => Ok(()),
            // Code 0 is no admin-only request code: only the resource is checked.
            Self::Account(a) => a.check_perms(0, &[(resource, need)]),
            Self::Refused(why) => Err(why.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(yaml: &str) -> (tempfile::TempDir, Acl) {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("conf")).unwrap();
        std::fs::write(home.path().join("conf/plain_acl.yml"), yaml).unwrap();
        let acl = Acl::open(home.path()).unwrap();
        (home, acl)
    }

    #[test]
    fn accounts_addresses_and_permissions() {
        let (_home, acl) = acl(
            "globalWhiteRemoteAddresses: ['10.1.1.*']\naccounts:\n  - accessKey: producer1\n    secretKey: secret123\n    whiteRemoteAddress: 10.2.2.2\n    defaultTopicPerm: DENY\n    defaultGroupPerm: DENY\n    topicPerms: ['t1=PUB']\n    groupPerms: ['g1=SUB']\n  - accessKey: admin123\n    secretKey: secret456\n    admin: true\n",
        );
        assert!(matches!(acl.authority(None, "10.1.1.7"), Authority::Unrestricted));
        assert!(matches!(acl.authority(Some("producer1"), "10.2.2.2"), Authority::Unrestricted));
        assert!(matches!(acl.authority(None, "127.0.0.1"), Authority::Refused(_)));
        assert_eq!(
            acl.authority(Some("nobody12"), "127.0.0.1").topic("t1", perm::PUB).unwrap_err(),
            "No acl config for nobody12"
        );
        let p = acl.authority(Some("producer1"), "127.0.0.1");
        assert!(p.topic("t1", perm::PUB).is_ok());
        assert!(p.topic("t1", perm::SUB).is_err());
        assert!(p.topic("t1", perm::ANY).is_ok());
        assert!(p.topic("other", perm::ANY).is_err());
        assert!(p.topic(TRACE_TOPIC, perm::PUB).is_ok());
        assert!(p.group("g1", perm::SUB).is_ok());
        assert_eq!(p.group("g2", perm::SUB).unwrap_err(), "No default permission for group:g2");
        assert!(p.admin().is_err());
        assert!(!p.is_unrestricted());
        let a = acl.authority(Some("admin123"), "127.0.0.1");
        assert!(a.admin().is_ok() && a.is_unrestricted() && a.topic("x", perm::PUB).is_ok());
    }
}
