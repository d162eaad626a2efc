//! The coordinator's bounds: what a flood of JoinGroups can make it hold, and idle groups going.

use std::sync::Arc;
use std::time::Duration;

use super::tests::*;
use super::*;

fn bounded() -> Arc<Coordinator> {
    Coordinator::new(CoordinatorConfig {
        max_group_size: 10,
        max_pending_members: 25,
        max_groups: 30,
        ..CoordinatorConfig::default()
    })
}

fn in_group(group: &str, client: &str, version: i16) -> JoinRequest {
    JoinRequest { group_id: group.into(), version, ..req(client) }
}

/// Before the bounds: every JoinGroup without a member id added a pending id and its timer, in
/// one group or in a fresh one each time, and a group once created stayed for ever.
#[tokio::test(start_paused = true)]
async fn a_join_flood_leaves_bounded_state_and_idle_groups_go() {
    let c = bounded();
    for i in 0..15 {
        let r = c.join(req(&format!("c{i}"))).await;
        let want = if i < 10 { errors::MEMBER_ID_REQUIRED } else { errors::GROUP_MAX_SIZE_REACHED };
        assert_eq!(r.error, want, "join {i} of one group");
    }
    for i in 0..100 {
        let r = c.join(in_group(&format!("fresh-{i}"), "x", 5)).await;
        let want = if i < 15 { errors::MEMBER_ID_REQUIRED } else { errors::COORDINATOR_LOAD_IN_PROGRESS };
        assert_eq!(r.error, want, "fresh group {i}");
    }
    assert_eq!((c.pending_count(), c.group_count()), (25, 16));
    // Old clients join directly (no pending id): the group count is what bounds them.
    let parked: Vec<_> = (0..40).map(|i| spawn_join(&c, in_group(&format!("old-{i}"), "o", 3))).collect();
    settle().await;
    assert_eq!(c.group_count(), 30);
    // Pending ids expire with their session timeout (10 s); their groups are then idle.
    tokio::time::sleep(Duration::from_secs(11)).await;
    settle().await;
    assert_eq!(c.pending_count(), 0);
    let refused = futures_util::future::join_all(parked).await;
    let codes: Vec<i16> = refused.into_iter().map(|r| r.unwrap().error).collect();
    assert_eq!(codes.iter().filter(|e| **e == errors::COORDINATOR_LOAD_IN_PROGRESS).count(), 26);
    assert_eq!(c.sweep_idle(), 16, "the groups of expired pending ids");
    assert_eq!(c.group_count(), 14, "the old clients' groups, whose members are alive");
}
