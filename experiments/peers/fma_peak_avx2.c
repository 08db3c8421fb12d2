/* fma_peak.c for CPUs without AVX-512 (AVX2 + FMA, e.g. an AMD EPYC before Zen 4): the machine's FP32
 * ceiling below any library, a loop of 12 independent 256-bit FMA chains (vfmadd on ymm registers, no
 * loads or stores: 12 accumulators and the 2 constants fit the 16 ymm registers) per thread, best of
 * --runs runs, 1 and 2 threads pinned to separate CPUs (OMP_PROC_BIND=spread). Prints one JSON line
 * per thread count: {"peer":"fma-peak-avx2","threads":1,"gflops":...}. Build with -O3 -mavx2 -mfma. */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peak_common.h"

#define CHAINS 12

/* 12 chains × 8 lanes × 2 FLOPs per iteration; returns a value that depends on every chain. */
static float chains(long iterations) {
  __m256 a[CHAINS];
  for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps(1.0f + (float)i * 1e-7f);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iterations; n++)
    for (int i = 0; i < CHAINS; i++) a[i] = _mm256_fmadd_ps(a[i], x, y);
  float lanes[8], sum = 0;
  for (int i = 0; i < CHAINS; i++) {
    _mm256_storeu_ps(lanes, a[i]);
    for (int k = 0; k < 8; k++) sum += lanes[k];
  }
  return sum;
}

int main(int argc, char **argv) {
  int runs = 5;
  long iterations = 20000000;
  if (parse_peak_args("fma_peak_avx2", argc, argv, &runs, &iterations)) return 2;
  setenv("OMP_PROC_BIND", "spread", 0); /* read when the OpenMP runtime starts, below */
  measure("fma-peak-avx2", chains, iterations, (double)CHAINS * 8.0 * 2.0, runs);
  return 0;
}
