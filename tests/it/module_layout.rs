//! The module layout keeps imports one way (issue #28, item 4): each pair that once imported
//! the other keeps the name that made the cycle in a home both reach. Code lines only
//! (comments may name the other file).

use std::path::Path;

/// `(file, a path its code must not name, where the shared name lives now)`.
const ONE_WAY: &[(&str, &str, &str)] = &[
    (
        "crates/litehit-tui/src/app.rs",
        "render::status",
        "the notice model is crates/litehit-tui/src/notice.rs",
    ),
    (
        "src/output/query_jsonl.rs",
        "query_windows",
        "the accounted span is src/output/query_span.rs",
    ),
    (
        "src/cli/trace_args.rs",
        "commands::",
        "DEFAULT_BLOCK_SIZE is defined beside --block-size",
    ),
];

#[test]
fn no_two_files_import_each_other_through_a_misplaced_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for &(file, forbidden, home) in ONE_WAY {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let named: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .filter(|(_, line)| line.contains(forbidden))
            .map(|(index, line)| (index + 1, line))
            .collect();
        assert!(
            named.is_empty(),
            "{file} names {forbidden} ({home}): {named:?}"
        );
    }
}
