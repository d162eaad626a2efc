//! The `Status` every answer carries (Java's `ResponseBuilder`): bad input and refusals go in
//! it, never as a gRPC error (only UNIMPLEMENTED and a Telemetry stream without pub/sub
//! settings are gRPC errors), and the core's refusals mapped to the v2 codes.
//!
//! May import: `core` (the outcome table), `grpc::pb`.

use super::pb::{Code, Status};
use crate::core::{Outcome, Refusal};

/// A refused request: the v2 code and why.
#[derive(Debug, Clone)]
pub struct Refused {
    pub code: Code,
    pub why: String,
}

impl Refused {
    pub fn new(code: Code, why: impl Into<String>) -> Self {
        Self { code, why: why.into() }
    }

    pub fn status(&self) -> Status {
        Status { code: self.code as i32, message: self.why.clone() }
    }
}

/// `Code.OK` with its name as the message, as Java answers.
pub fn ok() -> Status {
    status(Code::Ok)
}

/// A status whose message is the code's name.
pub fn status(code: Code) -> Status {
    Status { code: code as i32, message: code.as_str_name().to_owned() }
}

/// The core's refusal as the gRPC door answers it (Java's proxy maps the broker's response
/// codes the same way: TOPIC_NOT_EXIST -> TOPIC_NOT_FOUND, NO_PERMISSION -> FORBIDDEN,
/// SYSTEM_BUSY -> TOO_MANY_REQUESTS, flush/slave timeouts -> *_PERSISTENCE_TIMEOUT).
pub fn of_refusal(r: Refusal) -> Refused {
    let code = match r.outcome {
        Outcome::BrokerNotWritable | Outcome::SendForbidden | Outcome::TopicNotWritable => Code::Forbidden,
        Outcome::IllegalTopic => Code::IllegalTopic,
        Outcome::QueueIllegal => Code::BadRequest,
        Outcome::TopicNotExist => Code::TopicNotFound,
        Outcome::Busy => Code::TooManyRequests,
        Outcome::NotEnoughReplicas | Outcome::SlaveLostAfterAppend => Code::HaNotAvailable,
        Outcome::FlushTimeout => Code::MasterPersistenceTimeout,
        Outcome::SlaveTimeout => Code::SlavePersistenceTimeout,
        Outcome::MessageIllegal => Code::MessageCorrupted,
        Outcome::StoreUnavailable | Outcome::StoreFailed => Code::InternalServerError,
    };
    Refused::new(code, r.why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_a_code_that_is_not_ok() {
        for o in Outcome::ALL {
            let r = of_refusal(Refusal::new(o, "x"));
            assert_ne!(r.code, Code::Ok, "{o:?}");
            assert_eq!(r.status().message, "x");
        }
    }
}
