//! Files of the timer-message store (`TimerMessageStore`'s layout): the wheel, the timer log and
//! their checkpoint. What goes in and comes out (reading the timer topic, delivering) is the
//! broker's `timer` service; this module only keeps the files consistent across crashes.
//!
//! ```text
//! <root>/timerwheel          slots (wheel.rs)
//! <root>/timerlog/…          52-byte units (log.rs)
//! <root>/config/timercheck   lastReadTimeMs:i64 lastTimerLogFlushPos:i64 lastTimerQueueOffset:i64
//!                            masterTimerQueueOffset:i64 dataVersion(3 x i64)   (4096 bytes)
//! ```
//! Flush order is log, wheel, checkpoint: the checkpoint never names progress whose units are
//! not on disk. Recovery re-reads the log from one segment before the checkpoint's flush
//! position, re-links every slot it finds there and resumes enqueueing after the last unit.
//!
//! May import: `crate::store` (mapped files, errors).

pub mod log;
pub mod wheel;

use std::path::Path;

use tracing::info;

use self::log::{TimerLog, TimerUnit};
use self::wheel::TimerWheel;
use crate::store::mapped_file::MappedRegion;
use crate::store::StoreError;

const CHECKPOINT_SIZE: usize = 4096;

/// Where the timer service stands: the next slot to deliver and the next timer-topic
/// ConsumeQueue offset to enter into the wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerProgress {
    /// 0 on a fresh store.
    pub read_time_ms: i64,
    pub queue_offset: i64,
}

pub struct TimerFiles {
    wheel: TimerWheel,
    log: TimerLog,
    checkpoint: MappedRegion,
}

impl TimerFiles {
    /// Opens (creating) the files under `root` and recovers them; returns the progress to resume.
    pub fn open(root: &Path, precision_ms: i64, log_file_size: usize) -> Result<(Self, TimerProgress), StoreError> {
        let wheel_path = root.join("timerwheel");
        let wheel = TimerWheel::open(&wheel_path, precision_ms)
            .map_err(StoreError::io(format!("open {}", wheel_path.display())))?;
        let log = TimerLog::load(&root.join("timerlog"), log_file_size)?;
        let ck_path = root.join("config").join("timercheck");
        let checkpoint = MappedRegion::open_or_create(&ck_path, CHECKPOINT_SIZE)
            .map_err(StoreError::io(format!("open {}", ck_path.display())))?;
        let mut files = Self { wheel, log, checkpoint };
        let progress = files.recover()?;
        Ok((files, progress))
    }

    fn long(&self, at: usize) -> i64 {
        i64::from_be_bytes(self.checkpoint[at..at + 8].try_into().unwrap_or([0; 8]))
    }

    fn recover(&mut self) -> Result<TimerProgress, StoreError> {
        let flushed = u64::try_from(self.long(8)).unwrap_or(0);
        let from = flushed.saturating_sub(self.log.file_size() as u64);
        let scan = self.log.recover(from)?;
        let mut queue_offset = self.long(16).max(0);
        for (pos, unit) in &scan.units {
            // Re-link: the slot's newest unit is the last one found for it.
            let t = unit.slot_time();
            match self.wheel.slot(t) {
                Some(s) if s.last_pos >= *pos => {}
                Some(s) => self.wheel.put(wheel::Slot { last_pos: *pos, ..s }),
                None => self.wheel.put(wheel::Slot { time_ms: t, first_pos: *pos, last_pos: *pos, num: 1 }),
            }
            queue_offset = queue_offset.max(unit.queue_offset_plus_one);
        }
        let progress = TimerProgress { read_time_ms: self.long(0), queue_offset };
        info!(
            units_rescanned = scan.units.len(),
            log_end = scan.end,
            read_time_ms = progress.read_time_ms,
            queue_offset = progress.queue_offset,
            "timer store recovered"
        );
        Ok(progress)
    }

    /// Enters the timer message at `commit_log_offset` into the chain of `slot_time`.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        slot_time: i64,
        enqueue_time: i64,
        magic: i32,
        commit_log_offset: i64,
        size: i32,
        topic_hash: i32,
        queue_offset: i64,
    ) -> Result<(), StoreError> {
        let prev_pos = self.wheel.slot(slot_time).map_or(-1, |s| s.last_pos);
        let unit = TimerUnit {
            prev_pos,
            magic,
            enqueue_time,
            delay: i32::try_from(slot_time - enqueue_time).unwrap_or(i32::MAX),
            commit_log_offset,
            size,
            topic_hash,
            queue_offset_plus_one: queue_offset + 1,
        };
        let pos = self.log.append(&unit)?;
        let delta = if magic & log::MAGIC_DELETE != 0 { -1 } else { 1 };
        self.wheel.push(slot_time, pos, delta);
        Ok(())
    }

    /// The units due at `slot_time`, oldest first. Stops at a unit that cannot be read (its
    /// segment was deleted) or a link that does not point backwards.
    pub fn units(&self, slot_time: i64) -> Vec<TimerUnit> {
        let Some(slot) = self.wheel.slot(slot_time) else { return Vec::new() };
        let mut out = Vec::with_capacity(slot.num.max(0) as usize);
        let mut pos = slot.last_pos;
        while pos >= 0 {
            let Some(unit) = self.log.unit(pos) else { break };
            if unit.slot_time() == slot_time {
                out.push(unit);
            }
            if unit.prev_pos >= pos {
                break;
            }
            pos = unit.prev_pos;
        }
        out.reverse();
        out
    }

    /// Units pending in the slot of `slot_time`.
    pub fn slot_count(&self, slot_time: i64) -> i32 {
        self.wheel.slot(slot_time).map_or(0, |s| s.num)
    }

    /// Makes the log, then the wheel, then `progress` durable. Blocking.
    pub fn flush(&mut self, progress: TimerProgress) -> Result<(), StoreError> {
        let log_pos = self.log.flush()?;
        self.wheel.flush().map_err(StoreError::io("flush timerwheel"))?;
        let c = &mut self.checkpoint;
        let version = i64::from_be_bytes(c[48..56].try_into().unwrap_or([0; 8])) + 1;
        for (at, v) in [
            (0, progress.read_time_ms),
            (8, log_pos as i64),
            (16, progress.queue_offset),
            (24, progress.queue_offset),
            (40, crate::store::now_ms()),
            (48, version),
        ] {
            c[at..at + 8].copy_from_slice(&v.to_be_bytes());
        }
        c.flush().map_err(StoreError::io("flush timercheck"))
    }

    /// `timercheck` as Java's slaves fetch it (GET_TIMER_CHECK_POINT): its first 56 bytes.
    pub fn checkpoint_bytes(&self) -> Vec<u8> {
        self.checkpoint[..56].to_vec()
    }

    /// Deletes timer-log segments whose messages the CommitLog no longer holds.
    pub fn delete_expired(&self, commit_log_min_offset: i64) -> Result<usize, StoreError> {
        self.log.delete_expired(commit_log_min_offset)
    }
}

#[cfg(test)]
mod tests;
