//! Config files that must survive crashes (`ConfigManager.java`): written to a temporary file
//! of a unique name, fsync'd, renamed over the old one (kept as `<name>.bak`); read back falling
//! back to the `.bak` when the file is missing, empty or unreadable. [`ConfigFile`] is the one
//! writer of each file.
//!
//! May import: nothing of ferrocket (std, serde, tracing), so `acl`, `meta` and the servers can
//! all use it.

mod writer;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use writer::ConfigFile;

/// Writes `bytes` to `path` atomically, keeping the previous content as `<path>.bak`. Blocking.
/// The temporary file's name is unique (`<name>.tmp.<pid>.<n>`), so writers never trip over each
/// other's temporary file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = with_suffix(path, &format!(".tmp.{}.{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if path.exists() {
            std::fs::copy(path, with_suffix(path, ".bak"))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    std::fs::File::open(dir)?.sync_all()
}

/// Removes temporary files a killed writer left next to `path` (`<name>.tmp*`). Best effort.
pub fn remove_stale_temp_files(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else { return };
    let prefix = format!("{name}.tmp");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Reads and parses `path`, or its `.bak` when the file is missing, empty or does not parse.
/// `Ok(None)` when neither exists.
pub fn load<T>(path: &Path, parse: impl Fn(&[u8]) -> Result<T, String>) -> Result<Option<T>, String> {
    let mut first_error = None;
    for candidate in [path.to_owned(), with_suffix(path, ".bak")] {
        match std::fs::read(&candidate) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(bytes) => match parse(&bytes) {
                Ok(v) => return Ok(Some(v)),
                Err(e) => {
                    first_error.get_or_insert(format!("{}: {e}", candidate.display()));
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                first_error.get_or_insert(format!("{}: {e}", candidate.display()));
            }
        }
    }
    first_error.map_or(Ok(None), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keep_a_backup_and_loading_falls_back_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("topics.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read(with_suffix(&path, ".bak")).unwrap(), b"one");
        let parse = |b: &[u8]| if b == b"bad" { Err("bad".to_owned()) } else { Ok(b.to_vec()) };
        assert_eq!(load(&path, parse).unwrap(), Some(b"two".to_vec()));
        std::fs::write(&path, "bad").unwrap();
        assert_eq!(load(&path, parse).unwrap(), Some(b"one".to_vec()), "falls back to .bak");
        std::fs::write(with_suffix(&path, ".bak"), "bad").unwrap();
        assert!(load(&path, parse).is_err());
        assert_eq!(load(&dir.path().join("none.json"), parse).unwrap(), None);
    }
}
