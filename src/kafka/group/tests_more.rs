//! Error codes, static membership, protocol selection, OffsetCommit checks, describe / list.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::tests::{coordinator, req, settle, spawn_join, spawn_sync, stable_pair, start, state, G};
use super::*;

fn static_req(client: &str, instance: &str) -> JoinRequest {
    JoinRequest { group_instance_id: Some(instance.into()), ..req(client) }
}

#[tokio::test(start_paused = true)]
async fn join_rejections() {
    let c = coordinator();
    let r = c.join(JoinRequest { group_id: String::new(), ..req("a") }).await;
    assert_eq!((r.error, r.generation_id, r.leader.as_str()), (errors::INVALID_GROUP_ID, -1, ""));
    let r = c.join(JoinRequest { session_timeout_ms: 5999, ..req("a") }).await;
    assert_eq!(r.error, errors::INVALID_SESSION_TIMEOUT);
    let r = c.join(JoinRequest { session_timeout_ms: 1_800_001, ..req("a") }).await;
    assert_eq!(r.error, errors::INVALID_SESSION_TIMEOUT);
    let r = c.join(JoinRequest { member_id: "ghost".into(), group_id: "other".into(), ..req("a") }).await;
    assert_eq!((r.error, r.member_id.as_str()), (errors::UNKNOWN_MEMBER_ID, "ghost"));
    let r = c.join(JoinRequest { protocols: vec![], ..req("a") }).await;
    assert_eq!(r.error, errors::INCONSISTENT_GROUP_PROTOCOL);

    let (_a, _b) = stable_pair(&c).await;
    let r = c.join(JoinRequest { protocol_type: "connect".into(), ..req("x") }).await;
    assert_eq!((r.error, r.member_id.as_str()), (errors::INCONSISTENT_GROUP_PROTOCOL, ""));
    let r = c.join(JoinRequest { protocols: vec![("roundrobin".into(), Bytes::new())], ..req("x") }).await;
    assert_eq!(r.error, errors::INCONSISTENT_GROUP_PROTOCOL);
    assert_eq!(state(&c), "Stable");
}

#[tokio::test(start_paused = true)]
async fn old_versions_join_without_member_id_required() {
    let c = coordinator();
    let t0 = tokio::time::Instant::now();
    let r = spawn_join(&c, JoinRequest { version: 3, ..req("a") }).await.unwrap();
    assert_eq!((r.error, r.generation_id), (errors::NONE, 1));
    assert!(r.member_id.starts_with("a-"));
    assert_eq!((r.leader.as_str(), r.members.len()), (r.member_id.as_str(), 1));
    assert_eq!(t0.elapsed(), Duration::from_millis(3000));
}

#[tokio::test(start_paused = true)]
async fn protocol_is_chosen_by_votes() {
    let c = coordinator();
    let both = |client: &str, first: &str, second: &str| JoinRequest {
        protocols: vec![(first.into(), Bytes::from(format!("{client}-{first}"))), (second.into(), Bytes::new())],
        ..req(client)
    };
    let (_, ja) = start(&c, both("a", "range", "roundrobin")).await;
    let (_, jb) = start(&c, both("b", "roundrobin", "range")).await;
    let (_, jc) = start(&c, both("c", "roundrobin", "range")).await;
    let ra = ja.await.unwrap();
    jb.await.unwrap();
    jc.await.unwrap();
    assert_eq!(ra.protocol_name.as_deref(), Some("roundrobin"));
    // The leader receives each member's metadata for the chosen protocol.
    let metadata: Vec<Bytes> = ra.members.iter().map(|m| m.metadata.clone()).collect();
    assert_eq!(metadata, vec![Bytes::new(), Bytes::from("b-roundrobin"), Bytes::from("c-roundrobin")]);
}

#[tokio::test(start_paused = true)]
async fn heartbeat_codes_by_state() {
    let c = coordinator();
    assert_eq!(c.heartbeat("", "m", 0, None), errors::INVALID_GROUP_ID);
    assert_eq!(c.heartbeat(G, "m", 0, None), errors::UNKNOWN_MEMBER_ID);
    let (a, ja) = start(&c, req("a")).await;
    assert_eq!(c.heartbeat(G, &a, 0, None), errors::REBALANCE_IN_PROGRESS);
    ja.await.unwrap();
    assert_eq!(state(&c), "CompletingRebalance");
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::NONE);
    assert_eq!(c.heartbeat(G, &a, 0, None), errors::ILLEGAL_GENERATION);
    assert_eq!(c.heartbeat(G, "other", 1, None), errors::UNKNOWN_MEMBER_ID);
    assert_eq!(c.heartbeat(G, &a, 1, Some("inst")), errors::UNKNOWN_MEMBER_ID);
    let sa = spawn_sync(&c, &a, 1, vec![(a.clone(), Bytes::from("x"))]).await.unwrap();
    assert_eq!(sa.error, errors::NONE);
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::NONE);
}

#[tokio::test(start_paused = true)]
async fn sync_errors() {
    let c = coordinator();
    assert_eq!(spawn_sync(&c, "m", 1, vec![]).await.unwrap().error, errors::UNKNOWN_MEMBER_ID);
    let (a, b) = stable_pair(&c).await;
    assert_eq!(spawn_sync(&c, &a, 7, vec![]).await.unwrap().error, errors::ILLEGAL_GENERATION);
    assert_eq!(spawn_sync(&c, "nobody", 1, vec![]).await.unwrap().error, errors::UNKNOWN_MEMBER_ID);
    let wrong = SyncRequest {
        group_id: G.into(),
        member_id: b.clone(),
        generation_id: 1,
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("roundrobin".into()),
        assignments: vec![],
    };
    assert_eq!(c.sync(wrong.clone()).await.error, errors::INCONSISTENT_GROUP_PROTOCOL);
    // Absent fields (v0-4) are not checked.
    let old = c.sync(SyncRequest { protocol_type: None, protocol_name: None, ..wrong }).await;
    assert_eq!((old.error, old.assignment.as_ref()), (errors::NONE, &b"asg-b"[..]));
    assert_eq!(c.validate_offset_commit(G, &b, 2, None, 8), errors::ILLEGAL_GENERATION);
    // A third member makes it PreparingRebalance.
    let (_c3, _jc) = start(&c, req("c")).await;
    assert_eq!(spawn_sync(&c, &a, 1, vec![]).await.unwrap().error, errors::REBALANCE_IN_PROGRESS);
}

#[tokio::test(start_paused = true)]
async fn stable_follower_rejoin_is_answered_at_once_leader_rejoin_rebalances() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    let rb = c.join(JoinRequest { member_id: b.clone(), ..req("b") }).await;
    assert_eq!((rb.error, rb.generation_id, rb.leader.as_str(), rb.members.len()), (0, 1, a.as_str(), 0));
    assert_eq!(state(&c), "Stable");
    // Changed metadata forces a rebalance.
    let changed =
        JoinRequest { member_id: b.clone(), protocols: vec![("range".into(), Bytes::from("new"))], ..req("b") };
    let jb = spawn_join(&c, changed);
    settle().await;
    assert_eq!(state(&c), "PreparingRebalance");
    let ra = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") }).await.unwrap();
    let rb = jb.await.unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    assert_eq!(ra.members[1].metadata, Bytes::from("new"));
}

#[tokio::test(start_paused = true)]
async fn static_member_is_replaced_without_rebalance() {
    let c = coordinator();
    // Static members never get MEMBER_ID_REQUIRED.
    let ja = spawn_join(&c, static_req("a", "ia"));
    settle().await;
    let jb = spawn_join(&c, static_req("b", "ib"));
    let (ra, rb) = (ja.await.unwrap(), jb.await.unwrap());
    let (a, b) = (ra.member_id.clone(), rb.member_id.clone());
    assert!(a.starts_with("ia-") && b.starts_with("ib-"));
    assert_eq!(
        (ra.generation_id, ra.leader.as_str(), ra.members[1].group_instance_id.as_deref()),
        (1, a.as_str(), Some("ib"))
    );
    let asg = vec![(a.clone(), Bytes::from("asg-a")), (b.clone(), Bytes::from("asg-b"))];
    let sync_b = spawn_sync(&c, &b, 1, vec![]);
    spawn_sync(&c, &a, 1, asg).await.unwrap();
    sync_b.await.unwrap();

    // b restarts (v5): new member id, same generation, no rebalance; the old id is fenced.
    let rb2 = c.join(static_req("b", "ib")).await;
    assert_eq!((rb2.error, rb2.generation_id, rb2.leader.as_str(), rb2.skip_assignment), (0, 1, a.as_str(), false));
    assert_ne!(rb2.member_id, b);
    assert_eq!(state(&c), "Stable");
    assert_eq!(c.heartbeat(G, &b, 1, Some("ib")), errors::FENCED_INSTANCE_ID);
    assert_eq!(c.heartbeat(G, &rb2.member_id, 1, Some("ib")), errors::NONE);
    assert_eq!(c.validate_offset_commit(G, &b, 1, Some("ib"), 8), errors::FENCED_INSTANCE_ID);
    let mut s = spawn_sync(&c, &rb2.member_id, 1, vec![]).await.unwrap();
    assert_eq!(s.assignment, Bytes::from("asg-b"));

    // The static leader restarts with v9: it gets the members and skip_assignment.
    let ra2 = c.join(JoinRequest { version: 9, ..static_req("a", "ia") }).await;
    assert_eq!((ra2.generation_id, ra2.leader.as_str(), ra2.skip_assignment), (1, ra2.member_id.as_str(), true));
    assert_eq!(ra2.members.len(), 2);
    s = spawn_sync(&c, &ra2.member_id, 1, vec![]).await.unwrap();
    assert_eq!(s.assignment, Bytes::from("asg-a"));

    // Static removal by instance id with member id "" (LeaveGroup v3+ batch).
    let leave = [
        LeaveMember { member_id: String::new(), group_instance_id: Some("ib".into()) },
        LeaveMember { member_id: String::new(), group_instance_id: Some("zz".into()) },
        LeaveMember { member_id: "wrong".into(), group_instance_id: Some("ia".into()) },
    ];
    let expected = vec![errors::NONE, errors::UNKNOWN_MEMBER_ID, errors::FENCED_INSTANCE_ID];
    assert_eq!(c.leave(G, &leave), (errors::NONE, expected));
    assert_eq!(state(&c), "PreparingRebalance");
}

#[tokio::test(start_paused = true)]
async fn static_members_are_kept_when_they_miss_a_join_phase() {
    let c = coordinator();
    let ja = spawn_join(&c, static_req("a", "ia"));
    settle().await;
    let (d, jd) = start(&c, req("d")).await;
    let a = ja.await.unwrap().member_id;
    jd.await.unwrap();
    let asg = vec![(a.clone(), Bytes::from("asg-a")), (d.clone(), Bytes::from("asg-d"))];
    let sd = spawn_sync(&c, &d, 1, vec![]);
    spawn_sync(&c, &a, 1, asg).await.unwrap();
    sd.await.unwrap();
    // d (dynamic follower) re-joins with new metadata; the static leader a does not re-join.
    let changed =
        JoinRequest { member_id: d.clone(), protocols: vec![("range".into(), Bytes::from("v2"))], ..req("d") };
    let jd = spawn_join(&c, changed);
    for _ in 0..9 {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        assert_eq!(c.heartbeat(G, &a, 1, Some("ia")), errors::REBALANCE_IN_PROGRESS);
    }
    let rd = jd.await.unwrap();
    // At the rebalance timeout a is kept (static) but d, who re-joined, leads.
    assert_eq!((rd.generation_id, rd.leader.as_str(), rd.members.len()), (2, d.as_str(), 2));
}

#[tokio::test(start_paused = true)]
async fn offset_commit_checks() {
    let c = coordinator();
    assert_eq!(c.validate_offset_commit("simple", "", -1, None, 8), errors::NONE);
    assert_eq!(c.validate_offset_commit("simple", "m", 3, None, 8), errors::ILLEGAL_GENERATION);
    assert_eq!(c.validate_offset_commit("simple", "m", 3, None, 9), errors::GROUP_ID_NOT_FOUND);
    assert_eq!(c.validate_offset_commit("", "m", 3, None, 9), errors::INVALID_GROUP_ID);
    let (a, ja) = start(&c, req("a")).await;
    ja.await.unwrap();
    assert_eq!(c.validate_offset_commit(G, &a, 1, None, 8), errors::REBALANCE_IN_PROGRESS);
    assert_eq!(c.validate_offset_commit(G, "", -1, None, 8), errors::UNKNOWN_MEMBER_ID);
    spawn_sync(&c, &a, 1, vec![]).await.unwrap();
    assert_eq!(c.validate_offset_commit(G, &a, 1, None, 8), errors::NONE);
    assert_eq!(c.validate_offset_commit(G, &a, 0, None, 8), errors::ILLEGAL_GENERATION);
    assert_eq!(c.validate_offset_commit(G, "x", 1, None, 8), errors::UNKNOWN_MEMBER_ID);
    assert_eq!(c.validate_offset_commit(G, &a, -1, None, 8), errors::ILLEGAL_GENERATION);
}

#[tokio::test(start_paused = true)]
async fn describe_list_and_delete() {
    let c = coordinator();
    let dead = c.describe_group("nope");
    assert_eq!((dead.error, dead.state, dead.members.len()), (errors::NONE, "Dead", 0));
    assert!(c.list_groups().is_empty());
    let (a, b) = stable_pair(&c).await;
    let d = c.describe_group(G);
    assert_eq!((d.state, d.protocol_type.as_str(), d.protocol.as_str()), ("Stable", "consumer", "range"));
    let m: Vec<(&str, &str, &[u8], &[u8])> = d
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), m.client_id.as_str(), m.metadata.as_ref(), m.assignment.as_ref()))
        .collect();
    assert_eq!(
        m,
        vec![(a.as_str(), "a", &b"meta-a"[..], &b"asg-a"[..]), (b.as_str(), "b", &b"meta-b"[..], &b"asg-b"[..])]
    );
    assert_eq!(d.members[0].client_host, "/127.0.0.1");
    let listed = c.list_groups();
    assert_eq!(listed, vec![GroupListing { group_id: G.into(), protocol_type: "consumer".into(), state: "Stable" }]);
    assert_eq!(c.delete_group(G), errors::NON_EMPTY_GROUP);

    // PreparingRebalance: no protocol and no metadata shown.
    let _third = start(&c, req("c")).await;
    let d = c.describe_group(G);
    assert_eq!((d.state, d.protocol.as_str(), d.members[0].metadata.len()), ("PreparingRebalance", "", 0));

    let all: Vec<LeaveMember> = c
        .describe_group(G)
        .members
        .iter()
        .map(|m| LeaveMember { member_id: m.member_id.clone(), group_instance_id: None })
        .collect();
    assert_eq!(c.leave(G, &all).1, vec![errors::NONE; 3]);
    assert_eq!(c.list_groups()[0].state, "Empty");
    assert_eq!(c.delete_group(G), errors::NONE);
    assert_eq!(c.delete_group(G), errors::GROUP_ID_NOT_FOUND);
    assert!(c.list_groups().is_empty());
}

#[tokio::test(start_paused = true)]
async fn pending_member_expires_and_timers_do_not_keep_the_coordinator_alive() {
    let c = coordinator();
    let first = c.join(req("a")).await;
    assert_eq!(first.error, errors::MEMBER_ID_REQUIRED);
    // Never comes back: after its session timeout the id is forgotten.
    tokio::time::sleep(Duration::from_millis(10_001)).await;
    let r = c.join(JoinRequest { member_id: first.member_id.clone(), ..req("a") }).await;
    assert_eq!(r.error, errors::UNKNOWN_MEMBER_ID);

    let (_b, jb) = start(&c, req("b")).await; // timers scheduled, a join parked
    jb.abort(); // the parked request (which holds an Arc) goes away
    let weak = Arc::downgrade(&c);
    drop(c);
    settle().await;
    assert!(weak.upgrade().is_none());
}
