//! The Kafka transaction coordinator's state machine (Kafka's `TransactionCoordinator` +
//! `TransactionMetadata`), pure: no I/O, the clock passed in. One [`TxnMeta`] per
//! transactional id; `txn_log.rs` persists the table, `txn_markers.rs` writes the control
//! records of a transaction this module put in a Prepare state, `txn.rs` speaks the wire.
//!
//! ```text
//!            InitProducerId (epoch+1)           AddPartitionsToTxn / AddOffsetsToTxn
//!  (none) ------------------------> Empty ---------------------------------> Ongoing
//!                                     ^                                     |  EndTxn, or InitProducerId
//!                                     |  InitProducerId (epoch+1)           |  (epoch+1, fences), or the
//!                      CompleteCommit / CompleteAbort <--- markers --- PrepareCommit / PrepareAbort
//!                                   (transaction timeout: epoch+1, PrepareAbort)
//! ```
//! A transaction in a Prepare state has a completion under way (`completing`), or left over
//! by a crash (completed by the sweeper); every request on it is CONCURRENT_TRANSACTIONS.
//!
//! Bounded: at most `max_ids` transactional ids (idle ones expire after
//! `kafkaTransactionalIdExpirationMs`), [`MAX_GROUPS`] groups per transaction; names are
//! checked by [`check_transactional_id`].
//!
//! May import: `super::api::error`, `super::txn_meta` (the types), serde.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::api::error;
pub use super::txn_meta::*;

/// Every transactional id's state.
#[derive(Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Txns {
    pub ids: BTreeMap<String, TxnMeta>,
}

impl TxnMeta {
    fn completion(&self, id: &str) -> Completion {
        Completion {
            transactional_id: id.to_owned(),
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            commit: self.state == TxnState::PrepareCommit,
            partitions: self.partitions.clone(),
            offsets: if self.state == TxnState::PrepareCommit { self.offsets.clone() } else { Vec::new() },
        }
    }

    /// Fences the producer (epoch+1, as `prepareFenceProducerEpoch`) and prepares the abort.
    fn fence_and_abort(&mut self, id: &str, now: i64) -> Completion {
        self.producer_epoch = self.producer_epoch.saturating_add(1);
        self.last_producer_epoch = -1;
        self.state = TxnState::PrepareAbort;
        self.completing = true;
        self.last_update_ms = now;
        self.completion(id)
    }

    /// Who may act on the transaction: the producer id, then the epoch (strictly equal).
    fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), i16> {
        if self.producer_id != producer_id {
            return Err(error::INVALID_PRODUCER_ID_MAPPING);
        }
        if self.producer_epoch != epoch {
            return Err(error::PRODUCER_FENCED);
        }
        if self.completing || self.state.preparing() {
            return Err(error::CONCURRENT_TRANSACTIONS);
        }
        Ok(())
    }

    /// Starts a transaction if none is ongoing.
    fn begin(&mut self, now: i64) {
        if self.state != TxnState::Ongoing {
            self.state = TxnState::Ongoing;
            self.start_ms = now;
            self.partitions.clear();
            self.groups.clear();
            self.offsets.clear();
        }
        self.last_update_ms = now;
    }
}

impl Txns {
    /// InitProducerId with a transactional id (checked by the caller), as
    /// `handleInitProducerId`: `expected` is the request's (producer id, epoch) when not -1.
    pub fn init(
        &mut self,
        l: &Limits,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now: i64,
        alloc: &mut dyn FnMut() -> Option<i64>,
    ) -> Result<Init, i16> {
        if timeout_ms <= 0 || timeout_ms > l.max_timeout_ms {
            return Err(error::INVALID_TRANSACTION_TIMEOUT);
        }
        if !self.ids.contains_key(id) {
            if self.ids.len() >= l.max_ids {
                self.expire(l, now);
            }
            if self.ids.len() >= l.max_ids {
                return Err(error::COORDINATOR_NOT_AVAILABLE);
            }
            let producer_id = alloc().ok_or(error::COORDINATOR_NOT_AVAILABLE)?;
            let meta = TxnMeta {
                producer_id,
                prev_producer_id: -1,
                producer_epoch: -1,
                last_producer_epoch: -1,
                timeout_ms,
                state: TxnState::Empty,
                start_ms: -1,
                last_update_ms: now,
                partitions: Vec::new(),
                groups: BTreeSet::new(),
                offsets: Vec::new(),
                completing: false,
                inflight: 0,
            };
            self.ids.insert(id.to_owned(), meta);
        }
        let Some(m) = self.ids.get_mut(id) else { return Err(error::COORDINATOR_NOT_AVAILABLE) };
        if m.completing {
            return Err(error::CONCURRENT_TRANSACTIONS);
        }
        let valid = |(pid, epoch): (i64, i16)| {
            m.producer_epoch == -1 || pid == m.producer_id || (pid == m.prev_producer_id && epoch >= EPOCH_EXHAUSTED)
        };
        if !expected.is_none_or(valid) {
            return Err(error::PRODUCER_FENCED);
        }
        match m.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => Err(error::CONCURRENT_TRANSACTIONS),
            TxnState::Ongoing => Ok(Init::Fence(m.fence_and_abort(id, now))),
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                if m.producer_epoch >= EPOCH_EXHAUSTED && expected.is_none_or(|(_, e)| e == m.producer_epoch) {
                    let new_id = alloc().ok_or(error::COORDINATOR_NOT_AVAILABLE)?;
                    m.prev_producer_id = m.producer_id;
                    m.producer_id = new_id;
                    // A retry naming the old id and epoch gets this answer again.
                    m.last_producer_epoch = if expected.is_some() { m.producer_epoch } else { -1 };
                    m.producer_epoch = 0;
                } else {
                    match expected.map(|(_, e)| e) {
                        None => {
                            m.last_producer_epoch = -1;
                            m.producer_epoch = m.producer_epoch.saturating_add(1);
                        }
                        Some(e) if m.producer_epoch == -1 || e == m.producer_epoch => {
                            m.last_producer_epoch = m.producer_epoch;
                            m.producer_epoch = m.producer_epoch.saturating_add(1);
                        }
                        // A retry of a bump whose answer was lost: the same epoch again.
                        Some(e) if e == m.last_producer_epoch => {}
                        Some(_) => return Err(error::PRODUCER_FENCED),
                    }
                }
                m.timeout_ms = timeout_ms;
                m.state = TxnState::Empty;
                m.partitions.clear();
                m.groups.clear();
                m.offsets.clear();
                m.last_update_ms = now;
                Ok(Init::Ready { producer_id: m.producer_id, epoch: m.producer_epoch })
            }
        }
    }

    /// AddPartitionsToTxn: `Ok(true)` when the state changed (persist before answering).
    /// `parts` are (topic, partition, queue end offset now).
    pub fn add_partitions(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        parts: &[(String, i32, i64)],
        now: i64,
    ) -> Result<bool, i16> {
        let m = self.ids.get_mut(id).ok_or(error::INVALID_PRODUCER_ID_MAPPING)?;
        m.check_producer(producer_id, epoch)?;
        let known = |m: &TxnMeta, t: &str, p: i32| m.partitions.iter().any(|x| x.topic == t && x.partition == p);
        if m.state == TxnState::Ongoing && parts.iter().all(|(t, p, _)| known(m, t, *p)) {
            return Ok(false);
        }
        m.begin(now);
        for (topic, partition, start_offset) in parts {
            if !known(m, topic, *partition) {
                let p = TxnPartition { topic: topic.clone(), partition: *partition, start_offset: *start_offset };
                m.partitions.push(p);
            }
        }
        Ok(true)
    }

    /// AddOffsetsToTxn: the group's offsets may be committed in this transaction.
    pub fn add_offsets(&mut self, id: &str, producer_id: i64, epoch: i16, group: &str, now: i64) -> Result<bool, i16> {
        let m = self.ids.get_mut(id).ok_or(error::INVALID_PRODUCER_ID_MAPPING)?;
        m.check_producer(producer_id, epoch)?;
        if m.state == TxnState::Ongoing && m.groups.contains(group) {
            return Ok(false);
        }
        if !m.groups.contains(group) && m.groups.len() >= MAX_GROUPS {
            return Err(error::INVALID_REQUEST);
        }
        m.begin(now);
        m.groups.insert(group.to_owned());
        Ok(true)
    }

    /// TxnOffsetCommit: offsets pending until the commit. `not_added` is the code for a group
    /// AddOffsetsToTxn did not add (INVALID_TXN_STATE, TRANSACTION_ABORTABLE from v4).
    pub fn commit_offsets(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        offsets: Vec<PendingOffset>,
        not_added: i16,
    ) -> Result<(), i16> {
        let m = self.ids.get_mut(id).ok_or(error::INVALID_PRODUCER_ID_MAPPING)?;
        m.check_producer(producer_id, epoch)?;
        if m.state != TxnState::Ongoing || offsets.iter().any(|o| !m.groups.contains(&o.group)) {
            return Err(not_added);
        }
        for o in offsets {
            let same = |x: &PendingOffset| x.group == o.group && x.topic == o.topic && x.partition == o.partition;
            match m.offsets.iter_mut().find(|x| same(x)) {
                Some(x) => *x = o,
                None => m.offsets.push(o),
            }
        }
        Ok(())
    }

    /// EndTxn (`endTransaction` for a client, transactions V1): `Ok(Some)` the completion to
    /// run (persist the Prepare state first), `Ok(None)` a retry of a finished one.
    pub fn end(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now: i64,
    ) -> Result<Option<Completion>, i16> {
        let m = self.ids.get_mut(id).ok_or(error::INVALID_PRODUCER_ID_MAPPING)?;
        if m.producer_id != producer_id {
            return Err(error::INVALID_PRODUCER_ID_MAPPING);
        }
        if m.producer_epoch != epoch {
            return Err(error::PRODUCER_FENCED);
        }
        if m.completing {
            return Err(error::CONCURRENT_TRANSACTIONS);
        }
        match (m.state, commit) {
            (TxnState::Ongoing, _) => {
                m.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
                m.completing = true;
                m.last_update_ms = now;
                Ok(Some(m.completion(id)))
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(None),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => Err(error::CONCURRENT_TRANSACTIONS),
            _ => Err(error::INVALID_TXN_STATE),
        }
    }

    /// The control records of `c` are written (and its offsets committed): CompleteCommit or
    /// CompleteAbort. Persist after.
    pub fn complete(&mut self, c: &Completion, now: i64) {
        if let Some(m) = self.ids.get_mut(&c.transactional_id).filter(|m| m.producer_id == c.producer_id) {
            m.state = if c.commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
            m.partitions.clear();
            m.groups.clear();
            m.offsets.clear();
            m.completing = false;
            m.last_update_ms = now;
        }
    }

    /// A completion failed (a marker could not be written): the sweeper tries again.
    pub fn completion_failed(&mut self, c: &Completion) {
        if let Some(m) = self.ids.get_mut(&c.transactional_id) {
            m.completing = false;
        }
    }

    /// The sweeper's work: transactions past their timeout are fenced and aborted, Prepare
    /// states nobody is completing (a crash, a failed marker) are completed.
    pub fn due(&mut self, now: i64) -> Vec<Completion> {
        let mut out = Vec::new();
        for (id, m) in &mut self.ids {
            if m.completing {
                continue;
            }
            if m.state == TxnState::Ongoing && m.start_ms.saturating_add(i64::from(m.timeout_ms)) < now {
                out.push(m.fence_and_abort(id, now));
            } else if m.state.preparing() {
                m.completing = true;
                out.push(m.completion(id));
            }
        }
        out
    }

    /// Forgets ids with no transaction under way, idle for `expiration_ms`
    /// (`transactional.id.expiration.ms`). Whether any went.
    pub fn expire(&mut self, l: &Limits, now: i64) -> bool {
        let before = self.ids.len();
        let idle_since = now.saturating_sub(i64::try_from(l.expiration_ms).unwrap_or(i64::MAX));
        self.ids.retain(|_, m| {
            let idle = matches!(m.state, TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort);
            !(idle && !m.completing && m.inflight == 0 && m.last_update_ms <= idle_since)
        });
        self.ids.len() != before
    }

    /// The check Kafka 4.x brokers make before a transactional append (KIP-890 part 1): the
    /// producer's transaction is ongoing with this partition in it. `not_added` is the code for
    /// a partition AddPartitionsToTxn did not add (Produce v11: TRANSACTION_ABORTABLE, older
    /// INVALID_TXN_STATE). On success the append counts as in flight until [`Self::appended`].
    pub fn verify_produce(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        topic: &str,
        partition: i32,
        not_added: i16,
    ) -> Result<(), i16> {
        let m = self.ids.get_mut(id).ok_or(error::INVALID_PRODUCER_ID_MAPPING)?;
        if m.producer_id != producer_id {
            return Err(error::INVALID_PRODUCER_ID_MAPPING);
        }
        if m.producer_epoch != epoch {
            return Err(error::INVALID_PRODUCER_EPOCH);
        }
        if m.completing || m.state.preparing() {
            // CONCURRENT_TRANSACTIONS, as Kafka words it for producers: retriable.
            return Err(error::NOT_ENOUGH_REPLICAS);
        }
        if m.state != TxnState::Ongoing || !m.partitions.iter().any(|p| p.topic == topic && p.partition == partition) {
            return Err(not_added);
        }
        m.inflight += 1;
        Ok(())
    }

    /// A transactional append [`Self::verify_produce`] let through is done.
    pub fn appended(&mut self, id: &str) {
        if let Some(m) = self.ids.get_mut(id) {
            m.inflight = m.inflight.saturating_sub(1);
        }
    }

    /// Whether appends of `id` are still in flight (a completion waits for them).
    pub fn inflight(&self, id: &str) -> bool {
        self.ids.get(id).is_some_and(|m| m.inflight > 0)
    }
}

#[cfg(test)]
#[path = "txn_coordinator_tests.rs"]
mod tests;
