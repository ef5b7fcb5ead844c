//! The upstream query reference, through the binary (needs `../shared`).

use crate::common::shared_file;
use std::fs;

use crate::common::cli_bin::run_ok;

use super::{path_str, tempdir};

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn query_reproduces_the_upstream_capacity_query_excerpt() {
    let facts = shared_file("reference/zishano_kimi_k3_tp8_litehit_facts.csv");
    let excerpt = shared_file("reference/zishano_kimi_k3_tp8_capacity_query_excerpt.jsonl");
    let dir = tempdir();
    let out = dir.path().join("capacity_query.jsonl");
    let mut args = vec![
        "query".to_owned(),
        path_str(&facts).to_owned(),
        path_str(&out).to_owned(),
    ];
    args.extend((0..=1000).step_by(25).map(|gb: u32| gb.to_string()));
    args.extend(["1024".to_owned(), "-1".to_owned()]);
    assert_eq!(args.len(), 3 + 43);
    run_ok(&args);

    let ours = fs::read_to_string(&out).unwrap();
    let ours: Vec<&str> = ours.split_inclusive('\n').collect();
    let theirs = fs::read_to_string(&excerpt).unwrap();
    let theirs: Vec<&str> = theirs.split_inclusive('\n').collect();
    assert_eq!(theirs.len(), 9);
    assert_eq!(ours.len(), 133, "131 rows, one instance summary, the total");
    assert_eq!(ours[..7], theirs[..7], "the first 7 lines");
    assert_eq!(
        ours[131..],
        theirs[7..],
        "the two summary lines, byte for byte"
    );
    assert!(!dir.path().join("capacity_query.jsonl.tmp").exists());
}
