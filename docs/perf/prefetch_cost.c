// What a software prefetch of a random line costs the thread that issues it: a loop of
// ~1 µs of arithmetic, with or without one prefetch of a random line of a 512 MiB table per
// iteration (never read), on 4 KiB pages or huge pages.
//
//   gcc -O2 docs/perf/prefetch_cost.c -o /tmp/prefetch_cost && /tmp/prefetch_cost
//
// Prints nanoseconds per iteration. On this project's VMs (2026-11-30): the prefetch adds
// ~200 ns per iteration on 4 KiB pages and ~0–30 ns on huge pages: a prefetch that misses the
// TLB holds up retirement for the page walk (nested paging in a VM), so on this machine an
// early prefetch is not free, and a pre-walk of upcoming requests pays in walks what it
// saves in misses (docs/PERFORMANCE.md, core section).
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t state = 88172645463325252ull;
static uint64_t next_random(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double run(const uint64_t *table, size_t lines, int prefetch) {
    const int iterations = 300000;
    volatile uint64_t sink = 0;
    double start = now();
    for (int i = 0; i < iterations; i++) {
        size_t line = next_random() % lines;
        if (prefetch) _mm_prefetch((const char *)&table[line * 8], _MM_HINT_T0);
        uint64_t value = line;
        for (int k = 0; k < 300; k++) value = value * 6364136223846793005ull + 1;
        sink += value;
    }
    return (now() - start) * 1e9 / iterations;
}

int main(void) {
    const size_t bytes = (size_t)512 << 20;
    for (int huge = 0; huge <= 1; huge++) {
        uint64_t *table = aligned_alloc(1 << 21, bytes);
        if (huge) madvise(table, bytes, MADV_HUGEPAGE);
        for (size_t i = 0; i < bytes / 8; i += 512) table[i] = i;
        double without = run(table, bytes / 64, 0);
        double with = run(table, bytes / 64, 1);
        printf("%s pages: %.0f ns/iteration without the prefetch, %.0f with it\n",
               huge ? "huge" : "4 KiB", without, with);
        free(table);
    }
    return 0;
}
