// First touch of fresh anonymous memory, with and without transparent huge pages.
//
//   gcc -O2 docs/perf/first_touch.c -o /tmp/first_touch
//   /tmp/first_touch 1   # MADV_HUGEPAGE
//   /tmp/first_touch 0   # MADV_NOHUGEPAGE
//
// Maps 1 GiB three times, touches one byte per 4 KiB page, then memsets it; prints seconds
// per GiB. On this project's VMs the first huge-page run costs ~3.6 s/GiB (the host backs
// the guest's memory on first use), small pages ~0.5 s/GiB; memory the process just freed
// is cheap (~0.2 s/GiB) until the host reclaims it. Why the key table avoids huge pages and
// grows in place: see docs/PERFORMANCE.md.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    size_t size = (size_t)1 << 30;
    int huge = argc > 1 ? atoi(argv[1]) : 1;
    for (int run = 0; run < 3; run++) {
        char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        double start = now();
        for (size_t i = 0; i < size; i += 4096) p[i] = 1;
        double touched = now();
        memset(p, 2, size);
        double filled = now();
        printf("huge=%d first touch %.3f s/GiB, memset afterwards %.3f s\n", huge,
               touched - start, filled - touched);
        munmap(p, size);
    }
    return 0;
}
