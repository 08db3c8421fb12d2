#include "lowering/cpu/HalideIR.h"

namespace grove::lowering::internal {

HExpr var(const std::string &name) { return HI::Variable::make(Halide::Int(32), name); }

std::optional<int64_t> constant(const HExpr &e) {
  HExpr s = HI::simplify(e);
  if (const auto *i = s.as<HI::IntImm>()) return i->value;
  return std::nullopt;
}

// A buffer argument is known to Halide through a Parameter; a local allocation is not.
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument) {
  HI::Parameter param = is_argument ? HI::Parameter(t.element_of(), true, 1, buffer) : HI::Parameter();
  return HI::Load::make(t, buffer, std::move(index), Halide::Buffer<>(), param, HI::const_true(t.lanes()),
                        HI::ModulusRemainder());
}

Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument) {
  HI::Parameter param =
      is_argument ? HI::Parameter(value.type().element_of(), true, 1, buffer) : HI::Parameter();
  int lanes = value.type().lanes();
  return HI::Store::make(buffer, std::move(value), std::move(index), param, HI::const_true(lanes),
                         HI::ModulusRemainder());
}

HExpr int_load(const char *array, HExpr index) {
  return load(Halide::Int(32), array, std::move(index), true);
}

Stmt dispatch_for(const std::string &v, HExpr min, HExpr extent, HI::ForType type, int threads, Stmt body) {
  if (type != HI::ForType::Parallel || threads <= 1)
    return HI::For::make(v, std::move(min), std::move(extent),
                         type == HI::ForType::Parallel ? HI::ForType::Serial : type, Halide::DeviceAPI::None,
                         std::move(body));
  // for v.task in [0, v.tasks) parallel: for v in [min + lo, min + hi) serially, with
  // [lo, hi) = v.extent · [v.task, v.task + 1) / v.tasks.
  const std::string n = v + ".extent", tasks = v + ".tasks", task = v + ".task";
  HExpr lo = var(n) * var(task) / var(tasks), hi = var(n) * (var(task) + 1) / var(tasks);
  Stmt chunk =
      HI::LetStmt::make(v + ".lo", lo,
                        HI::For::make(v, std::move(min) + var(v + ".lo"), hi - var(v + ".lo"),
                                      HI::ForType::Serial, Halide::DeviceAPI::None, std::move(body)));
  Stmt tasks_loop = HI::For::make(task, 0, var(tasks), HI::ForType::Parallel, Halide::DeviceAPI::None, chunk);
  return HI::LetStmt::make(n, std::move(extent),
                           HI::LetStmt::make(tasks, Halide::min(var(n), threads), tasks_loop));
}

Halide::MemoryType local_memory(const HExpr &extent) {
  std::optional<int64_t> n = constant(extent);
  return n && *n <= 16384 ? Halide::MemoryType::Stack : Halide::MemoryType::Heap;
}

}  // namespace grove::lowering::internal
