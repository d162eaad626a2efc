//! The timing wheel file `timerwheel` (`TimerWheel.java`): one 32-byte slot per precision step,
//! two weeks' worth of slots at 1 s, so a slot is found by arithmetic. Each slot heads the chain
//! of timer-log units due at its time.
//!
//! ```text
//! slot  timeMs/precision:i64  firstPos:i64  lastPos:i64  num:i32  magic:i32   (big-endian)
//! index = timeMs / precision % (2 * SLOTS_TOTAL)
//! ```
//! A slot whose stored time is not the one asked for belongs to an earlier lap and reads as
//! empty. The file is mapped and written in place: memory is the page cache of the slots used,
//! whatever the number of timers.
//!
//! May import: `crate::store::mapped_file`.

use std::path::Path;

use crate::store::mapped_file::MappedRegion;

/// `TimerMessageStore.DAY_SECS * 7`: slots per lap (independent of the precision).
pub const SLOTS_TOTAL: i64 = 7 * 86_400;
const SLOT_SIZE: usize = 32;
/// Length of the `timerwheel` file.
pub const WHEEL_FILE_SIZE: usize = SLOTS_TOTAL as usize * 2 * SLOT_SIZE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub time_ms: i64,
    pub first_pos: i64,
    pub last_pos: i64,
    pub num: i32,
}

pub struct TimerWheel {
    region: MappedRegion,
    precision_ms: i64,
}

impl TimerWheel {
    pub fn open(path: &Path, precision_ms: i64) -> std::io::Result<Self> {
        Ok(Self { region: MappedRegion::open_or_create(path, WHEEL_FILE_SIZE)?, precision_ms })
    }

    fn at(&self, time_ms: i64) -> usize {
        (time_ms / self.precision_ms).rem_euclid(SLOTS_TOTAL * 2) as usize * SLOT_SIZE
    }

    fn long(&self, at: usize) -> i64 {
        i64::from_be_bytes(self.region[at..at + 8].try_into().unwrap_or([0; 8]))
    }

    /// The slot of `time_ms`, if it holds that time's units (not an earlier lap's, not empty).
    pub fn slot(&self, time_ms: i64) -> Option<Slot> {
        let at = self.at(time_ms);
        if self.long(at) != time_ms / self.precision_ms {
            return None;
        }
        let num = i32::from_be_bytes(self.region[at + 24..at + 28].try_into().unwrap_or([0; 4]));
        let slot = Slot { time_ms, first_pos: self.long(at + 8), last_pos: self.long(at + 16), num };
        (slot.last_pos >= 0).then_some(slot)
    }

    /// Writes the slot of `slot.time_ms` (the magic word is kept as is).
    pub fn put(&mut self, slot: Slot) {
        let at = self.at(slot.time_ms);
        let r = &mut self.region[at..at + 28];
        r[..8].copy_from_slice(&(slot.time_ms / self.precision_ms).to_be_bytes());
        r[8..16].copy_from_slice(&slot.first_pos.to_be_bytes());
        r[16..24].copy_from_slice(&slot.last_pos.to_be_bytes());
        r[24..28].copy_from_slice(&slot.num.to_be_bytes());
    }

    /// Adds the unit at `pos` as the newest of `time_ms`'s chain.
    pub fn push(&mut self, time_ms: i64, pos: i64, delta: i32) {
        let slot = match self.slot(time_ms) {
            Some(s) => Slot { last_pos: pos, num: s.num + delta, ..s },
            None => Slot { time_ms, first_pos: pos, last_pos: pos, num: delta },
        };
        self.put(slot);
    }

    /// msyncs the slots changed since the last flush. Blocking.
    pub fn flush(&self) -> std::io::Result<()> {
        self.region.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_of_an_earlier_lap_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerwheel");
        let mut w = TimerWheel::open(&path, 1000).unwrap();
        let t = 1_800_000_000_000;
        assert_eq!(w.slot(t), None);
        w.push(t, 52, 1);
        w.push(t, 104, 1);
        assert_eq!(w.slot(t), Some(Slot { time_ms: t, first_pos: 52, last_pos: 104, num: 2 }));
        // The same index one lap (two weeks) later is another time.
        let next_lap = t + SLOTS_TOTAL * 2 * 1000;
        assert_eq!(w.slot(next_lap), None);
        w.flush().unwrap();
        drop(w);
        let w = TimerWheel::open(&path, 1000).unwrap();
        assert_eq!(w.slot(t).unwrap().last_pos, 104, "persisted");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 38_707_200, "Java's wheel length");
    }
}
