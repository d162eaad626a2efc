//! What can go wrong on the shared paths, and the one table that turns each outcome into a
//! RocketMQ response code and a Kafka error code. The front ends translate with [`Outcome::codes`]
//! and never decide a code themselves for these cases.
//!
//! The numbers are the protocols' own (RocketMQ `ResponseCode`, Kafka `Errors`): `core` imports
//! neither codec, so each front end has a test that the numbers equal its named constants.
//!
//! ```text
//! outcome                  RocketMQ                      Kafka
//! BrokerNotWritable        NO_PERMISSION (16)            NOT_LEADER_OR_FOLLOWER (6)
//! SendForbidden            NO_PERMISSION (16)            TOPIC_AUTHORIZATION_FAILED (29)
//! IllegalTopic             INVALID_PARAMETER (29)        INVALID_TOPIC_EXCEPTION (17)
//! TopicNotExist            TOPIC_NOT_EXIST (17)          UNKNOWN_TOPIC_OR_PARTITION (3)
//! TopicNotWritable         NO_PERMISSION (16)            NOT_LEADER_OR_FOLLOWER (6)
//! QueueIllegal             INVALID_PARAMETER (29)        UNKNOWN_TOPIC_OR_PARTITION (3)
//! Busy                     SYSTEM_BUSY (2)               REQUEST_TIMED_OUT (7)
//! NotEnoughReplicas        SLAVE_NOT_AVAILABLE (11)      NOT_ENOUGH_REPLICAS (19)
//! FlushTimeout             FLUSH_DISK_TIMEOUT (10)       REQUEST_TIMED_OUT (7)
//! StoreUnavailable         SERVICE_NOT_AVAILABLE (14)    KAFKA_STORAGE_ERROR (56)
//! MessageIllegal           MESSAGE_ILLEGAL (13)          INVALID_RECORD (87)
//! StoreFailed              SYSTEM_ERROR (1)              UNKNOWN_SERVER_ERROR (-1)
//! SlaveLostAfterAppend     SLAVE_NOT_AVAILABLE (11)      NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)
//! SlaveTimeout             FLUSH_SLAVE_TIMEOUT (12)      REQUEST_TIMED_OUT (7)
//! ```
//! May import: `store` (its put statuses). Nothing of the front ends.

use crate::store::PutStatus;

/// One outcome of the shared append path other than success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    BrokerNotWritable,
    SendForbidden,
    IllegalTopic,
    TopicNotExist,
    TopicNotWritable,
    QueueIllegal,
    Busy,
    NotEnoughReplicas,
    FlushTimeout,
    StoreUnavailable,
    MessageIllegal,
    StoreFailed,
    SlaveLostAfterAppend,
    SlaveTimeout,
}

/// The code each protocol answers an outcome with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codes {
    pub remoting: i32,
    pub kafka: i16,
}

impl Outcome {
    /// Every outcome, for the front ends' tests.
    pub const ALL: [Outcome; 14] = [
        Self::BrokerNotWritable,
        Self::SendForbidden,
        Self::IllegalTopic,
        Self::TopicNotExist,
        Self::TopicNotWritable,
        Self::QueueIllegal,
        Self::Busy,
        Self::NotEnoughReplicas,
        Self::FlushTimeout,
        Self::StoreUnavailable,
        Self::MessageIllegal,
        Self::StoreFailed,
        Self::SlaveLostAfterAppend,
        Self::SlaveTimeout,
    ];

    /// The table (the module doc shows it).
    pub const fn codes(self) -> Codes {
        let (remoting, kafka) = match self {
            Self::BrokerNotWritable => (16, 6),
            Self::SendForbidden => (16, 29),
            Self::IllegalTopic => (29, 17),
            Self::TopicNotExist => (17, 3),
            Self::TopicNotWritable => (16, 6),
            Self::QueueIllegal => (29, 3),
            Self::Busy => (2, 7),
            Self::NotEnoughReplicas => (11, 19),
            Self::FlushTimeout => (10, 7),
            Self::StoreUnavailable => (14, 56),
            Self::MessageIllegal => (13, 87),
            Self::StoreFailed => (1, -1),
            Self::SlaveLostAfterAppend => (11, 20),
            Self::SlaveTimeout => (12, 7),
        };
        Codes { remoting, kafka }
    }

    /// The outcome of a store status other than `PutOk`.
    pub fn of_put(status: &PutStatus) -> Option<Refusal> {
        let (outcome, why) = match status {
            PutStatus::PutOk => return None,
            PutStatus::FlushDiskTimeout => (Self::FlushTimeout, "flush disk timeout".to_owned()),
            PutStatus::ServiceNotAvailable(why) => {
                (Self::StoreUnavailable, format!("service not available now: {why}"))
            }
            PutStatus::MessageIllegal(why) => (Self::MessageIllegal, format!("the message is illegal: {why}")),
            PutStatus::PropertiesSizeExceeded => {
                (Self::MessageIllegal, "the message properties exceed 32767 bytes".to_owned())
            }
            PutStatus::UnknownError(why) => (Self::StoreFailed, format!("store failed: {why}")),
        };
        Some(Refusal { outcome, why })
    }
}

/// An outcome with the remark a person can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub outcome: Outcome,
    pub why: String,
}

impl Refusal {
    pub fn new(outcome: Outcome, why: impl Into<String>) -> Self {
        Self { outcome, why: why.into() }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_status_but_ok_is_an_outcome() {
        assert_eq!(Outcome::of_put(&PutStatus::PutOk), None);
        let cases = [
            (PutStatus::FlushDiskTimeout, Outcome::FlushTimeout),
            (PutStatus::ServiceNotAvailable("disk full".into()), Outcome::StoreUnavailable),
            (PutStatus::MessageIllegal("too big".into()), Outcome::MessageIllegal),
            (PutStatus::PropertiesSizeExceeded, Outcome::MessageIllegal),
            (PutStatus::UnknownError("io".into()), Outcome::StoreFailed),
        ];
        for (status, outcome) in cases {
            assert_eq!(Outcome::of_put(&status).map(|r| r.outcome), Some(outcome), "{status:?}");
        }
    }

    #[test]
    fn no_outcome_is_answered_as_success_by_either_protocol() {
        for o in Outcome::ALL {
            assert_ne!(o.codes().remoting, 0, "{o:?}");
            assert_ne!(o.codes().kafka, 0, "{o:?}");
        }
    }
}
