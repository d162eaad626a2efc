//! The Kafka *classic* consumer-group coordinator: JoinGroup / SyncGroup / Heartbeat / LeaveGroup,
//! the OffsetCommit member check, ListGroups and DescribeGroups, as Apache Kafka's
//! `GroupMetadataManager` and `ClassicGroup` implement them. Groups live in memory only; committed
//! offsets are stored elsewhere.
//!
//! ```text
//!         first join: initial delay, extended while            every known member re-joined, or the
//!         members keep arriving (up to the rebalance timeout)  rebalance timeout ran out: generation + 1,
//!  Empty ─────────────────────────────> PreparingRebalance ──────────────────────────> CompletingRebalance
//!    ^                                    ^         │         the leader gets the member list        │
//!    │   join phase ends with no member:  │         │                                                │ leader's
//!    └─────────────── generation + 1 ─────┼─────────┘                                                │ SyncGroup:
//!                                         │                                                          v assignments
//!                                         └──── new member, leader re-joins, changed metadata, ──── Stable
//!                                               leave, session or sync expiry (also from Completing)
//! ```
//! Parked requests: a JoinGroup waits (oneshot) until its join phase completes; a SyncGroup in
//! CompletingRebalance waits until the leader's SyncGroup brings the assignments. Timers (initial
//! delay, rebalance timeout, sync timeout, session timeouts) are tokio tasks holding a `Weak` to
//! the coordinator ([`timers`]). A client that drops its future leaves the member to its timers.
//!
//! Files: `state` (records, primitives), `join`, `rebalance`, `membership` (sync, heartbeat,
//! leave, commit check, describe), `timers`.
//!
//! May import: std, tokio, bytes, uuid, tracing.

mod join;
mod membership;
mod rebalance;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bounds;
#[cfg(test)]
mod tests_more;
mod timers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use tokio::sync::oneshot;

use state::Group;
use timers::{TimerAction, Timers};

/// Kafka error codes the coordinator answers with.
pub use super::api::error as errors;

/// `group.min.session.timeout.ms`, `group.max.session.timeout.ms`, `group.initial.rebalance.delay.ms`,
/// and the bounds on what JoinGroups can make the coordinator hold (Kafka's `group.max.size`
/// defaults to unbounded; here every count a client can raise has a ceiling).
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    /// Members plus pending member ids of one group: beyond, GROUP_MAX_SIZE_REACHED (as Kafka's
    /// `group.max.size`).
    pub max_group_size: usize,
    /// Pending member ids (MEMBER_ID_REQUIRED handed out, not yet joined) over all groups, each
    /// with a timer: beyond, the retriable COORDINATOR_LOAD_IN_PROGRESS.
    pub max_pending_members: usize,
    /// Groups held; idle ones (Empty, nobody joined or pending) are dropped first, then
    /// COORDINATOR_LOAD_IN_PROGRESS.
    pub max_groups: usize,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3000,
            max_group_size: 1000,
            max_pending_members: 10_000,
            max_groups: 100_000,
        }
    }
}

#[derive(Clone, Debug)]
pub struct JoinRequest {
    pub group_id: String,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// -1 (or a v0 request): the session timeout is used.
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// MEMBER_ID_REQUIRED only from v4; skip_assignment only from v9.
    pub version: i16,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JoinResponse {
    pub error: i16,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    pub member_id: String,
    /// Only for the leader.
    pub members: Vec<JoinMember>,
}

impl JoinResponse {
    /// generation -1, no protocol, leader "".
    fn error(error: i16, member_id: String) -> JoinResponse {
        JoinResponse {
            error,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id,
            members: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct JoinMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Clone, Debug)]
pub struct SyncRequest {
    pub group_id: String,
    pub member_id: String,
    pub generation_id: i32,
    pub group_instance_id: Option<String>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SyncResponse {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResponse {
    fn error(error: i16) -> SyncResponse {
        SyncResponse { error, protocol_type: None, protocol_name: None, assignment: Bytes::new() }
    }
}

#[derive(Clone, Debug)]
pub struct LeaveMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    pub state: &'static str,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GroupDescription {
    pub error: i16,
    pub group_id: String,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Metadata of the selected protocol (Stable groups only; empty otherwise).
    pub metadata: Bytes,
    pub assignment: Bytes,
}

/// The classic group coordinator. All groups sit behind one mutex; no lock is held across an
/// await. Must be used from within a tokio runtime (timers are spawned tasks).
pub struct Coordinator {
    config: CoordinatorConfig,
    groups: Mutex<HashMap<String, Group>>,
    me: Weak<Coordinator>,
}

impl Coordinator {
    pub fn new(config: CoordinatorConfig) -> Arc<Self> {
        Arc::new_cyclic(|me| Coordinator { config, groups: Mutex::new(HashMap::new()), me: me.clone() })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        // A panic while holding the lock must not take every group down with it.
        self.groups.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Parks until the join phase completes (or answers at once for errors / MEMBER_ID_REQUIRED).
    pub async fn join(self: &Arc<Self>, req: JoinRequest) -> JoinResponse {
        let rx = self.start_join(req);
        rx.await.unwrap_or_else(|_| JoinResponse::error(errors::COORDINATOR_NOT_AVAILABLE, String::new()))
    }

    fn start_join(&self, mut req: JoinRequest) -> oneshot::Receiver<JoinResponse> {
        let (tx, rx) = oneshot::channel();
        if req.group_id.is_empty() {
            let _ = tx.send(JoinResponse::error(errors::INVALID_GROUP_ID, req.member_id));
            return rx;
        }
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            let _ = tx.send(JoinResponse::error(errors::INVALID_SESSION_TIMEOUT, req.member_id));
            return rx;
        }
        if req.rebalance_timeout_ms < 0 || req.version == 0 {
            req.rebalance_timeout_ms = req.session_timeout_ms;
        }
        let mut groups = self.lock();
        if let Some(refused) = self.over_bounds(&mut groups, &req) {
            let _ = tx.send(JoinResponse::error(refused, req.member_id));
            return rx;
        }
        let group = match groups.get_mut(&req.group_id) {
            Some(group) => group,
            None if !req.member_id.is_empty() => {
                let _ = tx.send(JoinResponse::error(errors::UNKNOWN_MEMBER_ID, req.member_id));
                return rx;
            }
            None => {
                let timers = Timers::new(self.me.clone(), req.group_id.clone());
                let group = Group::new(req.group_id.clone(), timers, self.config.initial_rebalance_delay_ms);
                groups.entry(req.group_id.clone()).or_insert(group)
            }
        };
        group.join(&req, tx);
        rx
    }

    /// The error for a JoinGroup that would take the coordinator past its bounds: a new group
    /// beyond `max_groups` (after dropping idle ones), a new member beyond `max_group_size`, a
    /// pending member id beyond `max_pending_members`. Re-joins of known members always pass.
    fn over_bounds(&self, groups: &mut HashMap<String, Group>, req: &JoinRequest) -> Option<i16> {
        let c = &self.config;
        if !req.member_id.is_empty() {
            return None;
        }
        match groups.get(&req.group_id) {
            None if groups.len() >= c.max_groups => {
                groups.retain(|_, g| !g.is_idle());
                if groups.len() >= c.max_groups {
                    return Some(errors::COORDINATOR_LOAD_IN_PROGRESS);
                }
            }
            Some(g) => {
                let replaces = req.group_instance_id.as_ref().is_some_and(|i| g.static_members.contains_key(i));
                if !replaces && g.members.len() + g.pending_join.len() >= c.max_group_size {
                    return Some(errors::GROUP_MAX_SIZE_REACHED);
                }
            }
            None => {}
        }
        let becomes_pending = req.group_instance_id.is_none() && req.version >= join::MEMBER_ID_REQUIRED_VERSION;
        if becomes_pending && groups.values().map(|g| g.pending_join.len()).sum::<usize>() >= c.max_pending_members {
            return Some(errors::COORDINATOR_LOAD_IN_PROGRESS);
        }
        None
    }

    /// Drops idle groups (Empty, no member, no pending member id): their record holds nothing
    /// a client needs (offsets are kept elsewhere). Returns how many went.
    pub fn sweep_idle(&self) -> usize {
        let mut groups = self.lock();
        let before = groups.len();
        groups.retain(|_, g| !g.is_idle());
        before - groups.len()
    }

    /// Someone is in the group: a member or a pending member id.
    pub fn in_use(&self, group_id: &str) -> bool {
        self.lock().get(group_id).is_some_and(|g| !g.is_idle())
    }

    /// Groups held (tests and metrics).
    pub fn group_count(&self) -> usize {
        self.lock().len()
    }

    /// Pending member ids over all groups (tests).
    pub fn pending_count(&self) -> usize {
        self.lock().values().map(|g| g.pending_join.len()).sum()
    }

    /// Parks in CompletingRebalance until the leader's SyncGroup arrives.
    ///
    /// The v5+ rule that protocol_type and protocol_name must be present is the request
    /// handler's (it knows the version); here a present value must match the group's.
    pub async fn sync(self: &Arc<Self>, req: SyncRequest) -> SyncResponse {
        let (tx, rx) = oneshot::channel();
        if req.group_id.is_empty() {
            return SyncResponse::error(errors::INVALID_GROUP_ID);
        }
        {
            let mut groups = self.lock();
            match groups.get_mut(&req.group_id) {
                Some(group) if group.state != state::State::Empty => group.sync(&req, tx),
                _ => return SyncResponse::error(errors::UNKNOWN_MEMBER_ID),
            }
        }
        rx.await.unwrap_or_else(|_| SyncResponse::error(errors::COORDINATOR_NOT_AVAILABLE))
    }

    pub fn heartbeat(
        self: &Arc<Self>,
        group_id: &str,
        member_id: &str,
        generation_id: i32,
        group_instance_id: Option<&str>,
    ) -> i16 {
        if group_id.is_empty() {
            return errors::INVALID_GROUP_ID;
        }
        match self.lock().get_mut(group_id) {
            Some(group) => group.heartbeat(member_id, generation_id, group_instance_id),
            None => errors::UNKNOWN_MEMBER_ID,
        }
    }

    /// Returns (top-level error, per-member errors in request order). With a top-level error the
    /// per-member list is empty. An unknown group gives NONE with UNKNOWN_MEMBER_ID for each member.
    /// For LeaveGroup v0-2 the single error is the top-level one, else the first member error.
    pub fn leave(self: &Arc<Self>, group_id: &str, members: &[LeaveMember]) -> (i16, Vec<i16>) {
        if group_id.is_empty() {
            return (errors::INVALID_GROUP_ID, Vec::new());
        }
        match self.lock().get_mut(group_id) {
            Some(group) => (errors::NONE, group.leave(members)),
            None => (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID; members.len()]),
        }
    }

    /// What OffsetCommit must check before storing (OffsetMetadataManager.validateOffsetCommit and
    /// ClassicGroup.validateOffsetCommit). An unknown group with generation < 0 is a "simple"
    /// group: accepted, and nothing is created here.
    pub fn validate_offset_commit(
        &self,
        group_id: &str,
        member_id: &str,
        generation_id: i32,
        group_instance_id: Option<&str>,
        version: i16,
    ) -> i16 {
        if group_id.is_empty() {
            return errors::INVALID_GROUP_ID;
        }
        match self.lock().get(group_id) {
            Some(group) => group.validate_offset_commit(member_id, generation_id, group_instance_id),
            None if generation_id < 0 => errors::NONE,
            None if version >= 9 => errors::GROUP_ID_NOT_FOUND,
            None => errors::ILLEGAL_GENERATION,
        }
    }

    /// Groups this coordinator knows (Empty ones included), sorted by id.
    pub fn list_groups(&self) -> Vec<GroupListing> {
        let mut listings: Vec<GroupListing> = self
            .lock()
            .values()
            .map(|g| GroupListing {
                group_id: g.id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                state: g.state.name(),
            })
            .collect();
        listings.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listings
    }

    /// An unknown group is state "Dead" with error NONE and no members.
    pub fn describe_group(&self, group_id: &str) -> GroupDescription {
        match self.lock().get(group_id) {
            Some(group) => group.describe(),
            None => GroupDescription {
                error: errors::NONE,
                group_id: group_id.to_owned(),
                state: "Dead",
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            },
        }
    }

    /// DeleteGroups for the group record: GROUP_ID_NOT_FOUND if unknown here (the caller may still
    /// hold offsets of a "simple" group), NON_EMPTY_GROUP unless Empty, else removed.
    pub fn delete_group(&self, group_id: &str) -> i16 {
        if group_id.is_empty() {
            return errors::INVALID_GROUP_ID;
        }
        let mut groups = self.lock();
        match groups.get(group_id) {
            None => errors::GROUP_ID_NOT_FOUND,
            Some(group) if group.state != state::State::Empty => errors::NON_EMPTY_GROUP,
            Some(_) => {
                groups.remove(group_id);
                errors::NONE
            }
        }
    }

    /// A timer fired: run its operation if it was not cancelled or replaced meanwhile.
    fn fire(&self, group_id: &str, token: u64, action: TimerAction) {
        let mut groups = self.lock();
        if let Some(group) = groups.get_mut(group_id) {
            if group.timers.take_if_current(&action.key(), token) {
                group.on_timer(action);
            }
        }
    }
}
