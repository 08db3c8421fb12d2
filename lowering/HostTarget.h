#pragma once
// The Halide target for the CPU this process runs on, from what the CPU itself reports (cpuid).
//
// Halide 14's get_host_target() names the nearest Intel generation: on an AMD Zen 4 or Zen 5 with
// AVX512-BF16 and VNNI it sets avx512_sapphirerapids, and LLVM then compiles for Sapphire Rapids,
// whose AVX512-FP16 (vmovw, v*ph) and AMX instructions those CPUs lack — a kernel built that way can
// die with an illegal instruction. host_target() keeps a generation's feature only when the CPU has
// every instruction set LLVM assumes for it.

#include "Halide.h"

namespace grove::lowering {

// The instruction-set extensions the running CPU reports that Halide's x86 targets depend on.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512ifma = false, avx512vbmi = false, avx512vnni = false, avx512bf16 = false;
  bool avx512fp16 = false, avxvnni = false, amx_tile = false, amx_bf16 = false, amx_int8 = false;
};

CpuFeatures cpu_features();

// Halide's host target with the AVX-512 generations the CPU cannot run removed (on x86; elsewhere
// get_host_target() unchanged). In a ThreadSanitizer build (GROVE_TSAN) it has the tsan feature
// (the generated code is instrumented; an ahead-of-time library links TSan's runtime) and, on x86,
// no vectors wider than SSE4.1's 16 bytes, the widest accesses LLVM 14's TSan pass checks.
Halide::Target host_target();

}  // namespace grove::lowering
