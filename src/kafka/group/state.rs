//! The group and member records and their primitive operations (Kafka's `ClassicGroup` and
//! `ClassicGroupMember`): membership, static-member map, leader, protocol voting, validation.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::errors;
use super::timers::{TimerKey, Timers};
use super::{JoinMember, JoinResponse, SyncResponse};

/// Group states. `Dead` is never stored: a group this coordinator does not know is reported Dead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    pub(super) fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

pub(super) struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// The member's protocols in its order of preference.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// A parked JoinGroup (Kafka's `awaitingJoinFuture`).
    pub awaiting_join: Option<oneshot::Sender<JoinResponse>>,
    /// A parked SyncGroup (Kafka's `awaitingSyncFuture`).
    pub awaiting_sync: Option<oneshot::Sender<SyncResponse>>,
    /// Joined but not yet through a completed join phase: its timer is the new-member join timeout.
    pub is_new: bool,
}

impl Member {
    pub(super) fn metadata(&self, protocol: Option<&str>) -> Bytes {
        let wanted = protocol.unwrap_or_default();
        self.protocols.iter().find(|(name, _)| name == wanted).map(|(_, m)| m.clone()).unwrap_or_default()
    }

    /// Same protocols, same metadata, same order.
    pub(super) fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// The first protocol in the member's own order that is a candidate.
    fn vote<'a>(&'a self, candidates: &HashSet<&str>) -> Option<&'a str> {
        self.protocols.iter().map(|(name, _)| name.as_str()).find(|name| candidates.contains(name))
    }

    /// Members waiting in a join or sync phase count as alive, except new ones.
    pub(super) fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    /// Answers a parked JoinGroup; false when none was parked. A gone client is ignored.
    pub(super) fn complete_join(&mut self, response: JoinResponse) -> bool {
        match self.awaiting_join.take() {
            Some(tx) => {
                let _ = tx.send(response);
                true
            }
            None => false,
        }
    }

    pub(super) fn complete_sync(&mut self, response: SyncResponse) -> bool {
        match self.awaiting_sync.take() {
            Some(tx) => {
                let _ = tx.send(response);
                true
            }
            None => false,
        }
    }
}

pub(super) struct Group {
    pub id: String,
    pub state: State,
    pub previous_state: State,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: Option<String>,
    /// In the order they were added; the first one becomes leader.
    pub members: Vec<Member>,
    /// group.instance.id -> member id.
    pub static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
    pub pending_join: HashSet<String>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pub pending_sync: HashSet<String>,
    /// Set when a member joins during the initial (delayed) rebalance.
    pub new_member_added: bool,
    pub initial_rebalance_delay_ms: i32,
    pub timers: Timers,
}

impl Group {
    pub(super) fn new(id: String, timers: Timers, initial_rebalance_delay_ms: i32) -> Group {
        Group {
            id,
            state: State::Empty,
            previous_state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: Vec::new(),
            static_members: HashMap::new(),
            pending_join: HashSet::new(),
            pending_sync: HashSet::new(),
            new_member_added: false,
            initial_rebalance_delay_ms,
            timers,
        }
    }

    pub(super) fn transition(&mut self, to: State) {
        tracing::debug!(group = %self.id, from = self.state.name(), to = to.name(), "group state");
        self.previous_state = self.state;
        self.state = to;
    }

    pub(super) fn member(&self, id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.id == id)
    }

    pub(super) fn member_mut(&mut self, id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.id == id)
    }

    /// Empty with nobody joined or pending: the record can go.
    pub(super) fn is_idle(&self) -> bool {
        self.state == State::Empty && self.members.is_empty() && self.pending_join.is_empty()
    }

    pub(super) fn has_member(&self, id: &str) -> bool {
        self.member(id).is_some()
    }

    pub(super) fn is_leader(&self, id: &str) -> bool {
        self.leader.as_deref() == Some(id)
    }

    /// Stable, CompletingRebalance and Empty may move to PreparingRebalance.
    pub(super) fn can_rebalance(&self) -> bool {
        self.state != State::PreparingRebalance
    }

    pub(super) fn generate_member_id(client_id: &str, instance_id: Option<&str>) -> String {
        format!("{}-{}", instance_id.unwrap_or(client_id), uuid::Uuid::new_v4())
    }

    pub(super) fn add(&mut self, member: Member) {
        if let Some(instance) = &member.instance_id {
            self.static_members.insert(instance.clone(), member.id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.id.clone());
        }
        self.pending_join.remove(&member.id);
        self.members.push(member);
    }

    /// Removes a member (or a pending member id) and its heartbeat timer; re-elects the leader
    /// (first remaining member) if it was the leader. A parked join or sync of the member is
    /// answered UNKNOWN_MEMBER_ID so the client starts over.
    pub(super) fn remove(&mut self, id: &str) {
        if let Some(at) = self.members.iter().position(|m| m.id == id) {
            let mut gone = self.members.remove(at);
            if let Some(instance) = &gone.instance_id {
                self.static_members.remove(instance);
            }
            gone.complete_join(JoinResponse::error(errors::UNKNOWN_MEMBER_ID, String::new()));
            gone.complete_sync(SyncResponse::error(errors::UNKNOWN_MEMBER_ID));
        }
        if self.is_leader(id) {
            self.leader = self.members.first().map(|m| m.id.clone());
        }
        self.pending_join.remove(id);
        self.pending_sync.remove(id);
        self.timers.cancel(&TimerKey::Heartbeat(id.to_owned()));
    }

    /// Gives the static member `instance` the new member id `new_id`, fencing parked requests of
    /// the old id. The new member keeps the old one's place, assignment, client info and protocols.
    pub(super) fn replace_static_member(&mut self, instance: &str, old_id: &str, new_id: &str) {
        let Some(at) = self.members.iter().position(|m| m.id == old_id) else { return };
        let old = &mut self.members[at];
        old.complete_join(JoinResponse::error(errors::FENCED_INSTANCE_ID, old_id.to_owned()));
        old.complete_sync(SyncResponse::error(errors::FENCED_INSTANCE_ID));
        old.id = new_id.to_owned();
        old.is_new = false;
        if self.is_leader(old_id) {
            self.leader = Some(new_id.to_owned());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_owned());
        }
        self.static_members.insert(instance.to_owned(), new_id.to_owned());
        self.timers.cancel(&TimerKey::Heartbeat(old_id.to_owned()));
    }

    pub(super) fn validate_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<(), i16> {
        if let Some(instance) = instance_id {
            match self.static_members.get(instance) {
                None => return Err(errors::UNKNOWN_MEMBER_ID),
                Some(existing) if existing != member_id => return Err(errors::FENCED_INSTANCE_ID),
                Some(_) => {}
            }
        }
        if self.has_member(member_id) {
            Ok(())
        } else {
            Err(errors::UNKNOWN_MEMBER_ID)
        }
    }

    /// How many members support the protocol `name`.
    fn support_count(&self, name: &str) -> usize {
        self.members.iter().filter(|m| m.protocols.iter().any(|(n, _)| n == name)).count()
    }

    /// Can a member with this protocol type and these protocols join?
    pub(super) fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.state == State::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(name, _)| self.support_count(name) == self.members.len())
    }

    /// The protocol every member supports that most members list first among those.
    pub(super) fn select_protocol(&self) -> Option<String> {
        let first = self.members.first()?;
        let candidates: HashSet<&str> = first
            .protocols
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| self.support_count(name) == self.members.len())
            .collect();
        // Votes in order of first appearance, so ties go to the earliest member's choice.
        let mut votes: Vec<(&str, usize)> = Vec::new();
        for vote in self.members.iter().filter_map(|m| m.vote(&candidates)) {
            match votes.iter_mut().find(|(name, _)| *name == vote) {
                Some((_, n)) => *n += 1,
                None => votes.push((vote, 1)),
            }
        }
        let best = votes.iter().map(|(_, n)| *n).max()?;
        votes.iter().find(|(_, n)| *n == best).map(|(name, _)| (*name).to_owned())
    }

    pub(super) fn has_all_members_joined(&self) -> bool {
        self.pending_join.is_empty() && self.members.iter().all(|m| m.awaiting_join.is_some())
    }

    /// Largest rebalance timeout among the members (0 without members).
    pub(super) fn rebalance_timeout_ms(&self) -> i32 {
        self.members.iter().map(|m| m.rebalance_timeout_ms).max().unwrap_or(0)
    }

    /// If the leader has not re-joined, the first member that did takes over. False when the
    /// group has no leader or no member re-joined.
    pub(super) fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.as_deref() else { return false };
        if self.member(leader).is_some_and(|m| m.awaiting_join.is_some()) {
            return true;
        }
        match self.members.iter().find(|m| m.awaiting_join.is_some()) {
            Some(joined) => {
                tracing::info!(group = %self.id, old = leader, new = %joined.id, "leader did not re-join; new leader");
                self.leader = Some(joined.id.clone());
                true
            }
            None => false,
        }
    }

    /// The member list only the leader receives: ids, instance ids, metadata of the chosen protocol.
    pub(super) fn current_members(&self) -> Vec<JoinMember> {
        let protocol = self.protocol_name.as_deref();
        self.members
            .iter()
            .map(|m| JoinMember {
                member_id: m.id.clone(),
                group_instance_id: m.instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    /// A successful JoinGroup answer for `member_id` in the current generation.
    pub(super) fn join_response(&self, member_id: &str, with_members: bool, skip_assignment: bool) -> JoinResponse {
        JoinResponse {
            error: errors::NONE,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment,
            member_id: member_id.to_owned(),
            members: if with_members { self.current_members() } else { Vec::new() },
        }
    }

    /// Generation + 1; CompletingRebalance with a selected protocol, or Empty without members.
    pub(super) fn init_next_generation(&mut self) {
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition(State::Empty);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition(State::CompletingRebalance);
        }
        self.pending_sync.clear();
    }
}
