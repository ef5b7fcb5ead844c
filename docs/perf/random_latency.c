// Latency against throughput of random reads in a 512 MiB table (about the large trace's key
// table): a dependent chain (each read's address comes from the previous read, as a run
// head's index slot names its entry) against the same reads made independent.
//
//   gcc -O2 docs/perf/random_latency.c -o /tmp/random_latency
//   /tmp/random_latency 0   # 4 KiB pages
//   /tmp/random_latency 1   # MADV_HUGEPAGE
//
// Prints nanoseconds per read. On this project's VMs (2026-11-30): 4 KiB pages ~240–270 ns
// per dependent read and ~23 ns per independent one; huge pages ~150 and ~14 ns. See
// docs/PERFORMANCE.md (core section): the core with random keys is bound by how many random
// cache lines it touches and their page walks, not by how early it asks for them.
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
    const int huge = argc > 1 && argv[1][0] == '1';
    const size_t words = (size_t)512 << 20 >> 3;
    const size_t stride = 8; // one chain link per 64-byte line
    const size_t lines = words / stride;
    uint64_t *table = aligned_alloc(1 << 21, words * sizeof *table);
    if (huge) madvise(table, words * sizeof *table, MADV_HUGEPAGE);
    // A random cyclic permutation of the lines (Sattolo), stored as the chain.
    uint64_t *order = malloc(lines * sizeof *order);
    for (size_t i = 0; i < lines; i++) order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_random() % i;
        uint64_t t = order[i]; order[i] = order[j]; order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        table[order[i] * stride] = order[(i + 1) % lines] * stride;
    const size_t reads = 4000000;

    double start = now();
    uint64_t at = 0;
    for (size_t i = 0; i < reads; i++) at = table[at];
    double dependent = (now() - start) * 1e9 / reads;

    uint64_t *addresses = malloc(reads * sizeof *addresses);
    for (size_t i = 0; i < reads; i++) addresses[i] = (next_random() % lines) * stride;
    start = now();
    uint64_t sum = 0;
    for (size_t i = 0; i < reads; i++) sum += table[addresses[i]];
    double independent = (now() - start) * 1e9 / reads;

    printf("%s pages: dependent %.1f ns/read, independent %.1f ns/read (%llu %llu)\n",
           huge ? "huge" : "4 KiB", dependent,
           independent, (unsigned long long)(at & 1), (unsigned long long)(sum & 1));
    return 0;
}
