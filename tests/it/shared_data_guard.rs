//! The one way to the real traces, enforced: every test that reaches `../shared` (through
//! `common::shared_file`, directly or through a helper) carries the attribute that marks it
//! ignored, with its reason, where the build script found `../shared` absent and `CI` unset.
//! Without it, a newcomer's `cargo test` in a fresh clone fails on that test — and cargo then
//! never runs the other crates' tests (issue 26, point 1). No test file names the path itself.
//!
//! The check reads the test sources with `syn`: a function needs the data when its body names
//! `shared_file`, or names a function of its own file (or of `common/`) that needs it; a
//! function whose body asks `cfg!(litehit_shared_absent)` handles the absence itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::{Attribute, Item, ItemFn, ItemMod};

/// The helper every shared-data test goes through.
const HELPER: &str = "shared_file";

/// The cfg the build script sets where `../shared` is absent and `CI` is unset.
const ABSENT_CFG: &str = "litehit_shared_absent";

/// Where the helper lives: the one file that may spell the path and the cfg.
const HELPER_FILE: &str = "tests/it/common/mod.rs";

/// One function of a test source: where it is, whether it is a `#[test]`, whether it carries
/// the ignore-when-absent attribute, whether it checks the cfg itself, and the names its body
/// mentions.
#[derive(Debug)]
struct Function {
    file: String,
    name: String,
    is_test: bool,
    ignored_when_absent: bool,
    handles_absence: bool,
    mentions: BTreeSet<String>,
}

/// The names of the functions in `source` (file `file`), nested modules included.
fn functions(file: &str, source: &str) -> Vec<Function> {
    let parsed = syn::parse_file(source).unwrap_or_else(|error| panic!("{file}: {error}"));
    let mut found = Vec::new();
    collect(file, &parsed.items, &mut found);
    found
}

fn collect(file: &str, items: &[Item], found: &mut Vec<Function>) {
    for item in items {
        match item {
            Item::Fn(function) => found.push(describe(file, function)),
            Item::Mod(ItemMod {
                content: Some((_, items)),
                ..
            }) => collect(file, items, found),
            _ => {}
        }
    }
}

fn describe(file: &str, function: &ItemFn) -> Function {
    let mut mentions = BTreeSet::new();
    idents(
        quote::ToTokens::to_token_stream(&function.block),
        &mut mentions,
    );
    let handles_absence = mentions.contains(ABSENT_CFG);
    Function {
        file: file.to_owned(),
        name: function.sig.ident.to_string(),
        is_test: function
            .attrs
            .iter()
            .any(|attr| attr.path().is_ident("test")),
        ignored_when_absent: function.attrs.iter().any(is_ignore_when_absent),
        handles_absence,
        mentions,
    }
}

/// Every identifier in `tokens`, inside macro calls too (`assert!(…)` bodies are tokens).
fn idents(tokens: TokenStream, into: &mut BTreeSet<String>) {
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                into.insert(ident.to_string());
            }
            TokenTree::Group(group) => idents(group.stream(), into),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// `#[cfg_attr(litehit_shared_absent, ignore = "…")]` with a reason.
fn is_ignore_when_absent(attr: &Attribute) -> bool {
    if !attr.path().is_ident("cfg_attr") {
        return false;
    }
    let Ok(list) = attr.meta.require_list() else {
        return false;
    };
    let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
    matches!(
        tokens.as_slice(),
        [TokenTree::Ident(cfg), TokenTree::Punct(comma), TokenTree::Ident(ignore), TokenTree::Punct(eq), TokenTree::Literal(_), ..]
            if cfg == ABSENT_CFG && comma.as_char() == ',' && ignore == "ignore" && eq.as_char() == '='
    )
}

/// The `#[test]`s that reach the helper without the attribute, as `file: name` (empty when
/// every one carries it). A function reaches it when its body names it, or names a function
/// of its own file or of `common/` that reaches it, unless it checks the cfg itself.
fn unguarded_tests(functions: &[Function]) -> Vec<String> {
    let mut needs: BTreeMap<(&str, &str), bool> = functions
        .iter()
        .map(|f| {
            let direct = !f.handles_absence && f.mentions.contains(HELPER);
            ((f.file.as_str(), f.name.as_str()), direct)
        })
        .collect();
    loop {
        let mut changed = false;
        for f in functions {
            if f.handles_absence || needs[&(f.file.as_str(), f.name.as_str())] {
                continue;
            }
            let reaches = functions.iter().any(|callee| {
                let visible = callee.file == f.file || callee.file.contains("/common/");
                visible
                    && callee.name != f.name
                    && f.mentions.contains(&callee.name)
                    && needs[&(callee.file.as_str(), callee.name.as_str())]
            });
            if reaches {
                needs.insert((f.file.as_str(), f.name.as_str()), true);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    functions
        .iter()
        .filter(|f| f.is_test && !f.ignored_when_absent)
        .filter(|f| needs[&(f.file.as_str(), f.name.as_str())])
        .map(|f| format!("{}: {}", f.file, f.name))
        .collect()
}

/// Every `.rs` file below `dir`, relative to the repository, sorted.
fn rust_files(root: &Path, dir: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut pending = vec![root.join(dir)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                found.push((relative, path));
            }
        }
    }
    found.sort();
    found
}

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_test_that_reads_the_real_traces_is_ignored_where_they_are_absent() {
    let mut all = Vec::new();
    for (relative, path) in rust_files(repository(), "tests") {
        all.extend(functions(&relative, &fs::read_to_string(path).unwrap()));
    }
    assert!(
        all.iter().filter(|f| f.is_test).count() > 100,
        "the check found too few tests to be reading the test sources"
    );
    assert!(
        all.iter()
            .any(|f| f.is_test && f.ignored_when_absent && f.mentions.contains(HELPER)),
        "no test reads the real traces: the check would pass vacuously"
    );
    let unguarded = unguarded_tests(&all);
    assert!(
        unguarded.is_empty(),
        "these tests reach ../shared (through {HELPER}) without \
         #[cfg_attr({ABSENT_CFG}, ignore = \"…\")], so they fail in a fresh clone without \
         ../shared:\n{}",
        unguarded.join("\n")
    );
}

#[test]
fn no_source_but_the_helper_spells_the_path_or_the_cfg_outside_the_attribute() {
    let mut offenders = Vec::new();
    for dir in ["tests", "crates", "src"] {
        for (relative, path) in rust_files(repository(), dir) {
            if relative == HELPER_FILE || relative == "tests/it/shared_data_guard.rs" {
                continue;
            }
            let source = fs::read_to_string(path).unwrap();
            for (number, line) in source.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                // The path, spelled in a string, reaches the traces around the helper.
                let spells_path = code.contains("\"../shared") || code.contains("/../shared");
                // The cfg belongs in the attribute (and in a `cfg!` that handles absence).
                let bare_cfg = code.contains(ABSENT_CFG)
                    && !code.starts_with(ABSENT_CFG)
                    && !code.contains(&format!("cfg!({ABSENT_CFG})"))
                    && !code.contains(&format!("#[cfg_attr({ABSENT_CFG},"));
                if spells_path || bare_cfg {
                    offenders.push(format!("{relative}:{}: {code}", number + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

mod the_check {
    use super::{functions, unguarded_tests};

    const ATTRIBUTE: &str = r#"#[cfg_attr(litehit_shared_absent, ignore = "needs ../shared")]"#;

    fn unguarded(source: &str) -> Vec<String> {
        unguarded_tests(&functions("tests/it/x.rs", source))
    }

    #[test]
    fn flags_a_test_that_calls_the_helper_without_the_attribute() {
        let source = r#"
            #[test]
            fn reads() { let p = shared_file("traces/a.jsonl"); assert!(p.exists()); }
        "#;
        assert_eq!(unguarded(source), ["tests/it/x.rs: reads"]);
        assert!(unguarded(&format!("{ATTRIBUTE}\n{source}")).is_empty());
    }

    #[test]
    fn flags_a_test_that_reaches_the_helper_through_helpers_and_macros() {
        let source = r#"
            fn path() -> PathBuf { shared_file("traces/a.jsonl") }
            fn facts() -> Vec<u8> { replay(&path()) }
            #[test]
            fn through_two() { assert!(!facts().is_empty(), "{:?}", facts()); }
            #[test]
            fn in_a_macro() { assert_eq!(path(), path()); }
            #[test]
            fn unrelated() { assert_eq!(1, 1); }
            mod nested {
                #[test]
                fn nested_too() { let _ = super::facts(); }
            }
        "#;
        assert_eq!(
            unguarded(source),
            [
                "tests/it/x.rs: through_two",
                "tests/it/x.rs: in_a_macro",
                "tests/it/x.rs: nested_too",
            ]
        );
    }

    #[test]
    fn a_helper_that_checks_the_cfg_itself_needs_no_attribute_on_its_callers() {
        let source = r#"
            fn seeds() -> Vec<u8> {
                if cfg!(litehit_shared_absent) { return Vec::new(); }
                std::fs::read(shared_file("traces/a.jsonl")).unwrap()
            }
            #[test]
            fn uses_seeds() { let _ = seeds(); }
        "#;
        assert!(unguarded(source).is_empty());
    }

    #[test]
    fn another_attribute_is_not_the_attribute() {
        let source = r#"
            #[cfg_attr(not(litehit_shared_absent), ignore = "wrong way round")]
            #[test]
            fn reads() { let _ = shared_file("traces/a.jsonl"); }
        "#;
        assert_eq!(unguarded(source), ["tests/it/x.rs: reads"]);
    }
}
