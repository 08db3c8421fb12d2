/* What the peak microbenchmarks (fma_peak.c, bf16_peak.c) share: their command line (--runs R
 * --iterations N), the clock, and the measurement of one kernel on 1 and 2 threads. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads the options into *runs and *iterations (left at their defaults when absent); 0 on success,
 * else 2 after a message naming `tool`. */
static int parse_peak_args(const char *tool, int argc, char **argv, int *runs, long *iterations) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--runs") == 0) {
      *runs = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--iterations") == 0) {
      *iterations = atol(argv[i + 1]);
    } else {
      fprintf(stderr, "%s: unknown option '%s'; expected --runs R or --iterations N\n", tool, argv[i]);
      return 2;
    }
  }
  if (*runs <= 0 || *iterations <= 0) {
    fprintf(stderr, "%s: --runs and --iterations must be positive\n", tool);
    return 2;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One thread's kernel: `iterations` of its loop; returns a value that depends on all its work. */
typedef float (*peak_kernel)(long);

/* The best of `runs` runs of `fn` on 1 and on 2 threads (OpenMP), as one JSON line each:
 * {"peer": ..., "threads": T, "gflops": ..., "best_ms": ..., "check": ...}. */
static void measure(const char *peer, peak_kernel fn, long iterations, double flops_per_iteration, int runs) {
  for (int threads = 1; threads <= 2; threads++) {
    double best = 1e30;
    float sink = 0;
    for (int r = 0; r < runs; r++) {
      double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
      sink += fn(iterations);
      double s = now_s() - t0;
      if (s < best) best = s;
    }
    double flops = (double)threads * (double)iterations * flops_per_iteration;
    printf("{\"peer\":\"%s\",\"threads\":%d,\"gflops\":%.1f,\"best_ms\":%.3f,\"check\":%g}\n", peer, threads,
           flops / best / 1e9, best * 1e3, (double)sink);
    fflush(stdout);
  }
}
