//! The manager: what the doors count reaches the sets mqadmin reads, each window sampled on
//! its own schedule (the clock is the `now_ms` given to `tick`).

use super::*;

fn stats() -> (BrokerStats, u64) {
    let t0 = now_ms();
    (BrokerStats::new("C1", t0), t0)
}

#[test]
fn puts_show_in_the_topic_sets_after_a_sample() {
    let (s, t0) = stats();
    s.tick(t0);
    for _ in 0..10 {
        s.put("T", 0, 2, 300, 1, false);
    }
    let minute = |name: &str, key: &str| s.set(name).map(|set| set.snapshot(key, Window::Minute)).unwrap_or_default();
    assert_eq!(minute(TOPIC_PUT_NUMS, "T").sum, 0, "nothing before the next sample");
    s.tick(t0 + 10_000);
    let nums = minute(TOPIC_PUT_NUMS, "T");
    assert_eq!(nums.sum, 20);
    assert!((nums.tps - 2.0).abs() < 1e-9, "{nums:?}");
    assert!((nums.avgpt - 2.0).abs() < 1e-9, "two messages an append: {nums:?}");
    assert_eq!(minute(TOPIC_PUT_SIZE, "T").sum, 3000);
    assert_eq!(minute(TOPIC_PUT_LATENCY, "0@T").sum, 10);
    assert_eq!(minute(BROKER_PUT_NUMS, "C1").sum, 20);
    assert!(s.set("NO_SUCH_STATS").is_none());
    assert!(s.set(TOPIC_PUT_NUMS).and_then(|set| set.get("other")).is_none());
}

#[test]
fn hour_and_day_windows_sample_on_their_own_schedule() {
    let (s, t0) = stats();
    s.put("T", 1, 5, 500, 0, false);
    // The first tick samples every window (Java: initial delay 0).
    s.tick(t0);
    let set = s.set(TOPIC_PUT_NUMS).expect("set");
    assert_eq!(set.snapshot("T", Window::Hour).sum, 5);
    assert_eq!(set.snapshot("T", Window::Day).sum, 5);
    s.put("T", 1, 5, 500, 0, false);
    // 10 s later: the minute window moves, the hour and day windows do not.
    s.tick(t0 + 10_000);
    assert_eq!(set.snapshot("T", Window::Minute).sum, 10);
    assert_eq!(set.snapshot("T", Window::Hour).sum, 5);
    // 10 min later the hour window takes its second snapshot; the day window waits an hour.
    s.tick(t0 + 600_000);
    assert_eq!(set.snapshot("T", Window::Hour).sum, 10);
    assert_eq!(set.snapshot("T", Window::Day).sum, 5);
    s.tick(t0 + 3_600_000);
    let day = set.snapshot("T", Window::Day);
    assert_eq!(day.sum, 10);
    assert!((day.tps - 10.0 / 7_200.0).abs() < 1e-12, "first day snapshot is one period back: {day:?}");
}

#[test]
fn pulls_give_the_group_its_consume_tps() {
    let (s, t0) = stats();
    s.tick(t0);
    for _ in 0..5 {
        s.pulled("G", "T", 4, 400, false);
    }
    s.pulled("G", "T", 0, 0, false);
    s.tick(t0 + 10_000);
    assert!((s.group_get_tps("G", "T") - 2.0).abs() < 1e-9);
    assert_eq!(s.group_get_tps("G", "other"), 0.0);
    let get = s.set(GROUP_GET_NUMS).expect("set").snapshot("T@G", Window::Minute);
    assert_eq!((get.sum, get.times), (20, 5), "a pull that found nothing is no call");
    assert_eq!(s.set(GROUP_GET_SIZE).expect("set").snapshot("T@G", Window::Minute).sum, 2000);
    assert_eq!(s.get_total(), 20);
    s.add_got(7);
    assert_eq!(s.get_total(), 27, "Kafka fetches count in the broker totals");
}

#[test]
fn system_topics_stay_out_of_the_daily_totals() {
    let (s, t0) = stats();
    s.put("T", 0, 3, 1, 0, false);
    s.put("RMQ_SYS_TRACE_TOPIC", 0, 4, 1, 0, true);
    assert_eq!(s.put_total(), 3);
    let mut info = std::collections::BTreeMap::new();
    s.runtime_info(t0, &mut |k, v| {
        info.insert(k.to_owned(), v);
    });
    assert_eq!(info["msgPutTotalTodayNow"], "3");
    assert_eq!(info["msgPutTotalTodayMorning"], "0");
    assert_eq!(info["putMessageTimesTotal"], "7", "the store counts every put");
    // Local midnight: today's morning total is taken.
    s.tick(next_local_midnight(t0));
    s.put("T", 0, 1, 1, 0, false);
    let mut info = std::collections::BTreeMap::new();
    s.runtime_info(t0, &mut |k, v| {
        info.insert(k.to_owned(), v);
    });
    assert_eq!(info["msgPutTotalTodayMorning"], "3");
    assert_eq!(info["msgPutTotalTodayNow"], "4");
}

#[test]
fn deleted_topics_and_groups_are_forgotten() {
    let (s, _) = stats();
    s.put("T", 0, 1, 1, 0, false);
    s.pulled("G", "T", 1, 1, false);
    s.pulled("G2", "U", 1, 1, false);
    s.topic_deleted("T");
    assert!(s.set(TOPIC_PUT_NUMS).and_then(|set| set.get("T")).is_none());
    assert!(s.set(TOPIC_PUT_LATENCY).and_then(|set| set.get("0@T")).is_none());
    assert!(s.set(GROUP_GET_NUMS).and_then(|set| set.get("T@G")).is_none());
    s.group_deleted("G2");
    assert!(s.set(GROUP_GET_NUMS).and_then(|set| set.get("U@G2")).is_none());
}

#[test]
fn midnight_is_after_now_and_within_a_day() {
    let t0 = now_ms();
    let m = next_local_midnight(t0);
    assert!(m > t0 && m <= t0 + 25 * 3_600_000, "{t0} -> {m}");
}
