#include "lowering/HostTarget.h"

#include <fmt/format.h>

#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace grove::lowering {

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  f.avx512f = b & (1u << 16);
  f.avx512dq = b & (1u << 17);
  f.avx512ifma = b & (1u << 21);
  f.avx512cd = b & (1u << 28);
  f.avx512bw = b & (1u << 30);
  f.avx512vl = b & (1u << 31);
  f.avx512vbmi = c & (1u << 1);
  f.avx512vnni = c & (1u << 11);
  f.amx_bf16 = d & (1u << 22);
  f.avx512fp16 = d & (1u << 23);
  f.amx_tile = d & (1u << 24);
  f.amx_int8 = d & (1u << 25);
  __cpuid_count(7, 1, a, b, c, d);
  f.avxvnni = a & (1u << 4);
  f.avx512bf16 = a & (1u << 5);
#endif
  return f;
}

// Halide 14 maps its AVX-512 features to LLVM CPUs: skylake → skylake-avx512, cannonlake →
// cannonlake, sapphirerapids → sapphirerapids. A feature stays only if the CPU has all of what
// LLVM's model of that CPU has (a superset of what Halide's comment lists).
Halide::Target host_target() {
  using T = Halide::Target;
  T target = Halide::get_host_target();
#ifdef GROVE_TSAN
  // LLVM 14's ThreadSanitizer pass checks loads and stores of at most 16 bytes: the 32- and 64-byte
  // vectors of AVX and AVX-512 would go unchecked, so under TSan the host target stops at SSE4.1.
  if (target.arch == T::X86) {
    std::vector<T::Feature> sse;
    if (target.has_feature(T::SSE41)) sse.push_back(T::SSE41);
    target = T(target.os, target.arch, target.bits, sse);
  }
  return target.with_feature(T::TSAN);
#endif
  if (target.arch != T::X86) return target;
  CpuFeatures f = cpu_features();
  bool skylake = f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl;
  bool cannonlake = skylake && f.avx512ifma && f.avx512vbmi;
  bool sapphirerapids = cannonlake && f.avx512vnni && f.avx512bf16 && f.avx512fp16 && f.avxvnni &&
                        f.amx_tile && f.amx_bf16 && f.amx_int8;
  if (!sapphirerapids) target = target.without_feature(T::AVX512_SapphireRapids);
  if (!cannonlake) target = target.without_feature(T::AVX512_Cannonlake);
  if (!skylake) target = target.without_feature(T::AVX512_Skylake);
  return target;
}

Bf16Support bf16_support(const Halide::Target &target) {
  using T = Halide::Target;
  Bf16Support s;
  const CpuFeatures f = cpu_features();
  if (target.arch != T::X86 || target.bits != 64 || !target.has_feature(T::AVX512_Cannonlake)) {
    s.why_not = fmt::format("the target {} has no AVX512-BF16", target.to_string());
  } else if (target.has_feature(T::TSAN)) {
    s.why_not = "a ThreadSanitizer build compiles for SSE4.1 at most";
  } else if (target.has_feature(T::AVX512_SapphireRapids) || f.amx_bf16) {
    s.why_not =
        "this CPU has AMX, whose tile kernels grove does not emit yet, and its vdpbf16ps runs at half the "
        "fp32 rate";
  } else if (!f.avx512bf16) {
    s.why_not = "this CPU has neither AVX512-BF16 nor AMX";
  } else {
    s.vdpbf16ps = true;
    s.codegen_target = target.with_feature(T::AVX512_SapphireRapids);
    // Sapphire Rapids' features but AMX, AVX512-FP16 and VEX VNNI, on a CPU model without them.
    s.mcpu = "icelake-server";
    s.mattrs =
        "+fma,+f16c,+avx512f,+avx512cd,+avx512vl,+avx512bw,+avx512dq,+avx512ifma,+avx512vbmi,"
        "+avx512bf16,+avx512vnni,-avx512fp16,-amx-tile,-amx-int8,-amx-bf16,-avxvnni";
  }
  return s;
}

}  // namespace grove::lowering
