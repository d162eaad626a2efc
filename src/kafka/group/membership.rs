//! SyncGroup, Heartbeat, LeaveGroup, the OffsetCommit member check and DescribeGroups on an
//! existing group record (GroupMetadataManager.classicGroupSync/Heartbeat/Leave,
//! ClassicGroup.validateOffsetCommit, describeGroups).

use std::collections::HashMap;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::errors;
use super::state::{Group, State};
use super::{GroupDescription, LeaveMember, MemberDescription, SyncRequest, SyncResponse};

/// A v5+ field that is present must equal the group's (when the group has one).
fn inconsistent(requested: Option<&str>, group: Option<&str>) -> bool {
    matches!((requested, group), (Some(r), Some(g)) if r != g)
}

impl Group {
    /// SyncGroup; the caller handled unknown and Empty groups.
    pub(super) fn sync(&mut self, req: &SyncRequest, tx: oneshot::Sender<SyncResponse>) {
        let member_id = req.member_id.as_str();
        let error = match self.validate_member(member_id, req.group_instance_id.as_deref()) {
            Err(error) => error,
            Ok(()) if req.generation_id != self.generation => errors::ILLEGAL_GENERATION,
            Ok(())
                if inconsistent(req.protocol_type.as_deref(), self.protocol_type.as_deref())
                    || inconsistent(req.protocol_name.as_deref(), self.protocol_name.as_deref()) =>
            {
                errors::INCONSISTENT_GROUP_PROTOCOL
            }
            Ok(()) if self.state == State::PreparingRebalance => errors::REBALANCE_IN_PROGRESS,
            Ok(()) => errors::NONE,
        };
        if error != errors::NONE {
            let _ = tx.send(SyncResponse::error(error));
            return;
        }
        match self.state {
            State::CompletingRebalance => {
                if let Some(member) = self.member_mut(member_id) {
                    // A SyncGroup already parked for this member is superseded.
                    member.awaiting_sync = Some(tx);
                }
                self.sync_received(member_id);
                if self.is_leader(member_id) {
                    self.apply_leader_assignment(member_id, &req.assignments);
                }
            }
            State::Stable => {
                self.sync_received(member_id);
                let assignment = self.member(member_id).map(|m| m.assignment.clone()).unwrap_or_default();
                let _ = tx.send(SyncResponse {
                    error: errors::NONE,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment,
                });
            }
            State::PreparingRebalance | State::Empty => {
                let _ = tx.send(SyncResponse::error(errors::UNKNOWN_MEMBER_ID));
            }
        }
    }

    fn sync_received(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        if self.pending_sync.is_empty() {
            self.timers.cancel(&super::timers::TimerKey::Sync);
        }
    }

    /// The leader's assignments: members it left out get an empty one. Everyone parked is
    /// answered and the group becomes Stable.
    fn apply_leader_assignment(&mut self, leader: &str, assignments: &[(String, Bytes)]) {
        let by_member: HashMap<&str, &Bytes> = assignments.iter().map(|(id, a)| (id.as_str(), a)).collect();
        let mut missing = Vec::new();
        for member in &mut self.members {
            match by_member.get(member.id.as_str()) {
                Some(assignment) => member.assignment = (*assignment).clone(),
                None => {
                    member.assignment = Bytes::new();
                    missing.push(member.id.clone());
                }
            }
        }
        if !missing.is_empty() {
            tracing::warn!(group = %self.id, generation = self.generation, members = ?missing, "empty assignments");
        }
        tracing::info!(group = %self.id, leader, generation = self.generation, "assignment received from leader");
        self.propagate_assignment(errors::NONE);
        self.transition(State::Stable);
    }

    pub(super) fn heartbeat(&mut self, member_id: &str, generation_id: i32, instance_id: Option<&str>) -> i16 {
        if let Err(error) = self.validate_member(member_id, instance_id) {
            return error;
        }
        if generation_id != self.generation {
            return errors::ILLEGAL_GENERATION;
        }
        let session_ms = self.member(member_id).map_or(0, |m| m.session_timeout_ms);
        match self.state {
            State::Empty => errors::UNKNOWN_MEMBER_ID,
            State::PreparingRebalance => {
                self.reschedule_heartbeat(member_id, session_ms);
                errors::REBALANCE_IN_PROGRESS
            }
            State::CompletingRebalance | State::Stable => {
                self.reschedule_heartbeat(member_id, session_ms);
                errors::NONE
            }
        }
    }

    /// LeaveGroup for each member in request order; then rebalance if anyone left.
    pub(super) fn leave(&mut self, members: &[LeaveMember]) -> Vec<i16> {
        let mut results = Vec::with_capacity(members.len());
        for leaving in members {
            let instance = leaving.group_instance_id.as_deref();
            let result = if leaving.member_id.is_empty() {
                // Administrative removal of a static member by its instance id.
                match instance.and_then(|i| self.static_members.get(i)).cloned() {
                    Some(member_id) => {
                        self.remove(&member_id);
                        errors::NONE
                    }
                    None => errors::UNKNOWN_MEMBER_ID,
                }
            } else if self.pending_join.contains(&leaving.member_id) {
                self.remove(&leaving.member_id);
                errors::NONE
            } else {
                match self.validate_member(&leaving.member_id, instance) {
                    Ok(()) => {
                        self.remove(&leaving.member_id);
                        errors::NONE
                    }
                    Err(error) => error,
                }
            };
            if result == errors::NONE {
                tracing::info!(group = %self.id, member = %leaving.member_id, ?instance, "member left the group");
            }
            results.push(result);
        }
        if results.contains(&errors::NONE) {
            match self.state {
                State::Stable | State::CompletingRebalance => {
                    self.maybe_prepare_rebalance_or_complete_join("members left the group")
                }
                State::PreparingRebalance => self.maybe_complete_join_phase(),
                State::Empty => {}
            }
        }
        results
    }

    /// ClassicGroup.validateOffsetCommit for a plain (non-transactional) OffsetCommit.
    pub(super) fn validate_offset_commit(&self, member_id: &str, generation_id: i32, instance_id: Option<&str>) -> i16 {
        if generation_id < 0 && self.state == State::Empty {
            // Admin client or a consumer without group management.
            return errors::NONE;
        }
        if generation_id >= 0 || !member_id.is_empty() || instance_id.is_some() {
            if let Err(error) = self.validate_member(member_id, instance_id) {
                return error;
            }
            if generation_id != self.generation {
                return errors::ILLEGAL_GENERATION;
            }
        } else if self.state != State::Empty {
            // No member id and no generation: only accepted while the group is Empty.
            return errors::UNKNOWN_MEMBER_ID;
        }
        if self.state == State::CompletingRebalance {
            return errors::REBALANCE_IN_PROGRESS;
        }
        errors::NONE
    }

    /// Stable groups show the protocol and each member's metadata for it; other states show
    /// neither (assignments are shown in every state).
    pub(super) fn describe(&self) -> GroupDescription {
        let stable = self.state == State::Stable;
        let protocol = if stable { self.protocol_name.clone().unwrap_or_default() } else { String::new() };
        GroupDescription {
            error: errors::NONE,
            group_id: self.id.clone(),
            state: self.state.name(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            members: self
                .members
                .iter()
                .map(|m| MemberDescription {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable { m.metadata(Some(&protocol)) } else { Bytes::new() },
                    assignment: m.assignment.clone(),
                })
                .collect(),
            protocol,
        }
    }
}
