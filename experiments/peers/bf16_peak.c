/* The machine's own bf16 ceilings, next to fma_peak.c's fp32 one and measured the same way (no
 * memory in the loop, best of --runs runs, 1 and 2 threads pinned to separate CPUs with
 * OMP_PROC_BIND=spread):
 *   - bf16-peak: 16 independent AVX512-BF16 `vdpbf16ps` chains on zmm registers per thread. One
 *     vdpbf16ps multiplies 16 lanes × 2 bf16 pairs and adds them into fp32: 64 FLOP (2 per pair
 *     product), the convention grove's FLOP counts use (2·M·K per product).
 *   - amx-peak: AMX `tdpbf16ps` on 4 independent accumulator tiles (16 rows × 16 fp32) fed by 2 A
 *     tiles (16 × 32 bf16) and 2 B tiles (16 pair-rows × 16 columns) loaded once: 16·16·32·2 = 16,384
 *     FLOP per instruction. The process asks Linux for the AMX state first
 *     (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); each thread loads its tile configuration.
 * What the CPU has is read from cpuid (and XCR0: the OS must save the ZMM and tile state), never
 * assumed: a CPU without AVX512-BF16 or without AMX-BF16 gets one line saying so, e.g.
 *   {"peer":"amx-peak","skipped":"this CPU lacks AMX-BF16 (amx_bf16)"}
 * and the exit status stays 0. Otherwise one JSON line per peak and thread count:
 *   {"peer":"bf16-peak","threads":1,"gflops":...,"best_ms":...,"check":...}
 * The file is built with -O3 -mavx512f only; the bf16 and AMX kernels carry their own target
 * attributes, so nothing outside them uses an instruction the CPU may lack. */
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "peak_common.h"


/* --- What the CPU and the OS offer (cpuid, XCR0) --------------------------------------------- */

static uint64_t xcr0(void) {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}

struct features {
  int avx512f, avx512_bf16, amx_tile, amx_bf16;
};

static struct features cpu_features(void) {
  struct features f = {0, 0, 0, 0};
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE: xgetbv is there */
    return f;
  const uint64_t x = xcr0();
  const int zmm_state = (x & 0xe6) == 0xe6;                  /* SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM */
  const int tile_state = (x & (3ull << 17)) == (3ull << 17); /* XTILECFG, XTILEDATA */
  if (__get_cpuid_max(0, NULL) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned max_subleaf = a;
  f.avx512f = zmm_state && (b & (1u << 16));
  f.amx_bf16 = tile_state && (d & (1u << 22));
  f.amx_tile = tile_state && (d & (1u << 24));
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = f.avx512f && (a & (1u << 5));
  }
  return f;
}

/* --- vdpbf16ps ------------------------------------------------------------------------------- */

/* 16 chains × 16 lanes × 2 pairs × 2 FLOP per iteration; returns a value that depends on every chain. */
__attribute__((target("avx512f,avx512bf16"))) static float bf16_chains(long iterations) {
  __m512 a[16];
  for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps(1.0f + (float)i * 1e-3f);
  /* bf16 0.5 and 2^-14: each pair adds 2^-14 to a lane, so 20 M iterations stay far from overflow. */
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f00), y = (__m512bh)_mm512_set1_epi16(0x3900);
  for (long n = 0; n < iterations; n++)
    for (int i = 0; i < 16; i++) a[i] = _mm512_dpbf16_ps(a[i], x, y);
  float sum = 0;
  for (int i = 0; i < 16; i++) sum += _mm512_reduce_add_ps(a[i]);
  return sum;
}

/* --- AMX tdpbf16ps --------------------------------------------------------------------------- */

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

/* Linux traps the first AMX instruction of a process that has not asked for the tile data state. */
static int request_amx(void) { return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0; }

struct tile_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16]; /* bytes per row of each tile */
  uint8_t rows[16];
};

/* Tiles 0-3: accumulators C (16 × 16 fp32); 4, 5: A (16 rows × 32 bf16); 6, 7: B (16 pair-rows × 16
 * columns × 2 bf16). Every tile is 16 rows × 64 bytes. Per iteration 4 tdpbf16ps × 16,384 FLOP. */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_chains(long iterations) {
  struct tile_config config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; t++) config.colsb[t] = 64, config.rows[t] = 16;
  static __thread uint16_t operand[16 * 32]; /* bf16 2^-14 in every element (C grows slowly) */
  static __thread float out[16 * 16];
  for (int i = 0; i < 16 * 32; i++) operand[i] = 0x3900;
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (long n = 0; n < iterations; n++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float sum = 0;
  _tile_stored(0, out, 64);
  sum += out[0];
  _tile_stored(1, out, 64);
  sum += out[17];
  _tile_stored(2, out, 64);
  sum += out[34];
  _tile_stored(3, out, 64);
  sum += out[255];
  _tile_release();
  return sum;
}

/* --- Driver ---------------------------------------------------------------------------------- */

static void skipped(const char *peer, const char *why) {
  printf("{\"peer\":\"%s\",\"skipped\":\"%s\"}\n", peer, why);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int runs = 5;
  long iterations = 20000000;
  if (parse_peak_args("bf16_peak", argc, argv, &runs, &iterations)) return 2;
  setenv("OMP_PROC_BIND", "spread", 0); /* read when the OpenMP runtime starts, below */
  const struct features f = cpu_features();
  if (f.avx512_bf16)
    measure("bf16-peak", bf16_chains, iterations, 16.0 * 16.0 * 2.0 * 2.0, runs);
  else
    skipped("bf16-peak", f.avx512f ? "this CPU lacks AVX512-BF16" : "this CPU (or OS) lacks AVX-512");
  if (!f.amx_tile || !f.amx_bf16)
    skipped("amx-peak", "this CPU lacks AMX-BF16 (amx_bf16)");
  else if (!request_amx())
    skipped("amx-peak", "Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)");
  else /* an iteration is ~64 cycles of AMX against fma_peak's ~8-16: fewer of them */
    measure("amx-peak", amx_chains, iterations / 8 > 0 ? iterations / 8 : 1, 4.0 * 16.0 * 16.0 * 32.0 * 2.0,
            runs);
  return 0;
}
