//! The transaction coordinator's types (Kafka's `TransactionMetadata` and `TransactionState`):
//! one [`TxnMeta`] per transactional id, as `config/kafkaTransactions.json` holds it, and the
//! checks a transactional id passes. Transitions are `txn_coordinator.rs`'s.
//!
//! May import: `super::api::error`, serde.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::api::error;

/// Longest transactional id accepted (Kafka has no limit; ferrocket bounds it).
pub const MAX_ID_LEN: usize = 249;
/// Groups one transaction may add with AddOffsetsToTxn.
pub const MAX_GROUPS: usize = 64;
/// `TransactionMetadata.isEpochExhausted`: from here a new producer id is handed out.
pub const EPOCH_EXHAUSTED: i16 = i16::MAX - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    /// Kafka's state names (ListTransactions, DescribeTransactions, their filters).
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::PrepareCommit => "PrepareCommit",
            Self::PrepareAbort => "PrepareAbort",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
        }
    }

    pub const ALL: [TxnState; 6] = [
        Self::Empty,
        Self::Ongoing,
        Self::PrepareCommit,
        Self::PrepareAbort,
        Self::CompleteCommit,
        Self::CompleteAbort,
    ];

    pub fn preparing(self) -> bool {
        matches!(self, Self::PrepareCommit | Self::PrepareAbort)
    }
}

/// A partition of a transaction and the queue's end offset when it was added (a lower bound of
/// the transaction's first offset there, for `core.txn.begin` after a restart).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxnPartition {
    pub topic: String,
    pub partition: i32,
    pub start_offset: i64,
}

/// An offset TxnOffsetCommit left pending until the transaction commits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub metadata: String,
}

/// One transactional id's state (what `config/kafkaTransactions.json` holds per id).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxnMeta {
    pub producer_id: i64,
    /// The id before the last rotation (an exhausted epoch): a retried InitProducerId naming
    /// it is not fenced.
    pub prev_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last InitProducerId bump (a retry naming it gets the same answer).
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// When the current (or last) transaction started; -1 before the first.
    pub start_ms: i64,
    pub last_update_ms: i64,
    #[serde(default)]
    pub partitions: Vec<TxnPartition>,
    #[serde(default)]
    pub groups: BTreeSet<String>,
    #[serde(default)]
    pub offsets: Vec<PendingOffset>,
    /// A completion (markers being written) is under way. Not persisted.
    #[serde(skip)]
    pub completing: bool,
    /// Transactional produces past their check and not yet appended. Not persisted.
    #[serde(skip)]
    pub inflight: u32,
}

/// Control records to write for a transaction in a Prepare state, then [`Txns::complete`].
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub partitions: Vec<TxnPartition>,
    pub offsets: Vec<PendingOffset>,
}

/// What InitProducerId does next.
#[derive(Debug, PartialEq)]
pub enum Init {
    /// Persist, then answer with this id and epoch.
    Ready { producer_id: i64, epoch: i16 },
    /// An ongoing transaction was fenced: persist, complete its abort, answer
    /// CONCURRENT_TRANSACTIONS (the client retries and gets the next epoch).
    Fence(Completion),
}

pub struct Limits {
    pub max_timeout_ms: i32,
    pub expiration_ms: u64,
    pub max_ids: usize,
}

/// Kafka names: non-empty (INVALID_REQUEST, as Kafka), then ferrocket's bounds: at most
/// [`MAX_ID_LEN`] characters, no control characters.
pub fn check_transactional_id(id: &str) -> Result<(), (i16, String)> {
    if id.is_empty() {
        return Err((error::INVALID_REQUEST, "empty transactional id".into()));
    }
    if id.chars().count() > MAX_ID_LEN {
        return Err((error::INVALID_REQUEST, format!("transactional id longer than {MAX_ID_LEN} characters")));
    }
    if id.chars().any(char::is_control) {
        return Err((error::INVALID_REQUEST, "transactional id holds control characters".into()));
    }
    Ok(())
}
