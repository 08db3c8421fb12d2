#pragma once
// The Halide target for the CPU this process runs on, from what the CPU itself reports (cpuid).
//
// Halide 14's get_host_target() names the nearest Intel generation: on an AMD Zen 4 or Zen 5 with
// AVX512-BF16 and VNNI it sets avx512_sapphirerapids, and LLVM then compiles for Sapphire Rapids,
// whose AVX512-FP16 (vmovw, v*ph) and AMX instructions those CPUs lack — a kernel built that way can
// die with an illegal instruction. host_target() keeps a generation's feature only when the CPU has
// every instruction set LLVM assumes for it.

#include <optional>
#include <string>

#include "Halide.h"
#include "abi/ModelAbi.h"
#include "backends/runtime/CpuFeatures.h"

namespace grove::lowering {

// The running CPU's instruction sets (cpuid): backends/runtime/CpuFeatures.h.
using grove::cpu_features;
using grove::CpuFeatures;
using grove::GemmKernel;

// Halide's host target with the AVX-512 generations the CPU cannot run removed (on x86; elsewhere
// get_host_target() unchanged). In a ThreadSanitizer build (GROVE_TSAN) it has the tsan feature
// (the generated code is instrumented; an ahead-of-time library links TSan's runtime) and, on x86,
// no vectors wider than SSE4.1's 16 bytes, the widest accesses LLVM 14's TSan pass checks.
Halide::Target host_target();

// The width of `target`'s widest vector registers in bytes, for scheduling::default_schedule and the
// Relay kernels' schedules: 64 with AVX-512, 32 with AVX/AVX2, 16 otherwise (SSE, NEON).
int vector_bytes(const Halide::Target &target);

// Whether level GEMMs in bf16 (Schedule::precision) can run on `target`, and with which kernels.
//
// Two kernels, chosen by what the running CPU has (or as asked, for an ahead-of-time library's
// variants, whatever this CPU is):
// - AMX (GemmKernel::AmxBf16): tdpbf16ps on 16 × 32 tiles, the fast bf16 path of the Intel cores
//   that have it; the process must be granted the tile state (amx_state_refusal), else fp32.
//   Generated for Halide's Sapphire Rapids target, LLVM's own CPU model.
// - vdpbf16ps (GemmKernel::Vdpbf16ps): AVX512-BF16, which runs at the fp32 FMA's instruction rate
//   (twice its FLOPs) on AMD Zen 4/5 but at half that on Intel cores: never chosen where there is
//   AMX. Halide 14 pattern-matches vdpbf16ps only for its Sapphire Rapids target, whose LLVM CPU
//   model also has AVX512-FP16, AMX and VEX VNNI, which those CPUs lack: the module is generated
//   for `codegen_target` and LLVM compiles it for `mcpu` with `mattrs` (lowering/Codegen.h).
// Either needs a target with AVX-512 (Cannon Lake's set, what host_target() keeps on those CPUs);
// elsewhere no kernel (kernel Fma), with the reason as a note.
// The fp32 lanes of one 512-bit vdpbf16ps, and the columns of one AMX accumulator tile: the rows of
// a GEMM panel one instruction computes.
inline constexpr int kBf16Rows = 16;

struct Bf16Support {
  GemmKernel kernel = GemmKernel::Fma;  // Fma: none
  std::string why_not;                  // when there is no kernel
  Halide::Target codegen_target;
  std::string mcpu, mattrs;
};
// `kernel`: the one asked for (Vdpbf16ps or AmxBf16, generated for any CPU); nullopt: the running
// CPU's.
Bf16Support bf16_support(const Halide::Target &target, std::optional<GemmKernel> kernel = std::nullopt);

}  // namespace grove::lowering
