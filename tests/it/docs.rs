//! The documentation's links resolve: every relative link in README.md and docs/*.md names a file
//! that exists, and a `#anchor` into a Markdown file names one of its headings.

use std::path::{Path, PathBuf};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut out = vec![manifest().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(manifest().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The targets of `[text](target)` links outside fenced code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, blanks to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() { doc.clone() } else { doc.parent().unwrap().join(path) };
            checked += 1;
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", doc.display()));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| target.extension().is_some_and(|x| x == "md")) {
                let text = std::fs::read_to_string(&target).unwrap();
                if !anchors(&text).iter().any(|a| a == anchor) {
                    broken.push(format!("{}: {link} (no such heading)", doc.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 10, "only {checked} links found: is the link syntax still [text](path)?");
}

#[test]
fn links_and_anchors_are_read_as_github_does() {
    assert_eq!(links("see [a](docs/a.md) and [b](b.md#x-y)\n```\n[c](c.md)\n```"), ["docs/a.md", "b.md#x-y"]);
    assert_eq!(
        slug(" Hostile clients: where ferrocket is stricter than Java"),
        "hostile-clients-where-ferrocket-is-stricter-than-java"
    );
}

#[test]
fn the_readme_names_the_test_command_ci_runs() {
    let readme = std::fs::read_to_string(manifest().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(manifest().join(".ci/run")).unwrap();
    assert!(readme.contains("./scripts/test.sh"), "README.md lost the test command");
    assert!(ci.lines().any(|l| l.trim() == "./scripts/test.sh"), ".ci/run no longer runs ./scripts/test.sh");
}
