//! The `checkpoint` file (`StoreCheckpoint.java`): 4096 bytes, five big-endian longs.
//!
//! ```text
//!  0 physicMsgTimestamp   store time of the last flushed CommitLog data
//!  8 logicsMsgTimestamp   store time of the last data in flushed ConsumeQueues
//! 16 indexMsgTimestamp    end time of the last full, flushed IndexFile
//! 24 masterFlushedOffset  set by RESET_MASTER_FLUSH_OFFSET on a slave; shown by haStatus
//! 32 confirmPhyOffset     (controller mode; kept as read)
//! ```
//! Recovery starts from the newest segment written before `min(physic, logics) - 3 s`, which
//! bounds recovery time by how often this file is written, not by the size of the store.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::path::Path;
use std::sync::Mutex;

use super::mapped_file::MappedRegion;
use super::StoreError;

const SIZE: usize = 4096;

pub struct Checkpoint {
    region: Mutex<MappedRegion>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Physic = 0,
    Logics = 8,
    Index = 16,
    MasterFlushed = 24,
}

impl Checkpoint {
    pub fn load(path: &Path) -> Result<Self, StoreError> {
        let region =
            MappedRegion::open_or_create(path, SIZE).map_err(StoreError::io(format!("open {}", path.display())))?;
        Ok(Self { region: Mutex::new(region) })
    }

    fn get(&self, f: Field) -> i64 {
        let r = self.region.lock().unwrap_or_else(|e| e.into_inner());
        let at = f as usize;
        i64::from_be_bytes(r[at..at + 8].try_into().unwrap_or([0; 8]))
    }

    fn set(&self, f: Field, v: i64) {
        let mut r = self.region.lock().unwrap_or_else(|e| e.into_inner());
        let at = f as usize;
        r[at..at + 8].copy_from_slice(&v.to_be_bytes());
    }

    pub fn physic_msg_timestamp(&self) -> i64 {
        self.get(Field::Physic)
    }

    pub fn set_physic_msg_timestamp(&self, v: i64) {
        self.set(Field::Physic, v)
    }

    pub fn logics_msg_timestamp(&self) -> i64 {
        self.get(Field::Logics)
    }

    pub fn set_logics_msg_timestamp(&self, v: i64) {
        self.set(Field::Logics, v)
    }

    pub fn index_msg_timestamp(&self) -> i64 {
        self.get(Field::Index)
    }

    pub fn set_index_msg_timestamp(&self, v: i64) {
        self.set(Field::Index, v)
    }

    pub fn master_flushed_offset(&self) -> i64 {
        self.get(Field::MasterFlushed)
    }

    pub fn set_master_flushed_offset(&self, v: i64) {
        self.set(Field::MasterFlushed, v)
    }

    /// `getMinTimestamp`: recovery may start at data written before this.
    pub fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp().min(self.logics_msg_timestamp()) - 3000).max(0)
    }

    /// Writes the file to disk. Blocking.
    pub fn flush(&self) -> Result<(), StoreError> {
        let r = self.region.lock().unwrap_or_else(|e| e.into_inner());
        r.flush().map_err(StoreError::io(format!("flush {}", r.path().display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_persist_at_java_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        {
            let c = Checkpoint::load(&path).unwrap();
            c.set_physic_msg_timestamp(10_000);
            c.set_logics_msg_timestamp(9_000);
            c.set_index_msg_timestamp(7);
            c.flush().unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert_eq!(i64::from_be_bytes(bytes[8..16].try_into().unwrap()), 9_000);
        let c = Checkpoint::load(&path).unwrap();
        assert_eq!(c.physic_msg_timestamp(), 10_000);
        assert_eq!(c.index_msg_timestamp(), 7);
        assert_eq!(c.min_timestamp(), 6_000);
    }
}
