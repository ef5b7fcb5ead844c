//! The live snapshot is the finished picture (issue #28, item 2): its readers — the TUI crate,
//! the headless JSON writer, `/metrics` and the `watch` glue — only format it. None of them
//! calls the projector or the capacity-axis accumulator: a slot's capacity in blocks (× N for
//! the pool), the pool's N, the totals and the Σ of instance knees are computed once, by the
//! ingest's assembly and `LiveSnapshot::finished`, and read from the snapshot.
//!
//! The check reads the readers' sources with `syn` and scans the tokens of their code (test
//! modules left out: they build snapshots by hand and call `finished`).

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens as _;
use syn::{Attribute, Item};

/// The readers: files, or folders read whole.
const READERS: &[&str] = &[
    "crates/litehit-tui/src",
    "crates/litehit-live/src/headless.rs",
    "crates/litehit-live/src/headless_output.rs",
    "crates/litehit-live/src/metrics.rs",
    "crates/litehit-live/src/metrics",
    "src/commands/watch.rs",
];

/// Names a reader must not call: the projector's conversions and searches and the
/// accumulator's reads (and, below, the methods `Capacity::blocks` and the snapshot's own
/// derivation `LiveSnapshot::finished`).
const FORBIDDEN: &[&str] = &[
    "capacity_blocks_for_bytes",
    "capacity_bytes_for_gb",
    "pooled_capacity_blocks",
    "pooled_bands",
    "knee_capacity_blocks",
    "min_capacity_for_hit_blocks",
    "hit_blocks_at",
    "hit_blocks_at_bytes",
    "sample_at",
    "log_spaced",
    "accumulated_tier_hit_blocks",
    "CapacityAxisAccumulator",
];

/// Methods a reader must not call: `Capacity::blocks` (the projector's conversion) and
/// `LiveSnapshot::finished` (the snapshot's derivation).
const FORBIDDEN_METHODS: &[&str] = &["blocks", "finished"];

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.meta.to_token_stream().to_string().contains("test")
    })
}

/// The items of `items` that are not test-only, nested modules opened.
fn code_tokens(items: &[Item], out: &mut TokenStream) {
    for item in items {
        let attrs = match item {
            Item::Fn(item) => &item.attrs,
            Item::Mod(item) => &item.attrs,
            Item::Impl(item) => &item.attrs,
            Item::Use(item) => &item.attrs,
            Item::Const(item) => &item.attrs,
            Item::Static(item) => &item.attrs,
            Item::Struct(item) => &item.attrs,
            Item::Enum(item) => &item.attrs,
            _ => &Vec::new(),
        };
        if is_test_only(attrs) {
            continue;
        }
        match item {
            Item::Mod(syn::ItemMod {
                content: Some((_, items)),
                ..
            }) => code_tokens(items, out),
            _ => item.to_tokens(out),
        }
    }
}

/// Every token of `stream`, groups opened, in order (a group is followed by its contents).
fn flatten(stream: TokenStream, out: &mut Vec<TokenTree>) {
    for tree in stream {
        if let TokenTree::Group(group) = &tree {
            out.push(tree.clone());
            flatten(group.stream(), out);
        } else {
            out.push(tree);
        }
    }
}

fn is_ident(tree: Option<&TokenTree>, name: &str) -> bool {
    matches!(tree, Some(TokenTree::Ident(ident)) if ident == name)
}

fn is_punct(tree: Option<&TokenTree>, ch: char) -> bool {
    matches!(tree, Some(TokenTree::Punct(punct)) if punct.as_char() == ch)
}

fn is_call(tree: Option<&TokenTree>) -> bool {
    matches!(tree, Some(TokenTree::Group(group)) if group.delimiter() == proc_macro2::Delimiter::Parenthesis)
}

/// What in `source` (a Rust file) re-derives a snapshot figure; empty when nothing does.
fn violations(source: &str) -> Vec<String> {
    let parsed = syn::parse_file(source).expect("a reader parses");
    let mut code = TokenStream::new();
    code_tokens(&parsed.items, &mut code);
    let mut tokens = Vec::new();
    flatten(code, &mut tokens);
    let mut found = Vec::new();
    for (index, tree) in tokens.iter().enumerate() {
        let TokenTree::Ident(ident) = tree else {
            continue;
        };
        let name = ident.to_string();
        let next = tokens.get(index + 1);
        if FORBIDDEN.contains(&name.as_str()) || name.starts_with("project_") {
            found.push(name.clone());
        }
        if FORBIDDEN_METHODS.contains(&name.as_str())
            && index > 0
            && is_punct(tokens.get(index - 1), '.')
            && is_call(next)
        {
            found.push(format!(".{name}(..)"));
        }
        // `Totals::of`: the snapshot's own Σ.
        if name == "Totals" && is_punct(next, ':') && is_ident(tokens.get(index + 3), "of") {
            found.push("Totals::of".to_owned());
        }
        // Any function of the projector (`projector::tiers::miss_is_upper_bound(..)`); its
        // types (`projector::Capacity`) are fine.
        if name == "projector" {
            let mut at = index + 1;
            while is_punct(tokens.get(at), ':') && is_punct(tokens.get(at + 1), ':') {
                at += 2;
                let Some(TokenTree::Ident(segment)) = tokens.get(at) else {
                    break;
                };
                let segment = segment.to_string();
                if segment.starts_with(char::is_lowercase) && is_call(tokens.get(at + 1)) {
                    found.push(format!("projector::..::{segment}(..)"));
                }
                at += 1;
            }
        }
    }
    found
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, out);
        }
    } else if path.extension().is_some_and(|ext| ext == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn no_reader_of_the_live_snapshot_calls_the_projector() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for reader in READERS {
        let path = root.join(reader);
        assert!(path.exists(), "{reader} is gone: update READERS");
        rust_files(&path, &mut files);
    }
    assert!(files.len() > READERS.len(), "the TUI's files were read");
    let mut offenders = Vec::new();
    for file in &files {
        let found = violations(&std::fs::read_to_string(file).unwrap());
        if !found.is_empty() {
            offenders.push(format!("{}: {found:?}", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "readers re-derive what the snapshot carries (move it into LiveSnapshot::finished or \
         crates/litehit-live/src/ingest/assemble.rs):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_check_catches_each_kind_of_re_derivation() {
    let source = r"
        use litehit_core::projector::Capacity;
        fn slot(capacity: Capacity, block_bytes: u64) -> Option<u64> {
            capacity.blocks(block_bytes)
        }
        fn pooled(capacity: Capacity) -> Option<u64> {
            litehit_core::projector::pooled_capacity_blocks(capacity, 1, 2)
        }
        fn miss(bounds: &[bool]) -> bool {
            litehit_core::projector::tiers::miss_is_upper_bound(bounds)
        }
        fn sum(snap: &LiveSnapshot) -> Totals {
            Totals::of(&snap.lanes, &snap.slots)
        }
        fn again(snap: LiveSnapshot) -> LiveSnapshot {
            snap.finished()
        }
        fn projected(facts: &Facts) -> u64 {
            project_lane(facts, 3)
        }
    ";
    assert_eq!(
        violations(source),
        [
            ".blocks(..)",
            "projector::..::pooled_capacity_blocks(..)",
            "pooled_capacity_blocks",
            "projector::..::miss_is_upper_bound(..)",
            "Totals::of",
            ".finished(..)",
            "project_lane",
        ]
    );
}

#[test]
fn formatting_and_test_modules_pass_the_check() {
    let source = r"
        use litehit_core::projector::Capacity;
        use litehit_core::projector::tiers::TierPlan;
        fn cell(lane: &LaneSnapshot, index: usize) -> Option<u64> {
            let blocks = lane.blocks;
            lane.slot_capacity_blocks(index).map(|blocks| blocks * lane.block_bytes)
        }
        fn drained(out: Output) -> bool {
            let finished = out.finish();
            finished.error.is_none()
        }
        fn label(capacity: Capacity) -> String {
            match capacity {
                Capacity::Blocks(blocks) => blocks.to_string(),
                _ => String::new(),
            }
        }
        #[cfg(test)]
        mod tests {
            fn snapshot() -> LiveSnapshot {
                LiveSnapshot::default().finished()
            }
        }
    ";
    assert_eq!(violations(source), Vec::<String>::new());
}
