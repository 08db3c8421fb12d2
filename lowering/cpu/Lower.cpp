#include "lowering/cpu/Lower.h"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "ilir/IRPrinter.h"
#include "ilir/Verifier.h"
#include "lowering/cpu/LowerToLoops.h"
#include "lowering/cpu/Messages.h"
#include "plan/LevelPlan.h"
#include "plan/Passes.h"
#include "support/PassRunner.h"

namespace grove::lowering {

namespace HI = Halide::Internal;
namespace msg = lowering_messages;

namespace {

// How the pass runner shows each kind of IR at GROVE_DEBUG=2: ILIR programs as the printer writes
// them, the level plan as `grove dump --stage plan` does, Halide statements (and the loop nest
// lower_to_loops builds) as Halide prints them.
std::string show(const ilir::Program &p) { return ilir::to_string(p); }
std::string show(const plan::LevelPlan &plan) { return plan::to_string(plan); }
std::string show(const HI::Stmt &s) {
  std::ostringstream out;
  out << s;
  return out.str();
}
std::string show(const LoopNest &nest) { return show(nest.body); }

// Runs one pass over `ir` (an ILIR program or a Halide statement) through support's timed pass
// runner: at GROVE_DEBUG=1 prints its time, at GROVE_DEBUG=2 also the IR after it when it changed.
// Every pass of lower() goes through here, so `GROVE_DEBUG=1 grove run ...` lists the whole
// pipeline with its times.
template <typename IR, typename Pass>
auto run_pass(const char *name, const IR &ir, Pass &&pass) {
  return run_timed_pass(
      "", name, debug_level(), ir, std::forward<Pass>(pass), [](const auto &x) { return show(x); },
      [](const auto &a, const auto &b) { return show(a) == show(b); });
}

}  // namespace

LoweredModel lower(const ilir::Program &program, const LowerOptions &options) {
  // grove vectorizes its loops itself. LLVM's SLP vectorizer would pack the micro-kernels'
  // per-node gather addresses into vectors and extract them lane by lane on every k (2x the
  // instructions of the FMAs); Halide reads this variable when it first initializes LLVM.
  ::setenv("HL_LLVM_ARGS", "-vectorize-slp=false", /*overwrite=*/0);
  // ILIR passes.
  ilir::verify(program);
  ilir::Program p = program;
  LoweredModel result;
  Halide::Target target = options.target;
  scheduling::Schedule schedule = options.schedule;
  GemmKernel gemm_kernel = GemmKernel::Fma;
  if (schedule.precision == scheduling::Schedule::Precision::Bf16) {
    // bf16 GEMMs need a kernel for the target, and panels of whole 16-row blocks (one vdpbf16ps, or
    // one AMX product tile's columns).
    Bf16Support bf16 = bf16_support(target, options.bf16_kernel);
    const bool amx = bf16.kernel == GemmKernel::AmxBf16;
    if (bf16.kernel != GemmKernel::Fma && schedule.panel % kBf16Rows != 0)
      bf16 = Bf16Support{.why_not = fmt::format(msg::kBf16Panel, schedule.panel, kBf16Rows,
                                                amx ? "AMX product tile" : "vdpbf16ps")};
    if (bf16.kernel == GemmKernel::Vdpbf16ps) {
      // Unless asked otherwise, blocks of 64 rows × 6 nodes: 24 accumulators of the 32 registers,
      // one operand broadcast per four vdpbf16ps (not two) and half the panels of 32 × 8; measured
      // faster or equal at H = 150, 256 and 512, batches 1 to 25, on a Zen 5.
      if (!schedule.asked("panel") && !schedule.asked("vector")) schedule.panel = 4 * kBf16Rows;
      if (!schedule.asked("node_block")) schedule.node_block = 6;
    } else if (amx) {
      // Unless asked otherwise, blocks of one operand tile's 16 nodes × 64 rows: four product tiles
      // per operand tile loaded. A block of more nodes than a tile's rows is cut to them.
      if (!schedule.asked("panel") && !schedule.asked("vector")) schedule.panel = 4 * kBf16Rows;
      if (!schedule.asked("node_block")) {
        schedule.node_block = kBf16Rows;
      } else if (schedule.node_block > kBf16Rows) {
        result.notes.push_back(
            fmt::format(msg::kNoteAmxNodeBlock, schedule.node_block, kBf16Rows, kBf16Rows));
        schedule.node_block = kBf16Rows;
      }
    }
    if (bf16.kernel != GemmKernel::Fma) {
      gemm_kernel = bf16.kernel;
      target = bf16.codegen_target;
      result.llvm_cpu = bf16.mcpu;
      result.llvm_features = bf16.mattrs;
    } else {
      schedule.precision = scheduling::Schedule::Precision::Fp32;
      result.notes.push_back(fmt::format(msg::kNoteBf16, bf16.why_not));
    }
  }
  for (const plan::IlirPass &pass : plan::ilir_passes(schedule, options.sizes))
    p = run_pass(pass.name, p, pass.run);
  ilir::verify(p);

  // ILIR → level plan → Halide loop nest, then Halide's passes.
  result.plan = run_pass("plan_levels", p, [&](const ilir::Program &q) {
    return plan::plan_levels(q, options.sizes, schedule);
  });
  // The kernels the target chose are the contract's: the emitter reads them from it, the runtime
  // checks the CPU for them.
  if (result.plan.abi.bf16_panels()) result.plan.abi.gemm_kernel = gemm_kernel;
  LoopNest nest = run_pass("lower_to_loops", result.plan, lower_to_loops);
  HI::Stmt s = nest.body;
  s = run_pass("simplify", s, [](const HI::Stmt &s) { return HI::simplify(s); });
  result.loops = s;
  s = run_pass("vectorize_loops", s, [](const HI::Stmt &s) { return HI::vectorize_loops(s, {}); });
  s = run_pass("simplify", s, [](const HI::Stmt &s) { return HI::simplify(s); });
  // Row addresses of gathered operands (a child's state, a token's embedding) out of the k loops.
  s = run_pass("hoist_loop_invariant_values", s,
               [](const HI::Stmt &s) { return HI::hoist_loop_invariant_values(s); });
  s = run_pass("unpack_buffers", s, [](const HI::Stmt &s) { return HI::unpack_buffers(s); });
  std::vector<HI::LoweredFunc> closures;
  s = run_pass("lower_parallel_tasks", s, [&](const HI::Stmt &s) {
    return HI::lower_parallel_tasks(s, closures, options.function_name, target);
  });
  s = run_pass("simplify", s, [](const HI::Stmt &s) { return HI::simplify(s); });

  result.module = Halide::Module(options.function_name, target);
  for (HI::LoweredFunc &c : closures) result.module.append(c);
  result.module.append(
      HI::LoweredFunc(options.function_name, nest.args, s, Halide::LinkageType::ExternalPlusMetadata));
  return result;
}

}  // namespace grove::lowering
