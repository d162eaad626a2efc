//! Guava's `Hashing.consistentHash(long, int)`, which the Java proxy uses to put a FIFO message
//! group on a write queue (`SendMessageActivity`: `consistentHash(messageGroup.hashCode(),
//! writeQueues)`): the same group lands on the same queue as with the Java proxy.
//!
//! May import: `model` (Java's `String.hashCode`).

use crate::model::message::java_hash;

/// Guava's 64-bit linear congruential generator, as `consistentHash` steps it.
struct Lcg(i64);

impl Lcg {
    fn next_double(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        let high = ((self.0 as u64) >> 33) as i32;
        (f64::from(high) + 1.0) / f64::from(1u32 << 31)
    }
}

/// `Hashing.consistentHash(input, buckets)`; `buckets` at least 1.
pub fn consistent_hash(input: i64, buckets: i32) -> i32 {
    let buckets = buckets.max(1);
    let mut g = Lcg(input);
    let mut candidate: i32 = 0;
    loop {
        // Java's (int) of a double: saturating, as Rust's `as`.
        let next = (f64::from(candidate.saturating_add(1)) / g.next_double()) as i32;
        if next >= 0 && next < buckets {
            candidate = next;
        } else {
            return candidate;
        }
    }
}

/// The write queue index of a FIFO message group among `write_queues` queues.
pub fn queue_of_group(group: &str, write_queues: i32) -> i32 {
    consistent_hash(i64::from(java_hash(group)), write_queues)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by Guava 32.0.1's `Hashing.consistentHash` (jshell over the jar).
    #[test]
    fn matches_guava() {
        for (input, buckets, want) in [
            (0i64, 100, 0),
            (1, 100, 55),
            (2, 100, 62),
            (-1, 100, 92),
            (i64::from(i32::MIN), 100, 58),
            (i64::from(i32::MAX), 100, 56),
            (1, 7, 6),
            (2, 7, 6),
            (-1, 7, 2),
            (i64::from(i32::MIN), 7, 2),
            (i64::from(i32::MAX), 7, 0),
        ] {
            assert_eq!(consistent_hash(input, buckets), want, "consistentHash({input}, {buckets})");
        }
        for (group, hash, buckets, want) in [
            ("a", 97, 100, 29),
            ("order-1", -1_207_111_310, 4, 3),
            ("order-1", -1_207_111_310, 100, 3),
            ("group-42", 506_311_820, 4, 2),
            ("group-42", 506_311_820, 16, 10),
            ("group-42", 506_311_820, 100, 18),
            ("ä中", 27081, 4, 2),
            ("ä中", 27081, 100, 29),
            ("FIFO_GROUP_7", -438_962_716, 8, 4),
            ("FIFO_GROUP_7", -438_962_716, 100, 60),
            ("", 0, 16, 0),
        ] {
            assert_eq!(java_hash(group), hash, "{group}.hashCode()");
            assert_eq!(queue_of_group(group, buckets), want, "{group} over {buckets}");
        }
        assert_eq!(queue_of_group("anything", 1), 0);
    }
}
