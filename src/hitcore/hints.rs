//! Hardware hints: a cache-line prefetch and a huge-page request. The crate's only `unsafe`,
//! and neither hint can change a result.
//!
//! Why they exist: on large traces the core is bound by DRAM latency on the key table and
//! the recency bitset. Issuing the next request's loads early lets many misses overlap. A
//! plain load cannot do that (a missing load blocks retirement once the reorder buffer fills),
//! and stable Rust has no safe prefetch. `_mm_prefetch` never dereferences its argument and
//! cannot fault, so the only obligation is the `sse` target feature, which every x86-64 CPU
//! has. Everywhere else the hint compiles to nothing.
//!
//! The key table is hundreds of megabytes read at random; with 4 KiB pages nearly every
//! access also misses the TLB. `madvise(MADV_HUGEPAGE)` asks Linux for transparent huge pages
//! on that range (machines set to `madvise` mode only give them when asked). It does not
//! touch the contents; a kernel that refuses simply leaves small pages.

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

/// Asks the kernel to back `values` with transparent huge pages (Linux; a no-op elsewhere or
/// when refused). Call right after allocating, before first touch.
#[cfg_attr(
    target_os = "linux",
    expect(unsafe_code, reason = "madvise hint; see the module docs")
)]
pub(crate) fn advise_huge_pages<T>(values: &mut [T]) {
    const HUGE_PAGE_BYTES: usize = 2 << 20;
    let bytes = std::mem::size_of_val(values);
    if bytes < 2 * HUGE_PAGE_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = values.as_mut_ptr() as usize;
        let aligned_start = start.next_multiple_of(HUGE_PAGE_BYTES);
        let aligned_len = (start + bytes - aligned_start) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        // SAFETY: the range lies inside `values`, which we borrow mutably, and MADV_HUGEPAGE
        // only changes how the kernel backs the pages, never their contents. Failure is fine.
        unsafe {
            libc::madvise(
                aligned_start as *mut libc::c_void,
                aligned_len,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}
