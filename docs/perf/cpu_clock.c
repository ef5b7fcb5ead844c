// Why the benchmarks read CLOCK_THREAD_CPUTIME_ID and not /proc/thread-self/schedstat: the
// same ~8 ms loop, timed by both.
//
//   gcc -O1 docs/perf/cpu_clock.c -o /tmp/cpu_clock && /tmp/cpu_clock
//
// On this project's VMs (2026-11-30) schedstat read 4.3–7.8 ms where the clock read 8.1 ms
// while the machine was busy, and 0–1.1 ms off when it was quiet: schedstat's run time is
// only brought up to date at scheduler ticks and switches, so a run of a few milliseconds can
// be off by up to a tick (4 ms), and a best-of-N picks the run that was under-counted most.
#include <stdio.h>
#include <time.h>

static long long schedstat_ns(void) {
    FILE *file = fopen("/proc/thread-self/schedstat", "r");
    long long ns = 0;
    if (file) {
        if (fscanf(file, "%lld", &ns) != 1) ns = 0;
        fclose(file);
    }
    return ns;
}

static long long clock_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void) {
    for (int round = 0; round < 8; round++) {
        long long schedstat_start = schedstat_ns(), clock_start = clock_ns();
        volatile double sum = 0;
        for (long i = 0; i < 3000000; i++) sum += i * 0.5;
        printf("schedstat %.3f ms, CLOCK_THREAD_CPUTIME_ID %.3f ms\n",
               (schedstat_ns() - schedstat_start) / 1e6, (clock_ns() - clock_start) / 1e6);
    }
    return 0;
}
