//! A cache-line prefetch hint: the crate's only `unsafe`.
//!
//! Why it exists: on large traces the core is bound by DRAM latency on the key table and
//! the recency bitset. Issuing the next request's loads early lets many misses overlap. A
//! plain load cannot do that (a missing load blocks retirement once the reorder buffer fills),
//! and stable Rust has no safe prefetch. `_mm_prefetch` never dereferences its argument and
//! cannot fault, so the only obligation is the `sse` target feature, which every x86-64 CPU
//! has. Everywhere else the hint compiles to nothing.

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
