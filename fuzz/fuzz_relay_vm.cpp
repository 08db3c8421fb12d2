// Fuzzes the Relay VM against the reference interpreter: each input that parses and type-checks
// runs its @main (or, without one, each global) on both executors with seeded random arguments
// (tests/relay/Differential.h). Both must give the same value or the same UserError; a difference,
// an InternalError or a crash is a finding. The VM uses the interpreter's kernels: Halide's JIT is too
// slow to fuzz, and its kernels are compared on the test programs (test_vm_differential.cpp).
//
// A program that may never end, or allocate without bound, is not run: neither is a difference, and
// libFuzzer stops at the first timeout or out-of-memory.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/relay/Parser.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Visitor.h"
#include "fuzz/FuzzCommon.h"
#include "tests/relay/Differential.h"

namespace {

using namespace grove::relay;

// Tensors of more elements than this are not run (known dimensions; `?` runs as 2).
constexpr int64_t kMaxElements = int64_t(1) << 20;

bool holds_function(const Type &t) {
  if (t.as<FuncType>()) return true;
  if (const auto *tuple = t.as<TupleType>())
    return std::any_of(tuple->fields.begin(), tuple->fields.end(), holds_function);
  if (const auto *call = t.as<TypeCall>())
    return std::any_of(call->args.begin(), call->args.end(), holds_function);
  if (const auto *ref = t.as<RefType>()) return holds_function(ref->value);
  return false;
}

// Whether running the typed module may not end or may allocate without bound:
//   1. globals that call each other in a cycle (after removing, again and again, those that call no
//      remaining global, some remain);
//   2. a let-bound closure that calls itself, or a reference that holds a function (a loop tied
//      through the reference);
//   3. a tensor type of more than kMaxElements elements.
bool may_run_long(const Module &m) {
  std::map<std::string, std::set<std::string>> calls;
  bool unbounded = false;
  for (const auto &[name, fn] : m.functions()) {
    for (const std::string &callee : called_globals(fn)) calls[name].insert(callee);
    calls[name];
    post_order_visit(fn, [&](const Expr &e) {
      if (const auto *let = e.as<Let>(); let && let->value.as<Function>()) {
        std::vector<Expr> free = free_vars(let->value);
        unbounded |=
            std::any_of(free.begin(), free.end(), [&](const Expr &v) { return v.same_as(let->var); });
      }
      if (const auto *ref = e.as<RefCreate>(); ref && ref->value->checked_type.defined())
        unbounded |= holds_function(ref->value->checked_type);
      if (const auto *t = e->checked_type.defined() ? e->checked_type.as<TensorType>() : nullptr) {
        int64_t elements = 1;
        for (int64_t d : t->shape)
          elements = std::min(kMaxElements + 1, elements * (d < 0 ? 2 : std::max<int64_t>(d, 1)));
        unbounded |= elements > kMaxElements;
      }
    });
  }
  for (bool removed = true; removed;) {
    removed = false;
    for (auto it = calls.begin(); it != calls.end();) {
      bool leaf = std::none_of(it->second.begin(), it->second.end(),
                               [&](const std::string &c) { return calls.count(c); });
      it = leaf ? calls.erase(it) : std::next(it);
      removed |= leaf;
    }
  }
  return unbounded || !calls.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  return grove::fuzz::run_reader([&] {
    Module module = parse_module(text, "fuzz.relay");
    infer_types(module);
    if (may_run_long(module)) return;
    for (const auto &[name, function] : module.functions()) {
      if (module.find_function("main") && name != "main") continue;
      testing::Check check = testing::check_on_both(module, name, size, testing::VMKernels::Interpreter);
      if (check.result == testing::Check::Differ)
        grove::fuzz::finding("the VM and the interpreter differ on @" + name + ":\n  " + check.detail);
    }
  });
}
