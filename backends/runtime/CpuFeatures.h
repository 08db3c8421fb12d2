#pragma once
// What the running CPU reports of the instruction sets grove's generated code may use (cpuid):
// the CPU emitter chooses kernels from it (lowering/cpu/HostTarget.h), and the runtime refuses a
// compiled model whose kernels need what this CPU lacks (Executor).

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

}  // namespace grove
