/* The machine's own FP32 ceiling, below any library: a loop of 16 independent AVX-512 FMA chains
 * (vfmadd on zmm registers, no loads or stores) per thread, best of --runs runs, 1 and 2 threads
 * pinned to separate CPUs (OMP_PROC_BIND=spread is set here: unpinned, two threads can share one
 * vCPU). Prints one JSON line per thread count: {"peer":"fma-peak","threads":1,"gflops":...}.
 * SGEMM (sgemm_peak.c) can approach this figure but not pass it. */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peak_common.h"

/* 16 chains × 16 lanes × 2 FLOPs per iteration; returns a value that depends on every chain. */
static float chains(long iterations) {
  __m512 a[16];
  for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps(1.0f + (float)i * 1e-7f);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iterations; n++)
    for (int i = 0; i < 16; i++) a[i] = _mm512_fmadd_ps(a[i], x, y);
  float sum = 0;
  for (int i = 0; i < 16; i++) sum += _mm512_reduce_add_ps(a[i]);
  return sum;
}

int main(int argc, char **argv) {
  int runs = 5;
  long iterations = 20000000;
  if (parse_peak_args("fma_peak", argc, argv, &runs, &iterations)) return 2;
  setenv("OMP_PROC_BIND", "spread", 0); /* read when the OpenMP runtime starts, below */
  measure("fma-peak", chains, iterations, 16.0 * 16.0 * 2.0, runs);
  return 0;
}
