//! Topic and group names as every door takes them in (`TopicValidator`, `Validators.checkGroup`):
//! one set of rules, checked where a name enters (a send, a timer's or a delayed message's real
//! topic, a send-back's group, an admin request, a Kafka request, a heartbeat) and once more where
//! a name becomes a path (`is_path_component`), so that no name from the network leaves the store.
//!
//! ```text
//! topic   [%|a-zA-Z0-9_-]{1,127}     (%RETRY%<group> and %DLQ%<group>: up to 255, as Java's broker)
//! group   [%|a-zA-Z0-9_-]{1,120}     (so %RETRY%<group> stays within 127)
//! path    one component: not empty, not "." or "..", no '/', '\\' or NUL, at most 255 bytes
//! ```
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

use super::group::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};

/// `TopicValidator.TOPIC_MAX_LENGTH`.
pub const TOPIC_MAX_LENGTH: usize = 127;
/// A retry or dead-letter topic (`%RETRY%<group>`, `%DLQ%<group>`) may be longer.
pub const RETRY_TOPIC_MAX_LENGTH: usize = 255;
/// The longest group name: `%RETRY%` plus the group is still a topic of at most 127 characters.
pub const GROUP_MAX_LENGTH: usize = TOPIC_MAX_LENGTH - RETRY_GROUP_TOPIC_PREFIX.len();
/// The longest file name Linux file systems take.
const PATH_COMPONENT_MAX: usize = 255;

/// Why a name was refused; `Display` is Java's message where Java has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    Blank { what: &'static str },
    IllegalCharacters { what: &'static str, name: String },
    TooLong { what: &'static str, max: usize },
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Blank { what } => write!(f, "The specified {what} is blank."),
            Self::IllegalCharacters { what, name } => write!(
                f,
                "The specified {what}[{}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
                shown(name)
            ),
            Self::TooLong { what, max } => write!(f, "The specified {what} is longer than {what} max length {max}."),
        }
    }
}

impl std::error::Error for NameError {}

/// A name as it may appear in a log line or a remark: at most 160 characters, control
/// characters escaped (a hostile name must not forge log lines).
pub fn shown(name: &str) -> String {
    let mut out: String = name.chars().take(160).flat_map(char::escape_debug).collect();
    if name.chars().count() > 160 {
        out.push_str("...");
    }
    out
}

/// `TopicValidator.isTopicOrGroupIllegal`: only `[%|a-zA-Z0-9_-]`.
pub fn has_legal_characters(name: &str) -> bool {
    name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'%' | b'|' | b'_' | b'-'))
}

/// `TopicValidator.validateTopic`.
pub fn check_topic(topic: &str) -> Result<(), NameError> {
    check("topic", topic, topic_max_length(topic))
}

/// `Validators.checkGroup`, with the shorter limit of [`GROUP_MAX_LENGTH`].
pub fn check_group(group: &str) -> Result<(), NameError> {
    check("group", group, GROUP_MAX_LENGTH)
}

fn topic_max_length(topic: &str) -> usize {
    if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX) {
        RETRY_TOPIC_MAX_LENGTH
    } else {
        TOPIC_MAX_LENGTH
    }
}

fn check(what: &'static str, name: &str, max: usize) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::Blank { what });
    }
    if !has_legal_characters(name) {
        return Err(NameError::IllegalCharacters { what, name: name.to_owned() });
    }
    if name.len() > max {
        return Err(NameError::TooLong { what, max });
    }
    Ok(())
}

/// The store's last line of defence: `name` is one directory entry below the store's root. Kafka
/// topics may hold '.', so this is wider than [`check_topic`], but nothing in it can climb out.
pub fn is_path_component(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= PATH_COMPONENT_MAX
        && name != "."
        && name != ".."
        && !name.bytes().any(|c| c == b'/' || c == b'\\' || c == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_follow_java_rules() {
        assert!(check_topic("TopicTest").is_ok());
        assert!(check_topic("%RETRY%group_a").is_ok());
        assert!(check_topic("a|b%c-d_e").is_ok());
        assert_eq!(check_topic(""), Err(NameError::Blank { what: "topic" }));
        assert_eq!(check_topic("  "), Err(NameError::Blank { what: "topic" }));
        assert!(matches!(check_topic("../../outside"), Err(NameError::IllegalCharacters { .. })));
        assert!(matches!(check_topic("a.b"), Err(NameError::IllegalCharacters { .. })));
        assert!(matches!(check_topic("a/b"), Err(NameError::IllegalCharacters { .. })));
        assert!(matches!(check_topic("naïve"), Err(NameError::IllegalCharacters { .. })));
        assert!(check_topic(&"t".repeat(127)).is_ok());
        assert_eq!(check_topic(&"t".repeat(128)), Err(NameError::TooLong { what: "topic", max: 127 }));
        assert!(check_topic(&format!("%DLQ%{}", "g".repeat(200))).is_ok());
        assert!(check_topic(&format!("%DLQ%{}", "g".repeat(251))).is_err());
    }

    #[test]
    fn groups_leave_room_for_their_retry_topic() {
        assert_eq!(GROUP_MAX_LENGTH, 120);
        assert!(check_group(&"g".repeat(120)).is_ok());
        assert!(check_topic(&format!("%RETRY%{}", "g".repeat(120))).is_ok());
        assert_eq!(check_group(&"g".repeat(121)), Err(NameError::TooLong { what: "group", max: 120 }));
        assert!(check_group("../x").is_err());
        assert!(check_group("CID_ok-1").is_ok());
    }

    #[test]
    fn path_components_cannot_climb() {
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", "a\0b", &"x".repeat(256)] {
            assert!(!is_path_component(bad), "{bad:?}");
        }
        for good in ["T", "my.topic", "...", "%DLQ%g", "a..b"] {
            assert!(is_path_component(good), "{good:?}");
        }
    }

    #[test]
    fn shown_names_cannot_forge_log_lines() {
        assert_eq!(shown("a\nERROR b"), "a\\nERROR b");
        assert!(shown(&"x".repeat(500)).ends_with("..."));
    }
}
