//! The rebalance machinery (GroupMetadataManager's prepareRebalance, completeClassicGroupJoin,
//! the initial-rebalance delay, pending-sync and heartbeat expiry, assignment propagation).

use bytes::Bytes;

use super::errors;
use super::state::{Group, State};
use super::timers::{TimerAction, TimerKey};
use super::SyncResponse;

/// How long a member that joined but never got through a join phase may stay
/// (`group.classic.new.member.join.timeout.ms`, 5 minutes in Kafka).
pub(super) const NEW_MEMBER_JOIN_TIMEOUT_MS: i32 = 5 * 60 * 1000;

impl Group {
    /// Runs the operation of a timer that fired (the coordinator checked it is still current).
    pub(super) fn on_timer(&mut self, action: TimerAction) {
        match action {
            TimerAction::InitialRebalance { delay_ms, remaining_ms } => {
                self.try_complete_initial_rebalance(delay_ms, remaining_ms)
            }
            TimerAction::CompleteJoin => self.complete_join(),
            TimerAction::ExpireSync { generation } => self.expire_pending_sync(generation),
            TimerAction::ExpireHeartbeat(member) => self.expire_heartbeat(&member),
        }
    }

    pub(super) fn reschedule_heartbeat(&mut self, member_id: &str, timeout_ms: i32) {
        self.timers.schedule(TimerAction::ExpireHeartbeat(member_id.to_owned()), i64::from(timeout_ms));
    }

    /// Stable, CompletingRebalance or Empty: start a rebalance; PreparingRebalance: see whether
    /// the join phase can complete now.
    pub(super) fn maybe_prepare_rebalance_or_complete_join(&mut self, reason: &str) {
        if self.can_rebalance() {
            self.prepare_rebalance(reason);
        } else {
            self.maybe_complete_join_phase();
        }
    }

    pub(super) fn prepare_rebalance(&mut self, reason: &str) {
        if self.state == State::CompletingRebalance {
            // Parked SyncGroups are told to re-join.
            for member in &mut self.members {
                member.assignment = Bytes::new();
            }
            self.propagate_assignment(errors::REBALANCE_IN_PROGRESS);
        }
        self.pending_sync.clear();
        self.timers.cancel(&TimerKey::Sync);

        let initial = self.state == State::Empty;
        if initial {
            // A new group: give the members more time to arrive.
            let delay_ms = self.initial_rebalance_delay_ms;
            let remaining_ms = (self.rebalance_timeout_ms() - delay_ms).max(0);
            self.timers.schedule(TimerAction::InitialRebalance { delay_ms, remaining_ms }, i64::from(delay_ms));
        }
        self.transition(State::PreparingRebalance);
        tracing::info!(group = %self.id, generation = self.generation, reason, "preparing to rebalance");
        if !initial {
            if self.has_all_members_joined() {
                self.complete_join();
            } else {
                let timeout = self.rebalance_timeout_ms();
                self.timers.schedule(TimerAction::CompleteJoin, i64::from(timeout));
            }
        }
    }

    /// Completes the join phase once every member re-joined; never during the initial delay.
    pub(super) fn maybe_complete_join_phase(&mut self) {
        if self.state == State::PreparingRebalance
            && self.previous_state != State::Empty
            && self.has_all_members_joined()
        {
            self.complete_join();
        }
    }

    fn try_complete_initial_rebalance(&mut self, delay_ms: i32, remaining_ms: i32) {
        if self.new_member_added && remaining_ms != 0 {
            // Someone joined during the delay: wait a bit more, within the rebalance timeout.
            self.new_member_added = false;
            let new_delay = self.initial_rebalance_delay_ms.min(remaining_ms);
            let new_remaining = (remaining_ms - delay_ms).max(0);
            let action = TimerAction::InitialRebalance { delay_ms: new_delay, remaining_ms: new_remaining };
            self.timers.schedule(action, i64::from(new_delay));
        } else {
            self.complete_join();
        }
    }

    /// Ends the join phase: drops dynamic members that did not re-join, makes the next generation
    /// and answers every parked JoinGroup (the leader with the member list).
    pub(super) fn complete_join(&mut self) {
        self.timers.cancel(&TimerKey::Join);
        let not_rejoined: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.awaiting_join.is_none() && m.instance_id.is_none())
            .map(|m| m.id.clone())
            .collect();
        if !not_rejoined.is_empty() {
            tracing::info!(group = %self.id, members = ?not_rejoined, "removing members that did not re-join");
        }
        for id in &not_rejoined {
            self.remove(id);
        }

        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Only static members that did not re-join are left: wait another rebalance timeout.
            let timeout = self.rebalance_timeout_ms();
            self.timers.schedule(TimerAction::CompleteJoin, i64::from(timeout));
            return;
        }
        self.init_next_generation();
        if self.state == State::Empty {
            tracing::info!(group = %self.id, generation = self.generation, "group is now empty");
            return;
        }
        let members = self.members.len();
        tracing::info!(group = %self.id, generation = self.generation, members, "stabilized group");
        let ids: Vec<String> = self.members.iter().map(|m| m.id.clone()).collect();
        for id in ids {
            let response = self.join_response(&id, self.is_leader(&id), false);
            let mut session_ms = 0;
            if let Some(member) = self.member_mut(&id) {
                member.complete_join(response);
                member.is_new = false;
                session_ms = member.session_timeout_ms;
            }
            self.reschedule_heartbeat(&id, session_ms);
            self.pending_sync.insert(id);
        }
        let generation = self.generation;
        let timeout = self.rebalance_timeout_ms();
        self.timers.schedule(TimerAction::ExpireSync { generation }, i64::from(timeout));
    }

    /// Answers every parked SyncGroup with the member's assignment (or the error) and restarts
    /// the session timer of each member answered.
    pub(super) fn propagate_assignment(&mut self, error: i16) {
        let (protocol_type, protocol_name) =
            if error == errors::NONE { (self.protocol_type.clone(), self.protocol_name.clone()) } else { (None, None) };
        let mut answered = Vec::new();
        for member in &mut self.members {
            let response = SyncResponse {
                error,
                protocol_type: protocol_type.clone(),
                protocol_name: protocol_name.clone(),
                assignment: member.assignment.clone(),
            };
            if member.complete_sync(response) {
                answered.push((member.id.clone(), member.session_timeout_ms));
            }
        }
        for (id, session_ms) in answered {
            self.reschedule_heartbeat(&id, session_ms);
        }
    }

    fn expire_pending_sync(&mut self, generation: i32) {
        if generation != self.generation
            || !matches!(self.state, State::CompletingRebalance | State::Stable)
            || self.pending_sync.is_empty()
        {
            return;
        }
        let missing: Vec<String> = self.pending_sync.iter().cloned().collect();
        tracing::info!(group = %self.id, members = ?missing, "removing members that did not send SyncGroup");
        for id in &missing {
            self.remove(id);
        }
        self.prepare_rebalance("members did not send SyncGroup in time");
    }

    fn expire_heartbeat(&mut self, member_id: &str) {
        if self.pending_join.contains(member_id) {
            tracing::info!(group = %self.id, member = member_id, "pending member expired");
            self.remove(member_id);
            if self.state == State::PreparingRebalance && self.has_all_members_joined() {
                self.complete_join();
            }
            return;
        }
        let Some(member) = self.member(member_id) else { return };
        if member.has_satisfied_heartbeat() {
            return;
        }
        tracing::info!(group = %self.id, member = member_id, "session expired; removing member");
        self.remove_member_and_update(member_id, "session timeout");
    }

    /// Removes a member (its parked JoinGroup gets UNKNOWN_MEMBER_ID) and rebalances or completes
    /// the join phase as the state asks.
    pub(super) fn remove_member_and_update(&mut self, member_id: &str, reason: &str) {
        self.remove(member_id);
        match self.state {
            State::Stable | State::CompletingRebalance => self.maybe_prepare_rebalance_or_complete_join(reason),
            State::PreparingRebalance if self.has_all_members_joined() => self.complete_join(),
            _ => {}
        }
    }
}
