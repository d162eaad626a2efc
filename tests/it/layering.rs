//! The dependency arrows of STYLE.md: lower layers import nothing above them.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn assert_imports_nothing_of(area: &str, forbidden: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(area);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for f in forbidden {
            for pattern in [format!("crate::{f}"), format!("ferrocket::{f}"), format!("super::super::{f}")] {
                assert!(!text.contains(&pattern), "{} imports {pattern}, which {area} may not use", file.display());
            }
        }
    }
}

#[test]
fn model_imports_nothing_above_it() {
    assert_imports_nothing_of("model", &["protocol", "remoting", "namesrv", "broker", "store", "ha", "config"]);
}

#[test]
fn protocol_imports_only_model() {
    assert_imports_nothing_of("protocol", &["remoting", "namesrv", "broker", "store", "ha", "config"]);
}

#[test]
fn store_never_sees_wire_types() {
    assert_imports_nothing_of("store", &["protocol", "remoting", "namesrv", "broker", "ha"]);
}

#[test]
fn remoting_does_not_reach_into_servers() {
    assert_imports_nothing_of("remoting", &["namesrv", "broker", "store", "ha"]);
}
