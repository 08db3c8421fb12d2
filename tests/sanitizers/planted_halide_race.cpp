// A deliberate data race in Halide-generated code: a JIT-compiled loop whose parallel tasks all add
// into one element, run the way grove's models run (a JITModule called through its argv entry,
// with no user context). `make test-tsan` passes only if ThreadSanitizer reports the race, which it
// sees only if the code is instrumented (the host target's tsan feature) and the loop's tasks run
// on threads it sees (backends/cpu/TsanParallel.h). A race-free loop runs first: the routing itself
// must be clean.

#include <cstdio>
#include <vector>

#include "Halide.h"
#include "backends/cpu/TsanParallel.h"
#include "lowering/cpu/HostTarget.h"

namespace {

namespace HI = Halide::Internal;

// A parallel loop of 8 tasks over r: when `racy` each adds r into all of out(0..15), in vectors
// of the target's width (the race must be seen in vector code too: the host target's vectors must
// stay within what TSan checks); else task r writes out(r) alone.
int run(bool racy) {
  // With the JIT feature the code calls the shared JIT runtime, as a compiled model does.
  Halide::Target target = grove::lowering::host_target().with_feature(Halide::Target::JIT);
  Halide::Var x;
  Halide::RDom r(0, 8);
  Halide::Func f(racy ? "racy" : "clean");
  f(x) = 0;
  if (racy) {
    f(x) = f(x) + r;
    f.update().allow_race_conditions().parallel(r).vectorize(x, target.natural_vector_size<int>());
  } else {
    f(r) = r;
    f.update().allow_race_conditions().parallel(r);
  }
  Halide::Module module = f.compile_to_module({}, f.name(), target);
  HI::JITModule jit(module, module.functions().back());
  Halide::Runtime::Buffer<int> out(16);
  out.fill(0);
  std::vector<const void *> argv{out.raw_buffer()};
  if (int rc = jit.argv_function()(argv.data()); rc != 0) {
    std::fprintf(stderr, "the pipeline failed: %d\n", rc);
    return -1;
  }
  return out(0);
}

}  // namespace

int main() {
  if (!grove::cpu::jit_parallel_loops_on_threads()) {
    std::fprintf(stderr, "the JIT's parallel loops are not routed to std::threads\n");
    return 1;
  }
  run(false);
  std::fprintf(stderr, "clean loop: %lld parallel loop(s) routed, no report\n",
               static_cast<long long>(grove::cpu::routed_parallel_loops()));
  int sum = run(true);
  std::fprintf(stderr, "racy loop: out(0) = %d\n", sum);
  return 0;
}
