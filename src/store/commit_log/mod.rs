//! The CommitLog: every message of every topic, appended to one queue of segments.

pub mod record;
