//! The cluster id Metadata and DescribeCluster answer: a Kafka UUID as Kafka prints one
//! (`Uuid.toString`: 16 random bytes, URL-safe base64 without padding, 22 characters), made once
//! and kept in `config/kafkaClusterId` so it is the same after every restart. Tools and clients
//! (the Java `AdminClient`, Kafka Connect, Schema Registry) compare it across connections and
//! restarts; a RocketMQ cluster name is not one (before: `DefaultCluster`).
//!
//! ```text
//! config/kafkaClusterId    one line: the id, e.g. "tJDOyUeaSC-FYNk2ENfQ8A"
//! ```
//! A file that does not hold a valid id is an error at start (not silently replaced: clients
//! that cached the old id would see another cluster).
//!
//! May import: `crate::persist`.

use std::path::Path;

use base64::Engine;

pub const FILE: &str = "kafkaClusterId";

/// Whether `id` reads as a Kafka UUID: 22 URL-safe base64 characters decoding to 16 bytes.
pub fn valid(id: &str) -> bool {
    id.len() == 22 && base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(id).is_ok_and(|b| b.len() == 16)
}

/// A new random id. Kafka's `Uuid.randomUuid` never hands out one that starts with '-' (it would
/// read as an option on a command line) nor the reserved zero and one ids: neither does this.
fn random() -> String {
    loop {
        let u = uuid::Uuid::new_v4();
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(u.as_bytes());
        if !id.starts_with('-') && u.as_u128() > 1 {
            return id;
        }
    }
}

/// The id kept in `dir/kafkaClusterId`, made and written there the first time.
pub fn load_or_create(dir: &Path) -> Result<String, String> {
    let path = dir.join(FILE);
    let parse = |b: &[u8]| {
        let id = std::str::from_utf8(b).map_err(|e| e.to_string())?.trim().to_owned();
        if valid(&id) {
            Ok(id)
        } else {
            Err(format!("'{}' is not a Kafka cluster id (22 URL-safe base64 characters)", id.escape_debug()))
        }
    };
    if let Some(id) = crate::persist::load(&path, parse)? {
        return Ok(id);
    }
    let id = random();
    crate::persist::write_atomically(&path, format!("{id}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tracing::info!(cluster_id = id, "Kafka cluster id created");
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let id = load_or_create(dir.path()).unwrap();
        assert!(valid(&id), "{id}");
        assert!(!id.starts_with('-'));
        assert_eq!(load_or_create(dir.path()).unwrap(), id);
        std::fs::write(dir.path().join(FILE), "DefaultCluster\n").unwrap();
        std::fs::remove_file(dir.path().join(format!("{FILE}.bak"))).ok();
        assert!(load_or_create(dir.path()).is_err(), "a damaged id is not replaced silently");
        assert!(!valid("tJDOyUeaSC-FYNk2ENfQ8"), "21 characters");
        assert!(valid("tJDOyUeaSC-FYNk2ENfQ8A"));
    }
}
