//! JoinGroup on an existing group record (GroupMetadataManager.classicGroupJoinToClassicGroup and
//! the new-member / existing-member / static-member paths). Every path either answers `tx` at
//! once or parks it on the member until the join phase completes.

use bytes::Bytes;
use tokio::sync::oneshot;

use super::errors;
use super::rebalance::NEW_MEMBER_JOIN_TIMEOUT_MS;
use super::state::{Group, Member, State};
use super::timers::TimerAction;
use super::{JoinRequest, JoinResponse};

/// The first JoinGroup version where a dynamic member must first obtain its member id.
pub(super) const MEMBER_ID_REQUIRED_VERSION: i16 = 4;
/// The first JoinGroup version with `skip_assignment`.
const SKIP_ASSIGNMENT_VERSION: i16 = 9;

type JoinTx = oneshot::Sender<JoinResponse>;

fn reply(tx: JoinTx, response: JoinResponse) {
    let _ = tx.send(response);
}

impl Group {
    /// `req.rebalance_timeout_ms` is already resolved (never negative).
    pub(super) fn join(&mut self, req: &JoinRequest, tx: JoinTx) {
        let (member, state) = (req.member_id.as_str(), self.state.name());
        tracing::debug!(group = %self.id, member, state, reason = ?req.reason, "JoinGroup");
        if req.member_id.is_empty() {
            self.join_new_member(req, tx);
        } else {
            self.join_existing_member(req, tx);
        }
    }

    fn join_new_member(&mut self, req: &JoinRequest, tx: JoinTx) {
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return reply(tx, JoinResponse::error(errors::INCONSISTENT_GROUP_PROTOCOL, String::new()));
        }
        let instance = req.group_instance_id.as_deref();
        let new_id = Group::generate_member_id(&req.client_id, instance);
        match instance {
            Some(instance) => match self.static_members.get(instance).cloned() {
                Some(old_id) => {
                    tracing::info!(group = %self.id, instance, old = %old_id, new = %new_id, "replacing static member");
                    self.update_static_member(req, &old_id, &new_id, tx);
                }
                None => self.add_member(req, new_id, tx),
            },
            None if req.version >= MEMBER_ID_REQUIRED_VERSION => {
                // The client must come back with this id; until then it is pending.
                self.pending_join.insert(new_id.clone());
                self.timers.schedule(TimerAction::ExpireHeartbeat(new_id.clone()), i64::from(req.session_timeout_ms));
                reply(tx, JoinResponse::error(errors::MEMBER_ID_REQUIRED, new_id));
            }
            None => self.add_member(req, new_id, tx),
        }
    }

    fn join_existing_member(&mut self, req: &JoinRequest, tx: JoinTx) {
        let member_id = req.member_id.as_str();
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return reply(tx, JoinResponse::error(errors::INCONSISTENT_GROUP_PROTOCOL, member_id.to_owned()));
        }
        if self.pending_join.contains(member_id) {
            if req.group_instance_id.is_some() {
                // Kafka: IllegalStateException (a pending member is never static).
                return reply(tx, JoinResponse::error(errors::UNKNOWN_SERVER_ERROR, member_id.to_owned()));
            }
            return self.add_member(req, member_id.to_owned(), tx);
        }
        if let Err(error) = self.validate_member(member_id, req.group_instance_id.as_deref()) {
            return reply(tx, JoinResponse::error(error, member_id.to_owned()));
        }
        let unchanged = self.member(member_id).is_some_and(|m| m.matches(&req.protocols));
        match self.state {
            State::PreparingRebalance => self.update_member(req, tx, "member re-joins during PreparingRebalance"),
            State::CompletingRebalance if unchanged => {
                // Probably lost the JoinGroup response: answer again for the current generation.
                let is_leader = self.is_leader(member_id);
                reply(tx, self.join_response(member_id, is_leader, false));
            }
            State::CompletingRebalance => self.update_member(req, tx, "metadata changed during CompletingRebalance"),
            State::Stable if self.is_leader(member_id) => self.update_member(req, tx, "leader re-joins a Stable group"),
            State::Stable if !unchanged => self.update_member(req, tx, "metadata changed during Stable"),
            State::Stable => reply(tx, self.join_response(member_id, false, false)),
            State::Empty => reply(tx, JoinResponse::error(errors::UNKNOWN_MEMBER_ID, member_id.to_owned())),
        }
    }

    /// Adds a new member with its JoinGroup parked, then rebalances or completes the join phase.
    fn add_member(&mut self, req: &JoinRequest, member_id: String, tx: JoinTx) {
        let member = Member {
            id: member_id.clone(),
            instance_id: req.group_instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            assignment: Bytes::new(),
            awaiting_join: Some(tx),
            awaiting_sync: None,
            is_new: true,
        };
        if self.state == State::PreparingRebalance && self.previous_state == State::Empty {
            self.new_member_added = true;
        }
        self.add(member);
        // A parked new member cannot heartbeat; a client that gave up is dropped after this.
        self.reschedule_heartbeat(&member_id, NEW_MEMBER_JOIN_TIMEOUT_MS);
        self.maybe_prepare_rebalance_or_complete_join("new member joined");
    }

    /// Updates protocols and timeouts of an existing member, parks its JoinGroup, then
    /// rebalances or completes the join phase.
    fn update_member(&mut self, req: &JoinRequest, tx: JoinTx, reason: &str) {
        if let Some(member) = self.member_mut(&req.member_id) {
            member.protocols = req.protocols.clone();
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
            member.session_timeout_ms = req.session_timeout_ms;
            // A JoinGroup already parked for this member is superseded (its sender is dropped).
            member.awaiting_join = Some(tx);
        }
        self.maybe_prepare_rebalance_or_complete_join(reason);
    }

    /// A known group.instance.id joins with member id "": the old member id is fenced and
    /// replaced. In Stable with the same selected protocol, no rebalance happens.
    fn update_static_member(&mut self, req: &JoinRequest, old_id: &str, new_id: &str, tx: JoinTx) {
        let current_leader = self.leader.clone().unwrap_or_default();
        let Some(instance) = req.group_instance_id.as_deref() else { return };
        self.replace_static_member(instance, old_id, new_id);
        let session_ms = self.member(new_id).map_or(req.session_timeout_ms, |m| m.session_timeout_ms);
        self.reschedule_heartbeat(new_id, session_ms);
        if let Some(member) = self.member_mut(new_id) {
            member.protocols = req.protocols.clone();
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
            member.session_timeout_ms = req.session_timeout_ms;
        }
        match self.state {
            State::Stable => {
                if self.select_protocol() == self.protocol_name {
                    tracing::info!(group = %self.id, new_id, "static member re-joined Stable group; no rebalance");
                    let response = if req.version >= SKIP_ASSIGNMENT_VERSION {
                        let is_leader = self.is_leader(new_id);
                        self.join_response(new_id, is_leader, is_leader)
                    } else {
                        JoinResponse { leader: current_leader, ..self.join_response(new_id, false, false) }
                    };
                    return reply(tx, response);
                }
                self.park_join(new_id, tx);
                self.maybe_prepare_rebalance_or_complete_join("static member changed the selected protocol");
            }
            State::CompletingRebalance => {
                // The leader may already be assigning with the old member id.
                self.park_join(new_id, tx);
                self.prepare_rebalance("static member re-joined during CompletingRebalance");
            }
            State::PreparingRebalance => {
                self.park_join(new_id, tx);
                self.maybe_complete_join_phase();
            }
            State::Empty => reply(tx, JoinResponse::error(errors::UNKNOWN_MEMBER_ID, String::new())),
        }
    }

    fn park_join(&mut self, member_id: &str, tx: JoinTx) {
        if let Some(member) = self.member_mut(member_id) {
            member.awaiting_join = Some(tx);
        }
    }
}
