//! EndTransaction (Java's `EndTransactionActivity`): the transaction id SendMessage answered a
//! half message with (its CommitLog and half-queue offsets, 32 hex digits) names the half
//! message; the broker checks it against the topic (a gRPC producer's group) and the message id
//! before it commits or rolls back ([`super::BrokerSide::end_transaction`]). A forged or stale
//! id ends nothing: INVALID_TRANSACTION_ID. An UNSPECIFIED resolution is answered OK and
//! changes nothing, as Java's UNKNOWN (the check service asks the producer later). An answer to
//! the check service (source SERVER_CHECK) is taken after the half message's check immunity
//! too, as Java's `fromTransactionCheck`.
//!
//! May import: `grpc`.

use super::pb::{Code, EndTransactionRequest, EndTransactionResponse, TransactionResolution, TransactionSource};
use super::status::{self, Refused};
use super::{validate, EndTxn, EndTxnError, Grpc};

/// A half message's transaction id: its CommitLog and half-queue offsets.
pub fn transaction_id(commit_log_offset: i64, queue_offset: i64) -> String {
    format!("{commit_log_offset:016X}{queue_offset:016X}")
}

/// The offsets of [`transaction_id`], or `None` for anything else.
pub fn parse_transaction_id(id: &str) -> Option<(i64, i64)> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (a, b) = id.split_at(16);
    Some((u64::from_str_radix(a, 16).ok()? as i64, u64::from_str_radix(b, 16).ok()? as i64))
}

pub async fn end_transaction(g: &Grpc, req: &EndTransactionRequest) -> EndTransactionResponse {
    let status = match end(g, req).await {
        Ok(()) => status::ok(),
        Err(r) => r.status(),
    };
    EndTransactionResponse { status: Some(status) }
}

async fn end(g: &Grpc, req: &EndTransactionRequest) -> Result<(), Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let invalid = || Refused::new(Code::InvalidTransactionId, "no such prepared transaction message");
    let (commit_log_offset, queue_offset) = parse_transaction_id(&req.transaction_id).ok_or_else(invalid)?;
    let commit = match TransactionResolution::try_from(req.resolution) {
        Ok(TransactionResolution::Commit) => true,
        Ok(TransactionResolution::Rollback) => false,
        _ => return Ok(()),
    };
    let end = EndTxn {
        commit_log_offset,
        queue_offset,
        producer_group: topic.to_owned(),
        message_id: req.message_id.clone(),
        commit,
        from_check: req.source == TransactionSource::SourceServerCheck as i32,
    };
    g.broker.end_transaction(end).await.map_err(|e| match e {
        EndTxnError::Unknown(_) => invalid(),
        EndTxnError::Failed(why) => Refused::new(Code::InternalServerError, why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_anything_else_is_refused() {
        for (c, q) in [(0, 0), (1 << 40, 7), (i64::MAX, 123_456)] {
            assert_eq!(parse_transaction_id(&transaction_id(c, q)), Some((c, q)));
        }
        for bad in ["", "xyz", &"0".repeat(31), &"g".repeat(32), &"0".repeat(33), "+000000000000000000000000000000F"] {
            assert_eq!(parse_transaction_id(bad), None, "{bad}");
        }
    }
}
