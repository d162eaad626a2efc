//! Join / sync / rebalance tests with paused tokio time (timers fire as the clock auto-advances).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::*;

pub(super) const G: &str = "g1";

pub(super) fn coordinator() -> Arc<Coordinator> {
    Coordinator::new(CoordinatorConfig::default())
}

/// A v5 consumer JoinGroup: session 10 s, rebalance 30 s, protocol "range" with metadata "meta-<client>".
pub(super) fn req(client: &str) -> JoinRequest {
    JoinRequest {
        group_id: G.into(),
        member_id: String::new(),
        group_instance_id: None,
        client_id: client.into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from(format!("meta-{client}")))],
        version: 5,
        reason: None,
    }
}

/// Lets spawned tasks run without advancing the paused clock.
pub(super) async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Runs `f` in a task and notes when it finished.
pub(super) fn timed<F>(f: F) -> JoinHandle<(F::Output, Instant)>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(async move {
        let out = f.await;
        (out, Instant::now())
    })
}

pub(super) fn spawn_join(c: &Arc<Coordinator>, r: JoinRequest) -> JoinHandle<JoinResponse> {
    let c = c.clone();
    tokio::spawn(async move { c.join(r).await })
}

/// MEMBER_ID_REQUIRED first, then the real JoinGroup parked in a task.
pub(super) async fn start(c: &Arc<Coordinator>, r: JoinRequest) -> (String, JoinHandle<JoinResponse>) {
    let first = c.join(r.clone()).await;
    assert_eq!(first.error, errors::MEMBER_ID_REQUIRED);
    assert_eq!(first.generation_id, -1);
    assert!(first.member_id.starts_with(&format!("{}-", r.client_id)), "{}", first.member_id);
    let id = first.member_id.clone();
    let handle = spawn_join(c, JoinRequest { member_id: id.clone(), ..r });
    settle().await;
    (id, handle)
}

pub(super) fn spawn_sync(
    c: &Arc<Coordinator>,
    member: &str,
    generation: i32,
    assignments: Vec<(String, Bytes)>,
) -> JoinHandle<SyncResponse> {
    let c = c.clone();
    let r = SyncRequest {
        group_id: G.into(),
        member_id: member.into(),
        generation_id: generation,
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments,
    };
    tokio::spawn(async move { c.sync(r).await })
}

pub(super) fn state(c: &Arc<Coordinator>) -> &'static str {
    c.describe_group(G).state
}

/// Members a (leader) and b joined and synced: generation 1, Stable, assignments "asg-a"/"asg-b".
pub(super) async fn stable_pair(c: &Arc<Coordinator>) -> (String, String) {
    let (a, ja) = start(c, req("a")).await;
    let (b, jb) = start(c, req("b")).await;
    let (ra, rb) = (ja.await.unwrap(), jb.await.unwrap());
    assert_eq!((ra.error, rb.error, ra.generation_id, rb.generation_id), (0, 0, 1, 1));
    let sb = spawn_sync(c, &b, 1, vec![]);
    let assignments = vec![(a.clone(), Bytes::from("asg-a")), (b.clone(), Bytes::from("asg-b"))];
    let sa = spawn_sync(c, &a, 1, assignments);
    assert_eq!(sa.await.unwrap().assignment, Bytes::from("asg-a"));
    assert_eq!(sb.await.unwrap().assignment, Bytes::from("asg-b"));
    assert_eq!(state(c), "Stable");
    (a, b)
}

#[tokio::test(start_paused = true)]
async fn two_members_join_then_sync() {
    let c = coordinator();
    let t0 = Instant::now();
    let (a, ja) = start(&c, req("a")).await;
    let (b, jb) = start(&c, req("b")).await;
    assert_eq!(state(&c), "PreparingRebalance");
    let (ra, rb) = (ja.await.unwrap(), jb.await.unwrap());
    // Delay 3 s, extended once by 3 s because b arrived during the first delay.
    assert_eq!(t0.elapsed(), Duration::from_millis(6000));
    assert_eq!((ra.error, ra.generation_id, ra.leader.as_str(), ra.member_id.as_str()), (0, 1, a.as_str(), a.as_str()));
    assert_eq!(ra.protocol_name.as_deref(), Some("range"));
    assert_eq!(ra.protocol_type.as_deref(), Some("consumer"));
    let listed: Vec<(&str, &[u8])> = ra.members.iter().map(|m| (m.member_id.as_str(), m.metadata.as_ref())).collect();
    assert_eq!(listed, vec![(a.as_str(), &b"meta-a"[..]), (b.as_str(), &b"meta-b"[..])]);
    assert_eq!((rb.error, rb.generation_id, rb.leader.as_str(), rb.member_id.as_str()), (0, 1, a.as_str(), b.as_str()));
    assert!(rb.members.is_empty());
    assert_eq!(state(&c), "CompletingRebalance");

    // The follower's SyncGroup parks until the leader brings the assignments.
    let sb = spawn_sync(&c, &b, 1, vec![]);
    settle().await;
    assert!(!sb.is_finished());
    assert_eq!(c.heartbeat(G, &b, 1, None), errors::NONE);
    let assignments = vec![(a.clone(), Bytes::from("asg-a")), (b.clone(), Bytes::from("asg-b"))];
    let sa = c.sync(SyncRequest {
        group_id: G.into(),
        member_id: a.clone(),
        generation_id: 1,
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments,
    });
    let sa = sa.await;
    let sb = sb.await.unwrap();
    assert_eq!((sa.error, sa.assignment.as_ref()), (0, &b"asg-a"[..]));
    assert_eq!((sb.error, sb.assignment.as_ref()), (0, &b"asg-b"[..]));
    assert_eq!(sb.protocol_name.as_deref(), Some("range"));
    assert_eq!(state(&c), "Stable");
    assert_eq!(t0.elapsed(), Duration::from_millis(6000));

    // A late SyncGroup in Stable returns the stored assignment.
    let again = spawn_sync(&c, &b, 1, vec![]).await.unwrap();
    assert_eq!(again.assignment, Bytes::from("asg-b"));
}

#[tokio::test(start_paused = true)]
async fn single_member_waits_exactly_the_initial_delay() {
    let c = coordinator();
    let t0 = Instant::now();
    let (a, ja) = start(&c, req("a")).await;
    tokio::time::sleep(Duration::from_millis(2999)).await;
    settle().await;
    assert!(!ja.is_finished());
    let ra = ja.await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(3000));
    assert_eq!((ra.generation_id, ra.leader.as_str(), ra.members.len()), (1, a.as_str(), 1));
}

#[tokio::test(start_paused = true)]
async fn initial_delay_is_bounded_by_the_rebalance_timeout() {
    let c = coordinator();
    let t0 = Instant::now();
    let short = |client: &str| JoinRequest { rebalance_timeout_ms: 5000, ..req(client) };
    let (_, ja) = start(&c, short("a")).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (_, jb) = start(&c, short("b")).await;
    tokio::time::sleep(Duration::from_millis(3000)).await;
    // t = 4 s: the delay was extended to 5 s (remaining rebalance time), not to 6 s.
    let (_, jc) = start(&c, short("c")).await;
    let (ra, rb, rc) = (ja.await.unwrap(), jb.await.unwrap(), jc.await.unwrap());
    assert_eq!(t0.elapsed(), Duration::from_millis(5000));
    assert_eq!((ra.generation_id, rb.generation_id, rc.generation_id), (1, 1, 1));
    assert_eq!(ra.members.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn new_member_triggers_rebalance_and_the_others_rejoin() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    let (cid, jc) = start(&c, req("c")).await;
    assert_eq!(state(&c), "PreparingRebalance");
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::REBALANCE_IN_PROGRESS);
    let t0 = Instant::now();
    let ja = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") });
    let jb = spawn_join(&c, JoinRequest { member_id: b.clone(), ..req("b") });
    let (ra, rb, rc) = (ja.await.unwrap(), jb.await.unwrap(), jc.await.unwrap());
    // Not an initial rebalance: it completes as soon as every member is in.
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!((ra.generation_id, rb.generation_id, rc.generation_id), (2, 2, 2));
    assert_eq!((ra.leader.as_str(), ra.members.len(), rb.members.len(), rc.members.len()), (a.as_str(), 3, 0, 0));
    assert_eq!(rc.member_id, cid);
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::ILLEGAL_GENERATION);
    assert_eq!(c.heartbeat(G, &a, 2, None), errors::NONE);
}

#[tokio::test(start_paused = true)]
async fn members_that_do_not_rejoin_are_dropped_at_the_rebalance_timeout() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    let t0 = Instant::now();
    // The leader re-joins a Stable group: rebalance. b keeps heartbeating but never re-joins.
    let c2 = c.clone();
    let ra_id = a.clone();
    let ja = timed(async move { c2.join(JoinRequest { member_id: ra_id, ..req("a") }).await });
    settle().await;
    assert_eq!(state(&c), "PreparingRebalance");
    for _ in 0..9 {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        assert_eq!(c.heartbeat(G, &b, 1, None), errors::REBALANCE_IN_PROGRESS);
    }
    let (ra, done) = ja.await.unwrap();
    assert_eq!(done - t0, Duration::from_millis(30_000));
    assert_eq!(ra.generation_id, 2);
    assert_eq!(ra.members.iter().map(|m| m.member_id.as_str()).collect::<Vec<_>>(), vec![a.as_str()]);
    assert_eq!(c.heartbeat(G, &b, 2, None), errors::UNKNOWN_MEMBER_ID);
}

#[tokio::test(start_paused = true)]
async fn session_expiry_removes_member_and_completes_parked_join() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    let t0 = Instant::now();
    // a re-joins (leader: rebalance) and waits; b went silent and never re-joins.
    let ja = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") });
    let ra = ja.await.unwrap();
    // b's session (10 s since its last sync) ends before the 30 s rebalance timeout.
    assert_eq!(t0.elapsed(), Duration::from_millis(10_000));
    assert_eq!((ra.error, ra.generation_id, ra.members.len()), (0, 2, 1));
    assert_eq!(c.heartbeat(G, &b, 1, None), errors::UNKNOWN_MEMBER_ID);
    assert_eq!(c.describe_group(G).members.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn session_expiry_in_stable_starts_a_rebalance() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        assert_eq!(c.heartbeat(G, &a, 1, None), errors::NONE);
    }
    // t = 10.5 s after the sync: b expired at 10 s, a must re-join.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(state(&c), "PreparingRebalance");
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::REBALANCE_IN_PROGRESS);
    assert_eq!(c.heartbeat(G, &b, 1, None), errors::UNKNOWN_MEMBER_ID);
    let ra = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") }).await.unwrap();
    assert_eq!((ra.generation_id, ra.members.len()), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn leave_starts_a_rebalance() {
    let c = coordinator();
    let (a, b) = stable_pair(&c).await;
    let gone = LeaveMember { member_id: b.clone(), group_instance_id: None };
    assert_eq!(c.leave(G, std::slice::from_ref(&gone)), (errors::NONE, vec![errors::NONE]));
    assert_eq!(state(&c), "PreparingRebalance");
    assert_eq!(c.leave(G, &[gone]), (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID]));
    let ra = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") }).await.unwrap();
    assert_eq!((ra.generation_id, ra.members.len()), (2, 1));
    // The last member leaves: the next join phase finds nobody and the group is Empty.
    let last = LeaveMember { member_id: a.clone(), group_instance_id: None };
    assert_eq!(c.leave(G, &[last]).1, vec![errors::NONE]);
    let d = c.describe_group(G);
    assert_eq!((d.state, d.members.len()), ("Empty", 0));
    assert_eq!(c.validate_offset_commit(G, "", -1, None, 8), errors::NONE);
    assert_eq!(c.validate_offset_commit(G, &a, 3, None, 8), errors::UNKNOWN_MEMBER_ID);
    let unknown = c.leave("nope", &[LeaveMember { member_id: "x".into(), group_instance_id: None }]);
    assert_eq!(unknown, (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID]));
    assert_eq!(c.leave("", &[]).0, errors::INVALID_GROUP_ID);
}

#[tokio::test(start_paused = true)]
async fn sync_timeout_removes_members_that_did_not_sync() {
    let c = coordinator();
    let (a, ja) = start(&c, req("a")).await;
    let (b, jb) = start(&c, req("b")).await;
    let (_, rb) = (ja.await.unwrap(), jb.await.unwrap());
    assert_eq!(rb.generation_id, 1);
    let t0 = Instant::now();
    // Only the follower syncs; the leader keeps heartbeating but never syncs.
    let sb = timed(spawn_sync(&c, &b, 1, vec![]));
    for _ in 0..9 {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        assert_eq!(c.heartbeat(G, &a, 1, None), errors::NONE);
    }
    let (sb, done) = sb.await.unwrap();
    assert_eq!(done - t0, Duration::from_millis(30_000));
    assert_eq!(sb.unwrap().error, errors::REBALANCE_IN_PROGRESS);
    assert_eq!(state(&c), "PreparingRebalance");
    assert_eq!(c.heartbeat(G, &a, 1, None), errors::UNKNOWN_MEMBER_ID);
    let rb = spawn_join(&c, JoinRequest { member_id: b.clone(), ..req("b") }).await.unwrap();
    assert_eq!((rb.generation_id, rb.leader.as_str(), rb.members.len()), (2, b.as_str(), 1));
}

#[tokio::test(start_paused = true)]
async fn dropped_join_future_does_not_break_the_group() {
    let c = coordinator();
    let (a, ja) = start(&c, req("a")).await;
    let (b, jb) = start(&c, req("b")).await;
    jb.abort(); // b's client disconnected while parked
    let ra = ja.await.unwrap();
    assert_eq!((ra.generation_id, ra.members.len()), (1, 2));
    let t0 = Instant::now();
    let assignments = vec![(a.clone(), Bytes::from("asg-a")), (b.clone(), Bytes::from("asg-b"))];
    assert_eq!(spawn_sync(&c, &a, 1, assignments).await.unwrap().error, errors::NONE);
    assert_eq!(state(&c), "Stable");
    // b never syncs nor heartbeats: its session ends 10 s after the join phase, a must re-join.
    let mut code = errors::NONE;
    while code == errors::NONE {
        tokio::time::sleep(Duration::from_millis(3000)).await;
        code = c.heartbeat(G, &a, 1, None);
    }
    assert_eq!((code, t0.elapsed()), (errors::REBALANCE_IN_PROGRESS, Duration::from_millis(12_000)));
    assert_eq!(c.heartbeat(G, &b, 1, None), errors::UNKNOWN_MEMBER_ID);
    let ra = spawn_join(&c, JoinRequest { member_id: a.clone(), ..req("a") }).await.unwrap();
    assert_eq!((ra.generation_id, ra.members.len()), (2, 1));
}
