#pragma once
// What the running CPU reports of the instruction sets grove's generated code may use (cpuid):
// the CPU emitter chooses kernels from it (lowering/cpu/HostTarget.h), and the runtime refuses a
// compiled model whose kernels need what this CPU lacks (Executor).

#include <string>

namespace grove {

// The instruction-set extensions that Halide's x86 targets and grove's kernels depend on; all false
// off x86.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512ifma = false, avx512vbmi = false, avx512vnni = false, avx512bf16 = false;
  bool avx512fp16 = false, avxvnni = false, amx_tile = false, amx_bf16 = false, amx_int8 = false;
};

CpuFeatures cpu_features();

// Whether this process may run AMX tile instructions: Linux traps the first one unless the process
// asked for the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), Linux 5.16
// on). Asked once, on the first call, and only where the CPU has AMX and the environment does not
// say GROVE_AMX=off; the answer is kept. Empty when granted, else why not (for a note or an error).
std::string amx_state_refusal();

// Which variant of a precision=bf16 library (backends/cpu/Aot.cpp: AMX tiles, vdpbf16ps, fp32, in
// that order) this process runs, as lowering::bf16_support chooses kernels for the JIT: 0 where the
// CPU has AMX and the process holds the tile state (amx_state_refusal); 2, fp32, on an AMX CPU
// refused it (its vdpbf16ps runs at half the fp32 rate); 1 with AVX512-BF16 and no AMX; else 2.
// GROVE_LIBRARY_VARIANT=fp32 in the environment forces 2. Called by the library's descriptor.
extern "C" int grove_bf16_library_variant(void);

}  // namespace grove
