//! Unit tests of `store::timer` (through `use super::*`): they may import what it may, plus test crates.

use super::*;

const P: i64 = 1000;
const T: i64 = 1_800_000_000_000;

#[test]
fn units_come_back_per_slot_in_append_order() {
    let dir = tempfile::tempdir().unwrap();
    let (mut f, progress) = TimerFiles::open(dir.path(), P, 1 << 20).unwrap();
    assert_eq!(progress, TimerProgress { read_time_ms: 0, queue_offset: 0 }, "fresh store");
    for (i, slot) in [T, T + P, T, T].into_iter().enumerate() {
        f.add(slot, T - 5 * P, log::MAGIC_DEFAULT, 100 * i as i64, 90, 7, i as i64).unwrap();
    }
    let offsets = |f: &TimerFiles, t| f.units(t).iter().map(|u| u.commit_log_offset).collect::<Vec<_>>();
    assert_eq!(offsets(&f, T), vec![0, 200, 300]);
    assert_eq!(offsets(&f, T + P), vec![100]);
    assert_eq!(f.slot_count(T), 3);
    assert!(f.units(T + 2 * P).is_empty());
}

#[test]
fn recovery_relinks_slots_from_the_log_and_resumes_after_the_last_unit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut f, _) = TimerFiles::open(dir.path(), P, 1 << 20).unwrap();
        f.add(T, T - P, log::MAGIC_DEFAULT, 0, 90, 7, 0).unwrap();
        f.add(T, T - P, log::MAGIC_DEFAULT, 100, 90, 7, 1).unwrap();
        f.flush(TimerProgress { read_time_ms: T - P, queue_offset: 2 }).unwrap();
        // Then two more units whose wheel update never reached the file (the crash).
        f.add(T + P, T - P, log::MAGIC_DEFAULT, 200, 90, 7, 2).unwrap();
        f.add(T, T - P, log::MAGIC_DEFAULT, 300, 90, 7, 3).unwrap();
        f.log.flush().unwrap();
    }
    // Forget the wheel's newest state: the slots as of the flush.
    let wheel_path = dir.path().join("timerwheel");
    {
        let mut w = TimerWheel::open(&wheel_path, P).unwrap();
        w.put(wheel::Slot { time_ms: T, first_pos: 0, last_pos: 52, num: 2 });
        w.put(wheel::Slot { time_ms: T + P, first_pos: -1, last_pos: -1, num: 0 });
        w.flush().unwrap();
    }
    let (f, progress) = TimerFiles::open(dir.path(), P, 1 << 20).unwrap();
    assert_eq!(progress, TimerProgress { read_time_ms: T - P, queue_offset: 4 }, "resumes after the last unit");
    let offsets = |t| f.units(t).iter().map(|u| u.commit_log_offset).collect::<Vec<_>>();
    assert_eq!(offsets(T), vec![0, 100, 300]);
    assert_eq!(offsets(T + P), vec![200]);
}
