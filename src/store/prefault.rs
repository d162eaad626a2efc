//! Keeps the CommitLog's pages just ahead of the write position resident, so appends on the
//! request path do not take the page faults that allocate and zero new page cache pages.
//!
//! ```text
//! CommitLog  ....written....|....populated ahead (AHEAD)....|....untouched....
//!                          write end                        `done`
//! ```
//! Every CHECK this thread reads ahead what lies between the write end and write end + AHEAD
//! (`MappedFile::readahead`, in CHUNKs, into the next segment once it exists). The append's
//! `pwrite` then finds the page in the page cache. The work is the same; it moves off the
//! tokio workers and out of the CommitLog lock, where allocating and zeroing a page (slow on
//! memory the hypervisor has not backed yet) stalled every put behind it. Java has no counterpart (its `warmMapedFileEnable` touches whole segments up
//! front; that stays a separate, opt-in key here).
//!
//! The same thread gives the CommitLog its disk blocks ahead of the write end when
//! `commitLogAllocateAheadSize` is below the segment size
//! ([`super::mapped_file_queue::MappedFileQueue::allocate_ahead_of_write`]).
//!
//! May import: `super::state` (the shared store state) and `super::mapped_file`.

use std::time::Duration;

use tracing::warn;

use super::state::Inner;

/// How far ahead of the write end pages are kept in the page cache: ~0.1 s of appends at 160 MB/s.
const AHEAD: u64 = 16 << 20;
/// Read ahead per round of `readahead`.
const CHUNK: u64 = 1 << 20;
/// How often the write end is looked at while appends come in.
const CHECK: Duration = Duration::from_millis(10);
/// How often it is looked at when nothing was appended since the last look.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// The prefault thread's body; returns when the store stops, or at once if the kernel refuses
/// readahead.
pub fn run(inner: &Inner) {
    let files = inner.commit_log.files();
    let mut done = 0u64;
    let mut last_end = u64::MAX;
    let mut allocating = true;
    loop {
        if allocating {
            if let Err(e) = files.allocate_ahead_of_write() {
                // Appends allocate their blocks themselves: slower, as correct.
                warn!(error = %e, "cannot allocate CommitLog blocks ahead of the write end; appends allocate them");
                allocating = false;
            }
        }
        let end = files.max_offset();
        let wait = if end == last_end { IDLE_CHECK } else { CHECK };
        last_end = end;
        done = done.max(end);
        // The segment holding `done`; none yet past the last one (it is preallocated later).
        while let Some(f) = files.find(done) {
            let Some((from, len)) = next_chunk(done, end, f.file_from_offset(), f.size() as u64) else { break };
            if let Err(e) = f.readahead(from as usize, len as usize) {
                warn!(error = %e, file = %f.path().display(), "cannot read the CommitLog ahead; appends allocate pages themselves");
                return;
            }
            done += len;
        }
        if !inner.sleep_while_running(wait) {
            return;
        }
    }
}

/// The next range to populate, relative to the segment `[seg_from, seg_from + seg_size)` holding
/// `done`: at most CHUNK, not past the segment, not past `end + AHEAD`.
fn next_chunk(done: u64, end: u64, seg_from: u64, seg_size: u64) -> Option<(u64, u64)> {
    let limit = (end + AHEAD).min(seg_from + seg_size);
    (seg_from <= done && done < limit).then(|| (done - seg_from, CHUNK.min(limit - done)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_inside_the_segment_and_the_window_ahead() {
        const SEG: u64 = 1 << 30;
        // Inside the first segment, a whole chunk.
        assert_eq!(next_chunk(0, 0, 0, SEG), Some((0, CHUNK)));
        assert_eq!(next_chunk(5000, 4000, 0, SEG), Some((5000, CHUNK)));
        // The window ahead of the write end is the limit.
        assert_eq!(next_chunk(AHEAD - 10, 0, 0, SEG), Some((AHEAD - 10, 10)));
        assert_eq!(next_chunk(AHEAD, 0, 0, SEG), None);
        // The segment's end is the limit; the next segment starts again at relative 0.
        assert_eq!(next_chunk(SEG - 100, SEG - 200, 0, SEG), Some((SEG - 100, 100)));
        assert_eq!(next_chunk(SEG, SEG - 200, 0, SEG), None);
        assert_eq!(next_chunk(SEG, SEG - 200, SEG, SEG), Some((0, CHUNK)));
        // A segment that does not hold `done` gives nothing.
        assert_eq!(next_chunk(10, 0, 4096, SEG), None);
    }
}
