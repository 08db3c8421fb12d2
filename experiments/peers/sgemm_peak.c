/* The FLOP ceiling the peers and grove are judged against: OpenBLAS SGEMM, C = A·B with square
 * N×N float32 matrices (default 2048), best of --runs runs, for 1 and 2 threads. Prints one JSON
 * line per thread count: {"peer":"openblas-sgemm","n":2048,"threads":1,"gflops":...,"best_ms":...}.
 * Run with OPENBLAS_CORETYPE=SkylakeX (run_peers.sh sets it): a Haswell core type halves the peak. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  int n = 2048, runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--n") == 0) {
      n = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--runs") == 0) {
      runs = atoi(argv[i + 1]);
    } else {
      fprintf(stderr, "sgemm_peak: unknown option '%s'; expected --n N or --runs R\n", argv[i]);
      return 2;
    }
  }
  if (n <= 0 || runs <= 0) {
    fprintf(stderr, "sgemm_peak: --n and --runs must be positive\n");
    return 2;
  }
  size_t count = (size_t)n * (size_t)n;
  float *a = malloc(count * sizeof(float));
  float *b = malloc(count * sizeof(float));
  float *c = malloc(count * sizeof(float));
  if (!a || !b || !c) {
    fprintf(stderr, "sgemm_peak: out of memory for three %dx%d matrices\n", n, n);
    return 1;
  }
  srand(1);
  for (size_t i = 0; i < count; ++i) {
    a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    b[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  }
  const int thread_counts[] = {1, 2};
  for (int t = 0; t < 2; ++t) {
    openblas_set_num_threads(thread_counts[t]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                n); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
      double start = now_s();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
      double elapsed = now_s() - start;
      if (elapsed < best) best = elapsed;
    }
    printf("{\"peer\":\"openblas-sgemm\",\"n\":%d,\"threads\":%d,\"gflops\":%.1f,\"best_ms\":%.3f}\n", n,
           thread_counts[t], 2.0 * n * (double)n * n / best * 1e-9, best * 1e3);
  }
  free(a);
  free(b);
  free(c);
  return 0;
}
