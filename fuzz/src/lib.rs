//! LiteHit's fuzz targets: each `fuzz_targets/<target>.rs` hands libFuzzer's bytes to one
//! function of [`targets`], the same function `tests/it/formats/fuzz_corpus.rs` runs on every file of
//! `corpus/<target>/` with the stable toolchain.

pub mod targets;
