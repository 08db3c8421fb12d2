#include "lowering/cpu/HostTarget.h"

#include <fmt/format.h>

#include <vector>

namespace grove::lowering {

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

int vector_bytes(const Halide::Target &target) {
  using T = Halide::Target;
  if (target.has_feature(T::AVX512) || target.has_feature(T::AVX512_Skylake) ||
      target.has_feature(T::AVX512_Cannonlake) || target.has_feature(T::AVX512_SapphireRapids))
    return 64;
  if (target.has_feature(T::AVX) || target.has_feature(T::AVX2)) return 32;
  return 16;
}

Bf16Support bf16_support(const Halide::Target &target, std::optional<GemmKernel> kernel) {
  using T = Halide::Target;
  Bf16Support s;
  if (target.arch != T::X86 || target.bits != 64 || !target.has_feature(T::AVX512_Cannonlake)) {
    s.why_not = fmt::format("the target {} has no AVX512-BF16", target.to_string());
    return s;
  }
  if (target.has_feature(T::TSAN)) {
    s.why_not = "a ThreadSanitizer build compiles for SSE4.1 at most";
    return s;
  }
  if (!kernel) {
    const CpuFeatures f = cpu_features();
    if (f.amx_bf16 && f.amx_tile) {
      // Intel: AMX or nothing (its vdpbf16ps runs at half the fp32 rate).
      if (std::string refused = amx_state_refusal(); !refused.empty()) {
        s.why_not = refused + ", and this CPU's vdpbf16ps runs at half the fp32 rate";
        return s;
      }
      kernel = GemmKernel::AmxBf16;
    } else if (target.has_feature(T::AVX512_SapphireRapids)) {
      kernel = GemmKernel::AmxBf16;  // a Sapphire Rapids target asked for by name: its bf16 path
    } else if (f.avx512bf16) {
      kernel = GemmKernel::Vdpbf16ps;
    } else {
      s.why_not = "this CPU has neither AVX512-BF16 nor AMX";
      return s;
    }
  }
  s.kernel = *kernel;
  s.codegen_target = target.with_feature(T::AVX512_SapphireRapids);
  // AMX: LLVM's Sapphire Rapids model, which Halide selects for that target (with amx-bf16).
  if (s.kernel == GemmKernel::Vdpbf16ps) {
    // Sapphire Rapids' features but AMX, AVX512-FP16 and VEX VNNI, on a CPU model without them.
    s.mcpu = "icelake-server";
    s.mattrs =
        "+fma,+f16c,+avx512f,+avx512cd,+avx512vl,+avx512bw,+avx512dq,+avx512ifma,+avx512vbmi,"
        "+avx512bf16,+avx512vnni,-avx512fp16,-amx-tile,-amx-int8,-amx-bf16,-avxvnni";
  }
  return s;
}

}  // namespace grove::lowering
