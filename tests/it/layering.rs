//! The layering rules of `docs/architecture.md`, checked against the code: the rules are read
//! from the ```` ```layers ```` block of that document (so the documented and the checked rules
//! cannot drift), every `crate::` / `super::` path of every file under `src/<area>/` is resolved
//! to the module file it names, and the file-level import graph built from those paths has no
//! cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

// ---------------------------------------------------------------------------------------------
// The rules, as docs/architecture.md writes them.

/// `area -> areas it may import`, and the listed exceptions `(file, area)`.
struct Rules {
    may_import: BTreeMap<String, BTreeSet<String>>,
    pending: BTreeSet<(String, String)>,
}

fn rules() -> Rules {
    let path = manifest().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_rules(&text)
}

fn parse_rules(text: &str) -> Rules {
    let start = text.find("```layers\n").expect("docs/architecture.md has a ```layers block");
    let body = &text[start + "```layers\n".len()..];
    let body = &body[..body.find("```").expect("the ```layers block is closed")];
    let mut may_import = BTreeMap::new();
    let mut pending = BTreeSet::new();
    for raw in body.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (who, list) = line.split_once(':').unwrap_or_else(|| panic!("layers line without ':': {raw}"));
        let list = list.trim().strip_prefix("may import").unwrap_or_else(|| panic!("layers line: {raw}")).trim();
        let areas: BTreeSet<String> = if list == "nothing" {
            BTreeSet::new()
        } else {
            list.split(',').map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect()
        };
        if let Some(file) = who.trim().strip_prefix("pending ") {
            for a in areas {
                pending.insert((file.trim().to_owned(), a));
            }
        } else {
            assert!(may_import.insert(who.trim().to_owned(), areas).is_none(), "area {who} listed twice");
        }
    }
    Rules { may_import, pending }
}

#[test]
fn the_rules_parse() {
    let r = parse_rules(
        "x\n```layers\nmodel: may import nothing\nstore: may import model, telemetry  # why\n\
         pending src/broker/mod.rs: may import kafka\n```\n",
    );
    assert!(r.may_import["model"].is_empty());
    assert_eq!(r.may_import["store"].iter().collect::<Vec<_>>(), ["model", "telemetry"]);
    assert!(r.pending.contains(&("src/broker/mod.rs".to_owned(), "kafka".to_owned())));
}

// ---------------------------------------------------------------------------------------------
// The code: modules, files and the paths they name.

/// Every module file of `src/` by its module path (`store::commit_log`), test-only files
/// included through `#[path]` (`*_tests.rs`) left out: their `super` is not where they lie.
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let src = manifest().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("_tests.rs") || rel == Path::new("main.rs") {
            continue;
        }
        out.insert(module_path(rel), f);
    }
    out
}

fn module_path(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = segs.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" => {}
        other => segs.push(other.trim_end_matches(".rs").to_owned()),
    }
    segs
}

/// The file's code without comments and without `#[cfg(test)] mod x { ... }` blocks (whose
/// `super` is the file itself, and whose imports are not the module's).
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            if let Some(m) = lines.get(j) {
                let t = m.trim_start();
                if (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.trim_end().ends_with('{') {
                    let indent = &m[..m.len() - t.len()];
                    let close = format!("{indent}}}");
                    let mut k = j + 1;
                    while k < lines.len() && lines[k].trim_end() != close {
                        k += 1;
                    }
                    i = k + 1;
                    continue;
                }
            }
        }
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
        i += 1;
    }
    out
}

/// Every path starting with `crate::` or `super::` in `code`, groups expanded:
/// `crate::{a::b, c::{self, d}}` gives `crate::a::b`, `crate::c::self`, `crate::c::d`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for kw in ["crate::", "super::"] {
        for (at, _) in code.match_indices(kw) {
            let before = at.checked_sub(1).map(|b| bytes[b]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b':') {
                continue;
            }
            let mut i = at;
            parse_tree(bytes, &mut i, Vec::new(), &mut out);
        }
    }
    out
}

fn skip_ws(s: &[u8], i: &mut usize) {
    while *i < s.len() && s[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

fn parse_tree(s: &[u8], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        skip_ws(s, i);
        match s.get(*i) {
            Some(b'{') => {
                *i += 1;
                loop {
                    skip_ws(s, i);
                    match s.get(*i) {
                        None => return,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        Some(b',') => *i += 1,
                        Some(_) => {
                            let before = *i;
                            parse_tree(s, i, prefix.clone(), out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            Some(b'*') => {
                *i += 1;
                out.push(prefix);
                return;
            }
            _ => {}
        }
        let start = *i;
        while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
            *i += 1;
        }
        if *i == start {
            if !prefix.is_empty() {
                out.push(prefix);
            }
            return;
        }
        prefix.push(String::from_utf8_lossy(&s[start..*i]).into_owned());
        if s[*i..].starts_with(b"::") {
            *i += 2;
        } else {
            out.push(prefix);
            return;
        }
    }
}

#[test]
fn grouped_and_nested_paths_are_seen() {
    let code = "use crate::{model::perm, protocol::{self, RemotingCommand}, store};\nlet x = super::super::a::f();";
    let got: Vec<String> = paths_in(code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "crate::model::perm",
            "crate::protocol::self",
            "crate::protocol::RemotingCommand",
            "crate::store",
            "super::super::a::f"
        ]
    );
    let stripped = code_of("use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\nfn f() {}\n");
    assert!(stripped.contains("crate::a") && !stripped.contains("crate::b") && !stripped.contains("super"));
}

/// The module a path names: the longest prefix of it that is a module file. `None` for the
/// crate root and for the file itself.
fn resolve(path: &[String], from: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    if rest.first().is_some_and(|s| s == "crate") {
        rest = &rest[1..];
    } else {
        base = from.to_vec();
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    let target = (1..=base.len()).rev().map(|n| base[..n].to_vec()).find(|p| modules.contains_key(p))?;
    (target != from).then_some(target)
}

/// file-level edges: module path -> the module paths it names.
fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (m, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let targets: BTreeSet<Vec<String>> =
            paths_in(&code_of(&text)).iter().filter_map(|p| resolve(p, m, &modules)).collect();
        graph.insert(m.clone(), targets);
    }
    graph
}

fn file_of(m: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> String {
    modules[m].strip_prefix(manifest()).unwrap().display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The checks.

#[test]
fn every_area_keeps_to_the_documented_layers() {
    let rules = rules();
    let modules = modules();
    let graph = import_graph();
    let top_level: BTreeSet<String> = modules.keys().filter(|m| m.len() == 1).map(|m| m[0].clone()).collect();
    let mut broken = Vec::new();
    let mut seen_pending = BTreeSet::new();
    for area in &top_level {
        // A folder src/<area>/ or a top-level file src/<area>.rs: both are areas with a line.
        let allowed =
            rules.may_import.get(area).unwrap_or_else(|| panic!("src/{area}/ has no line in docs/architecture.md"));
        for (m, targets) in graph.iter().filter(|(m, _)| m.first() == Some(area)) {
            let file = file_of(m, &modules);
            for t in targets {
                let to = &t[0];
                if to == area || allowed.contains(to) {
                    continue;
                }
                if rules.pending.contains(&(file.clone(), to.clone())) {
                    seen_pending.insert((file.clone(), to.clone()));
                    continue;
                }
                broken.push(format!("{file} imports {} ({area} may not import {to})", file_of(t, &modules)));
            }
        }
    }
    assert!(broken.is_empty(), "imports against docs/architecture.md's layers:\n{}", broken.join("\n"));
    for (file, to) in rules.pending.difference(&seen_pending) {
        eprintln!("docs/architecture.md lists `pending {file}: may import {to}`, which the code no longer does");
    }
}

#[test]
fn the_documented_layers_name_real_areas() {
    let rules = rules();
    let modules = modules();
    let top_level: BTreeSet<String> = modules.keys().filter(|m| m.len() == 1).map(|m| m[0].clone()).collect();
    for (area, allowed) in &rules.may_import {
        for a in allowed {
            assert!(
                rules.may_import.contains_key(a) || top_level.contains(a),
                "docs/architecture.md: {area} may import {a}, which is neither an area of the table nor a module"
            );
        }
    }
}

/// Every cycle of the file-level import graph (strongly connected components of more than one file).
fn cycles() -> Vec<Vec<String>> {
    let modules = modules();
    let graph = import_graph();
    // Tarjan's strongly connected components; every component of more than one file is a cycle.
    struct T<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<&'a Vec<String>>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        let graph = t.graph;
        for w in &graph[v] {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
        .iter()
        .map(|comp| {
            let mut files: Vec<String> = comp.iter().map(|m| file_of(m, &modules)).collect();
            files.sort();
            files
        })
        .collect()
}

/// The edges inside each cycle, `a -> b`, for the message.
fn describe(cycle: &[String]) -> String {
    let modules = modules();
    let graph = import_graph();
    let by_file: BTreeMap<String, &Vec<String>> = modules.keys().map(|m| (file_of(m, &modules), m)).collect();
    let mut edges = Vec::new();
    for a in cycle {
        for b in cycle {
            if graph[by_file[a]].contains(by_file[b]) {
                edges.push(format!("  {a} -> {b}"));
            }
        }
    }
    edges.join("\n")
}

/// The issue's "Done when": the file-level import graph of `src/` has no cycle.
#[test]
fn no_file_level_import_cycle() {
    let all: Vec<String> = cycles().iter().map(|c| format!("{}:\n{}", c.join(" <-> "), describe(c))).collect();
    assert!(all.is_empty(), "file-level import cycles in src/:\n{}", all.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Rules finer than an area.

/// Inside the store: the services and the shared state never import the facade, and the state
/// imports none of the services (STYLE.md: arrows run one way).
#[test]
fn store_services_work_on_shared_state_not_the_facade() {
    let dir = manifest().join("src").join("store");
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

fn assert_no_kafka_codec_in(areas: &[&str]) {
    for area in areas {
        let root = manifest().join("src").join(area);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(!text.contains("kafka_protocol"), "{} uses the Kafka codec", file.display());
        }
    }
}

#[test]
fn shared_metadata_uses_no_kafka_codec() {
    assert_no_kafka_codec_in(&["meta"]);
}

#[test]
fn the_rocketmq_side_never_uses_the_kafka_codec() {
    assert_no_kafka_codec_in(&["broker", "protocol", "remoting", "namesrv", "store", "model"]);
}

#[test]
fn the_frame_limit_default_is_the_codecs() {
    assert_eq!(ferrocket::meta::config::DEFAULT_MAX_FRAME, ferrocket::protocol::frame::DEFAULT_MAX_FRAME);
}
