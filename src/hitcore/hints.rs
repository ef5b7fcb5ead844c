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

/// Asks the kernel to back the whole allocation of `values` (its capacity, rounded out to
/// pages) with transparent huge pages (Linux; a no-op elsewhere, when refused, or below
/// [`MIN_ADVISED_BYTES`]). Call after every reallocation, before the new part is touched.
///
/// Why the whole allocation, not just a new tail: the flag is per mapping range, and a
/// mapping whose pages carry different flags is split in two — `mremap` then refuses to move
/// it (`EFAULT`), and the allocator falls back to allocate-copy-free, which doubles peak
/// memory and touches every page afresh. Advising everything keeps one uniform mapping, so
/// growth stays an in-place `mremap`.
#[cfg_attr(
    target_os = "linux",
    expect(unsafe_code, reason = "madvise hint; see the module docs")
)]
pub(crate) fn advise_huge_pages<T>(values: &mut Vec<T>) {
    const PAGE_BYTES: usize = 4096;
    let bytes = values.capacity() * size_of::<T>();
    if bytes < MIN_ADVISED_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = values.as_mut_ptr() as usize;
        let first_page = start / PAGE_BYTES * PAGE_BYTES;
        let end = (start + bytes).next_multiple_of(PAGE_BYTES);
        // SAFETY: MADV_HUGEPAGE only changes how the kernel backs the pages, never their
        // contents, and no memory is read or written. The range is the vector's allocation
        // rounded out to whole pages (the allocator's own header shares the first page; the
        // flag is per page anyway). Failure is fine: the pages simply stay small.
        unsafe {
            libc::madvise(
                first_page as *mut libc::c_void,
                end - first_page,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

/// Allocations below this are left alone: they may share pages and mappings with other
/// allocations (glibc serves up to 32 MiB from its heap), and huge pages matter little there.
pub(crate) const MIN_ADVISED_BYTES: usize = 32 << 20;
