//! Hardware hint: a cache-line prefetch. The crate's only `unsafe`, and it cannot change a
//! result.
//!
//! Why it exists: on large traces the core is bound by DRAM latency on the key table and
//! the recency bitset. Issuing the next request's loads early lets many misses overlap. A
//! plain load cannot do that (a missing load blocks retirement once the reorder buffer fills),
//! and stable Rust has no safe prefetch. `_mm_prefetch` never dereferences its argument and
//! cannot fault, so the only obligation is the `sse` target feature, which every x86-64 CPU
//! has. Everywhere else the hint compiles to nothing.
//!
//! No huge-page request (`madvise(MADV_HUGEPAGE)`): on this project's machine class (a VM)
//! the first touch of a fresh huge page costs ~7× that of small pages, and the table's
//! in-place growth (`mremap` to a new address) splits huge pages anyway. Measured with
//! `cargo bench --bench core`: dense ids ≈ 1.3 × faster without it, random keys unchanged;
//! later attempts for the random-key index alone are in docs/PERFORMANCE.md.

/// The keys of a request where a run of consecutive ids starts (each key that is not its
/// predecessor + 1): where dense-id lookups jump, so where their prefetch hints go.
#[inline]
pub(crate) fn run_heads(keys: &[i64]) -> impl Iterator<Item = i64> + '_ {
    let mut previous_key = None;
    keys.iter().copied().filter(move |&key| {
        let starts_run = previous_key != Some(key.wrapping_sub(1));
        previous_key = Some(key);
        starts_run
    })
}

/// Hints that the cache line holding `value` will be read soon. No effect on results.
#[inline]
#[cfg_attr(
    target_arch = "x86_64",
    expect(unsafe_code, reason = "prefetch hint; see the module docs")
)]
pub(crate) fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it neither reads nor writes memory and
    // cannot fault, and `sse` is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(value).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
