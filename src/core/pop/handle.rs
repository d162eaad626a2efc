//! The receipt handle of a popped message: Java's `ExtraInfoUtil` string, the `POP_CK` property
//! a remoting client sends back in ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME `extraInfo`:
//!
//! ```text
//!   ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId [queueOffset]
//!   (separated by one space, MessageConst.KEY_SEPARATOR; retry: 0 normal, 1 %RETRY%g_t, 2 %RETRY%g+t)
//! ```
//!
//! The string comes from the network: [`Handle::parse`] refuses anything it cannot read (any
//! input parses or is refused, never panics; fuzzed below). It proves nothing by itself: the
//! checkpoint it names must exist in the [`PopTable`](super::state::PopTable).
//!
//! May import: nothing outside `core::pop`.

use std::fmt;

/// Longest handle accepted (a real one is well under 200 bytes).
pub const MAX_HANDLE_LEN: usize = 512;
/// Longest broker name in a handle (`model::name` topic limit).
const MAX_BROKER_NAME: usize = 127;

/// Which topic a popped message was read from (the handle's fifth field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMark {
    /// The topic asked for.
    Normal,
    /// `%RETRY%{group}_{topic}`.
    RetryV1,
    /// `%RETRY%{group}+{topic}` (enableRetryTopicV2).
    RetryV2,
}

impl TopicMark {
    fn code(self) -> &'static str {
        match self {
            TopicMark::Normal => "0",
            TopicMark::RetryV1 => "1",
            TopicMark::RetryV2 => "2",
        }
    }

    /// The mark of a stored topic name (`ExtraInfoUtil.getRetry`).
    pub fn of(topic: &str) -> Self {
        if topic.starts_with(crate::model::group::RETRY_GROUP_TOPIC_PREFIX) {
            if topic.contains('+') {
                TopicMark::RetryV2
            } else {
                TopicMark::RetryV1
            }
        } else {
            TopicMark::Normal
        }
    }

    /// The `retry` column of `startOffsetInfo` / `msgOffsetInfo`.
    pub fn as_str(self) -> &'static str {
        self.code()
    }
}

/// A parsed receipt handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// First queue offset of the checkpoint (the pop's start offset).
    pub ck_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub mark: TopicMark,
    pub broker_name: String,
    pub queue_id: i32,
    /// The message's own queue offset (absent in pre-5.x handles: the request's offset is used).
    pub queue_offset: Option<i64>,
}

/// Why a handle was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    #[error("receipt handle is too long")]
    TooLong,
    #[error("receipt handle has {0} fields, at least 7 expected")]
    Fields(usize),
    #[error("receipt handle field {0} is not valid")]
    Field(&'static str),
}

impl Handle {
    /// Reads a handle; refuses any string that is not one (never panics).
    pub fn parse(s: &str) -> Result<Self, HandleError> {
        if s.len() > MAX_HANDLE_LEN {
            return Err(HandleError::TooLong);
        }
        // Java reads the first 7 or 8 fields and ignores the rest: the 5.x proxy's handles
        // (`ReceiptHandle.encode`) carry the message's CommitLog offset as a 9th.
        let parts: Vec<&str> = s.split(' ').collect();
        if parts.len() < 7 {
            return Err(HandleError::Fields(parts.len()));
        }
        let num = |i: usize, name: &'static str| -> Result<i64, HandleError> {
            parts[i].parse::<i64>().ok().filter(|v| *v >= 0).ok_or(HandleError::Field(name))
        };
        let small = |i: usize, name: &'static str| -> Result<i32, HandleError> {
            parts[i].parse::<i32>().ok().filter(|v| *v >= 0).ok_or(HandleError::Field(name))
        };
        let mark = match parts[4] {
            "0" => TopicMark::Normal,
            "1" => TopicMark::RetryV1,
            "2" => TopicMark::RetryV2,
            _ => return Err(HandleError::Field("retry")),
        };
        let broker_name = parts[5];
        let name_ok = !broker_name.is_empty()
            && broker_name.len() <= MAX_BROKER_NAME
            && broker_name.bytes().all(|b| b.is_ascii_graphic());
        if !name_ok {
            return Err(HandleError::Field("brokerName"));
        }
        Ok(Handle {
            ck_offset: num(0, "ckQueueOffset")?,
            pop_time: num(1, "popTime")?,
            invisible_time: num(2, "invisibleTime")?,
            revive_qid: small(3, "reviveQid")?,
            mark,
            broker_name: broker_name.to_owned(),
            queue_id: small(6, "queueId")?,
            queue_offset: if parts.len() >= 8 { Some(num(7, "queueOffset")?) } else { None },
        })
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.ck_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.mark.code(),
            self.broker_name,
            self.queue_id
        )?;
        if let Some(o) = self.queue_offset {
            write!(f, " {o}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_java_handle_round_trips() {
        let s = "12 1700000000000 60000 0 1 broker-a 3 14";
        let h = Handle::parse(s).unwrap();
        assert_eq!(h.ck_offset, 12);
        assert_eq!(h.mark, TopicMark::RetryV1);
        assert_eq!(h.queue_id, 3);
        assert_eq!(h.queue_offset, Some(14));
        assert_eq!(h.to_string(), s);
        assert!(Handle::parse("12 1 2 0 0 b 3").unwrap().queue_offset.is_none());
    }

    #[test]
    fn the_java_proxys_handle_with_a_commit_log_offset_is_read() {
        // ReceiptHandle.encode (proxy 5.3.3): ... queueOffset commitLogOffset
        let h = Handle::parse("12 1700000000000 60000 0 0 broker-a 3 14 51234").unwrap();
        assert_eq!((h.queue_id, h.queue_offset), (3, Some(14)));
        assert_eq!(h.to_string(), "12 1700000000000 60000 0 0 broker-a 3 14");
    }

    #[test]
    fn malformed_handles_are_refused() {
        for bad in [
            "",
            "1 2 3",
            "a 2 3 0 0 b 1 1",
            "1 2 3 0 9 b 1 1",
            "1 2 3 0 0  1 1",
            "-1 2 3 0 0 b 1 1",
            "1 2 3 0 0 b 99999999999 1",
            "1 2 3 0 0 b 1 x",
        ] {
            assert!(Handle::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Handle::parse(&"1 ".repeat(400)), Err(HandleError::TooLong));
    }

    #[test]
    fn marks_follow_the_topic_name() {
        assert_eq!(TopicMark::of("T"), TopicMark::Normal);
        assert_eq!(TopicMark::of("%RETRY%g_T"), TopicMark::RetryV1);
        assert_eq!(TopicMark::of("%RETRY%g+T"), TopicMark::RetryV2);
    }

    proptest! {
        #[test]
        fn any_string_parses_or_is_refused(s in ".{0,600}") {
            if let Ok(h) = Handle::parse(&s) {
                prop_assert_eq!(Handle::parse(&h.to_string()), Ok(h));
            }
        }

        #[test]
        fn any_field_mix_parses_or_is_refused(fields in proptest::collection::vec("[-0-9a-z+%]{0,21}", 0..10)) {
            let s = fields.join(" ");
            let _ = Handle::parse(&s);
        }
    }
}
