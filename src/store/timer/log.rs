//! The timer log `timerlog/` (`TimerLog.java`): an append-only queue of 52-byte units, one per
//! timer entered in the wheel, each pointing back at the previous unit of its slot. Segments are
//! named by their start offset like CommitLog segments (100 MiB by default).
//!
//! ```text
//! unit   size:i32=52  prevPos:i64  magic:i32  enqueueTime:i64  delay:i32
//!        commitLogOffset:i64  msgSize:i32  realTopicHash:i32  queueOffset+1:i64   (big-endian)
//! blank  remaining:i32  0:i64  BLANK_MAGIC:i32   (end of a segment; 16 bytes always fit)
//! ```
//! `magic`: 1 = default, |2 = roll (re-enter the wheel), |4 = delete. Java writes 0 in the last
//! field; ferrocket keeps the ConsumeQueue offset (+1) of the timer message there, so that
//! recovery knows where enqueueing stopped.
//!
//! May import: `crate::store` (mapped files, errors).

use std::path::Path;

use crate::store::mapped_file_queue::MappedFileQueue;
use crate::store::StoreError;

pub const UNIT_SIZE: usize = 52;
const MIN_BLANK: usize = 16;
/// `TimerLog.BLANK_MAGIC_CODE`: `0xBBCCDDEE ^ (1880681586 + 8)`.
const BLANK_MAGIC: i32 = (0xBBCC_DDEE_u32 ^ (1_880_681_586 + 8)) as i32;

pub const MAGIC_DEFAULT: i32 = 1;
pub const MAGIC_ROLL: i32 = 1 << 1;
pub const MAGIC_DELETE: i32 = 1 << 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerUnit {
    pub prev_pos: i64,
    pub magic: i32,
    /// The write-time slot when the unit was added.
    pub enqueue_time: i64,
    /// Slot time minus `enqueue_time`.
    pub delay: i32,
    pub commit_log_offset: i64,
    pub size: i32,
    pub topic_hash: i32,
    /// ConsumeQueue offset of the timer message + 1 (0: not known, a Java file).
    pub queue_offset_plus_one: i64,
}

impl TimerUnit {
    pub fn slot_time(&self) -> i64 {
        self.enqueue_time + i64::from(self.delay)
    }

    fn encode(&self) -> [u8; UNIT_SIZE] {
        let mut b = [0u8; UNIT_SIZE];
        b[0..4].copy_from_slice(&(UNIT_SIZE as i32).to_be_bytes());
        b[4..12].copy_from_slice(&self.prev_pos.to_be_bytes());
        b[12..16].copy_from_slice(&self.magic.to_be_bytes());
        b[16..24].copy_from_slice(&self.enqueue_time.to_be_bytes());
        b[24..28].copy_from_slice(&self.delay.to_be_bytes());
        b[28..36].copy_from_slice(&self.commit_log_offset.to_be_bytes());
        b[36..40].copy_from_slice(&self.size.to_be_bytes());
        b[40..44].copy_from_slice(&self.topic_hash.to_be_bytes());
        b[44..52].copy_from_slice(&self.queue_offset_plus_one.to_be_bytes());
        b
    }

    /// A unit, if `b` holds a valid one (`size == 52`, magic within the known bits).
    fn decode(b: &[u8]) -> Option<Self> {
        let i32_at = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        if b.len() < UNIT_SIZE || i32_at(0) != UNIT_SIZE as i32 {
            return None;
        }
        let magic = i32_at(12);
        if magic == 0 || (magic | 0xF) != 0xF {
            return None;
        }
        Some(Self {
            prev_pos: i64_at(4),
            magic,
            enqueue_time: i64_at(16),
            delay: i32_at(24),
            commit_log_offset: i64_at(28),
            size: i32_at(36),
            topic_hash: i32_at(40),
            queue_offset_plus_one: i64_at(44),
        })
    }
}

pub struct TimerLog {
    queue: MappedFileQueue,
}

/// What recovery found: where valid units end, and every unit from the scan start on.
pub struct Scan {
    pub end: u64,
    pub units: Vec<(i64, TimerUnit)>,
}

impl TimerLog {
    pub fn load(dir: &Path, file_size: usize) -> Result<Self, StoreError> {
        Ok(Self { queue: MappedFileQueue::load(dir, file_size, false)? })
    }

    pub fn file_size(&self) -> usize {
        self.queue.file_size()
    }

    /// Appends a unit; returns its position.
    pub fn append(&self, unit: &TimerUnit) -> Result<i64, StoreError> {
        let mut f = self.queue.last_for_write(0)?;
        let remaining = f.size() - f.wrote_position();
        if UNIT_SIZE + MIN_BLANK > remaining {
            let mut blank = [0u8; MIN_BLANK];
            blank[0..4].copy_from_slice(&(remaining as i32).to_be_bytes());
            blank[12..16].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
            f.append(&blank[..MIN_BLANK.min(remaining)], 0)
                .map_err(StoreError::io(format!("write {}", f.path().display())))?;
            f.mark_full();
            f = self.queue.last_for_write(0)?;
        }
        let pos = f
            .append(&unit.encode(), 0)
            .map_err(StoreError::io(format!("write {}", f.path().display())))?
            .ok_or_else(|| StoreError::Io {
                context: format!("write {}", f.path().display()),
                source: std::io::Error::other("a timer unit does not fit in a new segment"),
            })?;
        Ok((f.file_from_offset() + pos as u64) as i64)
    }

    pub fn unit(&self, pos: i64) -> Option<TimerUnit> {
        let pos = u64::try_from(pos).ok()?;
        let f = self.queue.find(pos)?;
        let s = f.slice((pos - f.file_from_offset()) as usize, UNIT_SIZE)?;
        TimerUnit::decode(&s)
    }

    /// Where the next unit goes.
    pub fn end(&self) -> u64 {
        self.queue.max_offset()
    }

    /// Recovery: reads units from the segment holding `from` to the first invalid bytes, and
    /// cuts the log there (a torn tail is dropped).
    pub fn recover(&self, from: u64) -> Result<Scan, StoreError> {
        let size = self.queue.file_size() as u64;
        let mut pos = self.queue.find(from).map_or_else(|| self.queue.min_offset(), |f| f.file_from_offset());
        let mut units = Vec::new();
        while let Some(f) = self.queue.find(pos) {
            let at = (pos - f.file_from_offset()) as usize;
            let Some(bytes) = f.slice(at, UNIT_SIZE.min(f.size() - at)) else { break };
            if bytes.len() >= MIN_BLANK && i32::from_be_bytes(bytes[12..16].try_into().unwrap_or([0; 4])) == BLANK_MAGIC
            {
                pos = f.file_from_offset() + size;
                continue;
            }
            let Some(unit) = TimerUnit::decode(&bytes) else { break };
            units.push((pos as i64, unit));
            pos += UNIT_SIZE as u64;
        }
        if self.queue.files().last().is_some() {
            self.queue.truncate_dirty(pos)?;
        }
        Ok(Scan { end: pos, units })
    }

    /// msyncs what was appended. Blocking.
    pub fn flush(&self) -> Result<u64, StoreError> {
        self.queue.flush(0).map_err(StoreError::io(format!("flush {}", self.queue.dir().display())))
    }

    pub fn flushed(&self) -> u64 {
        self.queue.flushed_where()
    }

    /// Deletes leading segments whose last unit points below `commit_log_min_offset` (their
    /// messages are gone from the CommitLog), never the last segment. Returns how many.
    pub fn delete_expired(&self, commit_log_min_offset: i64) -> Result<usize, StoreError> {
        let files = self.queue.files();
        let size = self.queue.file_size();
        let last_unit = size - (size - MIN_BLANK) % UNIT_SIZE - MIN_BLANK - UNIT_SIZE;
        let mut n = 0;
        for f in files.iter().take(files.len().saturating_sub(1)) {
            let unit = f.slice(last_unit, UNIT_SIZE).and_then(|s| TimerUnit::decode(&s));
            match unit {
                Some(u) if u.commit_log_offset < commit_log_min_offset => n += 1,
                _ => break,
            }
        }
        if n > 0 {
            self.queue.delete_first(n)?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(prev: i64, offset: i64) -> TimerUnit {
        TimerUnit {
            prev_pos: prev,
            magic: MAGIC_DEFAULT,
            enqueue_time: 1000,
            delay: 2000,
            commit_log_offset: offset,
            size: 100,
            topic_hash: 7,
            queue_offset_plus_one: offset + 1,
        }
    }

    #[test]
    fn units_roll_over_segments_and_recover_after_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        // 4 units and a blank fit in 4 * 52 + 16 + 10 bytes.
        let size = 4 * UNIT_SIZE + MIN_BLANK + 10;
        let log = TimerLog::load(dir.path(), size).unwrap();
        let positions: Vec<i64> = (0..6).map(|i| log.append(&unit(i - 1, i * 100)).unwrap()).collect();
        assert_eq!(&positions[..4], &[0, 52, 104, 156]);
        assert_eq!(positions[4], size as i64, "the fifth unit starts the second segment");
        assert_eq!(log.unit(positions[5]).unwrap(), unit(4, 500));
        assert_eq!(log.unit(positions[2]).unwrap().slot_time(), 3000);
        log.flush().unwrap();
        drop(log);

        // A torn unit after the last good one.
        let second = dir.path().join(crate::store::mapped_file::file_name(size as u64));
        let mut bytes = std::fs::read(&second).unwrap();
        bytes[2 * UNIT_SIZE..2 * UNIT_SIZE + 4].copy_from_slice(&52i32.to_be_bytes());
        std::fs::write(&second, bytes).unwrap();
        let log = TimerLog::load(dir.path(), size).unwrap();
        let scan = log.recover(0).unwrap();
        assert_eq!(scan.units.len(), 6);
        assert_eq!(scan.end, size as u64 + 2 * UNIT_SIZE as u64);
        assert_eq!(log.end(), scan.end, "appends continue after the last valid unit");
        assert_eq!(log.append(&unit(5, 600)).unwrap(), scan.end as i64);

        // The first segment's last unit points below the CommitLog's start: deleted.
        assert_eq!(log.delete_expired(300).unwrap(), 0, "its last unit (offset 300) is still there");
        assert_eq!(log.delete_expired(301).unwrap(), 1);
        assert!(log.unit(0).is_none());
    }
}
