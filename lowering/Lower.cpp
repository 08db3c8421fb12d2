#include "lowering/Lower.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "ilir/IRPrinter.h"
#include "ilir/Verifier.h"
#include "lowering/FuseElementwise.h"
#include "lowering/FuseProducts.h"
#include "lowering/HoistChildTerms.h"
#include "lowering/HoistInputs.h"
#include "lowering/LowerToLoops.h"

namespace grove::lowering {

namespace HI = Halide::Internal;

namespace {

int debug_level() {
  const char *v = std::getenv("GROVE_DEBUG");
  return v ? std::atoi(v) : 0;
}

// Runs one pass, timing it and (at GROVE_DEBUG=2) printing the IR when it changed.
template <typename Pass>
HI::Stmt run_pass(const char *name, HI::Stmt s, Pass &&pass) {
  auto t0 = std::chrono::steady_clock::now();
  HI::Stmt out = pass(s);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int level = debug_level();
  if (level >= 1) std::cerr << fmt::format("[grove] pass {:<24} {:8.2f} ms\n", name, ms);
  if (level >= 2 && !out.same_as(s)) std::cerr << "[grove] after " << name << ":\n" << out << "\n";
  return out;
}

}  // namespace

int vector_bytes(const Halide::Target &target) {
  if (target.has_feature(Halide::Target::AVX512) || target.has_feature(Halide::Target::AVX512_Skylake) ||
      target.has_feature(Halide::Target::AVX512_Cannonlake) ||
      target.has_feature(Halide::Target::AVX512_SapphireRapids))
    return 64;
  if (target.has_feature(Halide::Target::AVX) || target.has_feature(Halide::Target::AVX2)) return 32;
  return 16;
}

LoweredModel lower(const ilir::Program &program, const LowerOptions &options) {
  // grove vectorizes its loops itself. LLVM's SLP vectorizer would pack the micro-kernels'
  // per-node gather addresses into vectors and extract them lane by lane on every k (2x the
  // instructions of the FMAs); Halide reads this variable when it first initializes LLVM.
  ::setenv("HL_LLVM_ARGS", "-vectorize-slp=false", /*overwrite=*/0);
  LoweredModel result;
  // ILIR passes.
  ilir::verify(program);
  result.program = options.schedule.fuse ? fuse_elementwise(program) : program;
  if (options.schedule.hoist) {
    result.program = hoist_inputs(result.program);
    result.program = hoist_child_terms(result.program);
  }
  if (options.schedule.epilogue && options.schedule.batch && options.schedule.specialize)
    result.program = fuse_products(result.program, options.sizes, options.schedule);
  ilir::verify(result.program);
  if (debug_level() >= 2)
    std::cerr << "[grove] ILIR after the ILIR passes:\n" << ilir::to_string(result.program);

  // ILIR → Halide loop nest, then Halide's passes.
  LoopNest nest = lower_to_loops(result.program, options.sizes, options.schedule);
  result.args = nest.args;
  result.packed = nest.packed;
  HI::Stmt s = run_pass("lower_to_loops", HI::Stmt(), [&](const HI::Stmt &) { return nest.body; });
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
    return HI::lower_parallel_tasks(s, closures, options.function_name, options.target);
  });
  s = run_pass("simplify", s, [](const HI::Stmt &s) { return HI::simplify(s); });

  result.module = Halide::Module(options.function_name, options.target);
  for (HI::LoweredFunc &c : closures) result.module.append(c);
  result.module.append(
      HI::LoweredFunc(options.function_name, result.args, s, Halide::LinkageType::ExternalPlusMetadata));
  return result;
}

}  // namespace grove::lowering
