// The floor for a key-table lookup of random 64-bit keys: one read of a 12-byte slot at a
// random place in a 570 MB table (the large trace's table), in batches of 76 (the mean
// request) with the next batch prefetched, as the core does.
//
//   gcc -O2 -march=native docs/perf/random_lookup.c -o /tmp/random_lookup
//   /tmp/random_lookup HUGE PREFETCH_LINES   # e.g. 0 1, 0 2, 1 1
//
// Prints nanoseconds per lookup. On this project's VMs: ~30 ns with 4 KiB pages, ~21 ns
// with huge pages, 26–36 ns without prefetching. See docs/PERFORMANCE.md (core section).
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

int main(int argc, char **argv) {
    int huge = argc > 1 ? atoi(argv[1]) : 0;
    int prefetch_lines = argc > 2 ? atoi(argv[2]) : 1;
    const size_t slots = 47000000, huge_page = 2 << 20;
    size_t bytes = (slots * 12 + huge_page) & ~(huge_page - 1);
    char *raw = mmap(0, bytes + huge_page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return 1;
    char *table = (char *)(((uintptr_t)raw + huge_page - 1) & ~(uintptr_t)(huge_page - 1));
    madvise(table, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    uint32_t *words = (uint32_t *)table;
    for (size_t i = 0; i < slots * 3; i++) words[i] = (uint32_t)i;

    enum { BATCH = 76 };
    size_t batch[2][BATCH];
    int current = 0;
    for (int j = 0; j < BATCH; j++) batch[current][j] = next_random() % slots;
    uint64_t sum = 0;
    const size_t rounds = 400000;
    double start = now();
    for (size_t r = 0; r < rounds; r++) {
        int next = current ^ 1;
        for (int j = 0; j < BATCH; j++) {
            batch[next][j] = next_random() % slots;
            for (int line = 0; line < prefetch_lines; line++)
                _mm_prefetch(table + batch[next][j] * 12 + 64 * line, _MM_HINT_T0);
        }
        for (int j = 0; j < BATCH; j++) {
            uint32_t *slot = words + batch[current][j] * 3;
            sum += slot[2];
            if (slot[2] & 1) sum += slot[5];  // sometimes probe the next slot
        }
        current = next;
    }
    double elapsed = now() - start;
    printf("huge=%d prefetch_lines=%d %.1f ns per lookup (checksum %lu)\n", huge,
           prefetch_lines, elapsed * 1e9 / (rounds * BATCH), (unsigned long)(sum & 1));
    return 0;
}
