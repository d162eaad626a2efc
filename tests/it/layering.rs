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
        let grouped = grouped_imports(&text);
        for f in forbidden {
            for pattern in [format!("crate::{f}"), format!("ferrocket::{f}"), format!("super::super::{f}")] {
                assert!(!text.contains(&pattern), "{} imports {pattern}, which {area} may not use", file.display());
            }
            assert!(
                !grouped.iter().any(|g| g == f),
                "{} imports {f} in a grouped `crate::{{...}}`, which {area} may not use",
                file.display()
            );
        }
    }
}

/// The first path segment of every item in `crate::{...}` / `ferrocket::{...}` groups.
fn grouped_imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for prefix in ["crate::{", "ferrocket::{"] {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let mut depth = 1;
            let end = rest
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(rest.len(), |(i, _)| i);
            let mut depth = 0;
            let mut item = String::new();
            for c in rest[..end].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(item.trim().split("::").next().unwrap_or("").to_owned());
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            out.push(item.trim().split("::").next().unwrap_or("").to_owned());
        }
    }
    out
}

#[test]
fn grouped_imports_are_seen() {
    let text = "use crate::{model::perm, protocol::{self, RemotingCommand}, store};";
    assert_eq!(grouped_imports(text), vec!["model", "protocol", "store"]);
}

/// Inside the store: the services and the shared state never import the facade, and the state
/// imports none of the services (STYLE.md: arrows run one way).
#[test]
fn store_services_work_on_shared_state_not_the_facade() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("store");
    let services = ["dispatch", "flush", "housekeeping", "prefault", "recovery", "retention"];
    for file in services.iter().chain(&["state", "group_commit"]) {
        let path = dir.join(format!("{file}.rs"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for facade in ["super::message_store", "impl MessageStore"] {
            assert!(!text.contains(facade), "{} reaches into the MessageStore facade ({facade})", path.display());
        }
        if *file == "state" || *file == "group_commit" {
            for s in services {
                assert!(!text.contains(&format!("super::{s}")), "{} imports the service {s}", path.display());
            }
        }
    }
}

#[test]
fn model_imports_nothing_above_it() {
    assert_imports_nothing_of("model", &["protocol", "remoting", "namesrv", "broker", "store", "ha", "config"]);
}

#[test]
fn acl_sees_no_wire_types_and_no_servers() {
    assert_imports_nothing_of(
        "acl",
        &["protocol", "remoting", "namesrv", "broker", "store", "ha", "meta", "kafka", "tools", "config", "telemetry"],
    );
}

#[test]
fn filter_imports_nothing_of_ferrocket() {
    assert_imports_nothing_of(
        "filter",
        &["model", "protocol", "remoting", "namesrv", "broker", "store", "ha", "config", "persist", "tools"],
    );
}

#[test]
fn telemetry_imports_nothing_of_ferrocket() {
    assert_imports_nothing_of(
        "telemetry",
        &[
            "model", "protocol", "remoting", "namesrv", "broker", "store", "ha", "config", "persist", "tools", "meta",
            "kafka", "filter", "acl",
        ],
    );
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

#[test]
fn tools_are_clients_not_servers() {
    assert_imports_nothing_of("tools", &["broker", "namesrv", "ha"]);
}

#[test]
fn shared_metadata_imports_no_front_end_and_no_codec() {
    assert_imports_nothing_of("meta", &["protocol", "remoting", "namesrv", "broker", "kafka", "ha", "tools"]);
    assert_no_kafka_codec_in(&["meta"]);
}

fn assert_no_kafka_codec_in(areas: &[&str]) {
    for area in areas {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(area);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(!text.contains("kafka_protocol"), "{} uses the Kafka codec", file.display());
        }
    }
}

#[test]
fn kafka_front_end_never_reaches_into_the_rocketmq_side() {
    assert_imports_nothing_of("kafka", &["protocol", "remoting", "namesrv", "broker", "tools"]);
}

#[test]
fn the_rocketmq_side_never_uses_the_kafka_codec() {
    assert_no_kafka_codec_in(&["broker", "protocol", "remoting", "namesrv", "store", "model"]);
}

#[test]
fn the_frame_limit_default_is_the_codecs() {
    assert_eq!(ferrocket::meta::config::DEFAULT_MAX_FRAME, ferrocket::protocol::frame::DEFAULT_MAX_FRAME);
}

#[test]
fn net_imports_no_protocol_server_or_store() {
    assert_imports_nothing_of("net", &["protocol", "remoting", "broker", "kafka", "ha", "store", "meta", "namesrv"]);
}
