//! Every relative link in `README.md` and `docs/*.md` resolves (issue #28): the file exists, and
//! a `#anchor` names a heading of that file, spelled as GitHub spells heading anchors.
//!
//! Links are Markdown's inline `[text](target)` outside fenced code blocks; targets with a
//! scheme (`https:`, `mailto:`) are not checked. A heading's anchor is its text in lower case,
//! with every character other than a letter, digit, space, `-` or `_` dropped and spaces turned
//! into `-`; a repeated heading gets `-1`, `-2`, … as on GitHub.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((index + 1, line));
        }
    }
    lines
}

fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every heading anchor of a Markdown text.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.push(if *count == 0 {
            base
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// `(line, target)` of every inline link in a Markdown text.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose_lines(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((number, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    found
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut documents: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    documents.sort();
    documents.insert(0, root.join("README.md"));
    documents
}

/// What is wrong with the link `target` written in `document`, if anything.
fn broken(document: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        document.to_path_buf()
    } else {
        document.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor?;
    if file.extension().is_none_or(|extension| extension != "md") {
        return Some(format!(
            "an anchor into {}, which is not Markdown",
            file.display()
        ));
    }
    let text = std::fs::read_to_string(&file).unwrap();
    if anchors(&text).iter().any(|known| known == anchor) {
        None
    } else {
        Some(format!("{} has no heading #{anchor}", file.display()))
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut problems = Vec::new();
    for document in documents(root) {
        let text = std::fs::read_to_string(&document).unwrap();
        for (line, target) in links(&text) {
            checked += 1;
            if let Some(problem) = broken(&document, &target) {
                let name = document.strip_prefix(root).unwrap().display();
                problems.push(format!("{name}:{line}: ({target}): {problem}"));
            }
        }
    }
    // The README alone links every docs page; finding few links means the scan is wrong.
    assert!(checked >= 10, "only {checked} links found");
    assert!(
        problems.is_empty(),
        "broken links:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn anchors_are_spelled_as_github_spells_them() {
    let text = "# Live monitoring: `litehit watch`\n## Two total knees\n```\n# not a heading\n```\n## Two total knees\n## Where LiteHit differs from upstream's tools, and why\n";
    assert_eq!(
        anchors(text),
        [
            "live-monitoring-litehit-watch",
            "two-total-knees",
            "two-total-knees-1",
            "where-litehit-differs-from-upstreams-tools-and-why",
        ]
    );
    assert_eq!(
        links("see [a](LIVE.md#keys) and [b](https://x.org)\n```\n[c](nowhere.md)\n```"),
        [
            (1, "LIVE.md#keys".to_owned()),
            (1, "https://x.org".to_owned())
        ]
    );
}
