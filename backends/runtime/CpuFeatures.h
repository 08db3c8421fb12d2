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

}  // namespace grove
