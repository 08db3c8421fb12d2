#pragma once
// One Relay function run on the reference interpreter and on the VM, with seeded random arguments
// (relay/RandomValues.h), and the two outcomes compared: test_vm_differential.cpp runs every test
// program through it, fuzz/fuzz_relay_vm.cpp every input the fuzzer finds well typed.
//
// Agreement: both give a value, equal by same_value — bit for bit when the VM ran the interpreter's
// kernels only, which compute what the interpreter computes; within kReorderedRtol relative when it
// ran code that orders float arithmetic differently (Halide's kernels, grove's compiled recursive
// functions) — or both raise a UserError with the same first line, or the same but for its location:
// which of two failing operators a program reports depends on the order they run in, and fusion
// changes it (a fused kernel's inputs run before all of the kernel), as any compiler may. The VM
// compiles @main only, so a function other than @main runs as the @main of a copy of the module.

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "backends/relay/VMRunner.h"
#include "backends/relay/vm/InterpreterKernels.h"
#include "backends/relay/vm/VM.h"
#include "backends/relay/vm/VMCompiler.h"
#include "frontend/relay/Interpreter.h"
#include "frontend/relay/RandomValues.h"
#include "frontend/relay/TypeInfer.h"
#include "support/Error.h"
#include "tests/relay/ValueCompare.h"

namespace grove::relay::testing {

// The relative tolerance of float results computed in another order (Halide's kernels, grove's
// compiled recursive functions) against the interpreter's.
inline constexpr double kReorderedRtol = 1e-5;

enum class VMKernels {
  Interpreter,  // the interpreter's kernels (backends/relay/vm/InterpreterKernels.h): bit for bit
  Halide,       // the command line's: Halide, else the interpreter's (backends/relay/VMRunner.h)
};

// What one executor did: a value, or the first line of its UserError.
struct Outcome {
  Value value;
  std::string error;
  bool reordered = false;  // the VM ran Halide's kernels or grove's compiled recursive functions
};

inline std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

template <typename F>
Outcome outcome_of(F &&run) {
  try {
    return {run(), ""};
  } catch (const UserError &e) {
    return {nullptr, first_line(e.what())};
  }
}

inline std::string describe(const Outcome &o) {
  return o.value ? value_to_string(o.value) : "UserError: " + o.error;
}

struct Check {
  enum Result { Agree, Skip, Differ } result;
  std::string detail;      // Skip: the reason; Differ: both outcomes; Agree: the error both raised, if any
  bool elsewhere = false;  // Agree: the same error, at another location
};

// A message without its leading location ("file:line:col: ").
inline std::string without_location(const std::string &message) {
  static const std::regex location(R"(^[^ ]+:[0-9]+:[0-9]+: )");
  return std::regex_replace(message, location, "", std::regex_constants::format_first_only);
}

// @entry (a global of the typed module `m`) made ready to run on both: the module with @entry as its
// @main, and arguments drawn from `seed`.
struct Prepared {
  Module module;
  std::vector<Value> args;
};

// Prepares @entry, or says why it is skipped: it is polymorphic or an external compiler's, or a
// parameter has a type no random value fits (a function). A parameter named in `given` takes that
// tensor (a model's weights, whose `?` dimensions must agree with each other) instead; `options`
// shape the random ones.
inline std::optional<Prepared> prepare(const Module &m, const std::string &entry, uint64_t seed,
                                       std::string *skip, const std::map<std::string, NDArray> &given = {},
                                       const RandomValueOptions &options = {}) {
  const Function &fn = *m.find_function(entry)->as<Function>();
  if (!fn.type_params.empty() || fn.has_attr(attr::kCompiler)) {
    *skip =
        fn.type_params.empty() ? "an external compiler's function (Compiler=...)" : "a polymorphic function";
    return std::nullopt;
  }
  Prepared p{m, {}};
  if (entry != "main") p.module.add_function("main", *m.find_function(entry));
  std::mt19937_64 rng(seed);
  for (const Expr &param : fn.params) {
    if (auto it = given.find(param.as<Var>()->name_hint); it != given.end()) {
      p.args.push_back(tensor_value(it->second));
      continue;
    }
    std::string why;
    std::optional<Value> v = random_value(m, param->checked_type, rng, &why, options);
    if (!v) {
      *skip = param->checked_type.as<FuncType>() ? "a parameter of function type" : "a parameter: " + why;
      return std::nullopt;
    }
    p.args.push_back(*v);
  }
  return p;
}

inline Outcome run_on_interpreter(const Prepared &p) {
  return outcome_of([&] { return run_main(p.module, p.args); });
}

inline Outcome run_on_vm(const Prepared &p, VMKernels kernels) {
  std::unique_ptr<VirtualMachine> machine;
  Outcome out = outcome_of([&] {
    if (kernels == VMKernels::Halide) {
      machine = make_vm(p.module);
    } else {
      vm::Executable exe = vm::compile(p.module);
      std::unique_ptr<KernelCompiler> reference = make_interpreter_kernel_compiler(exe.module);
      machine = std::make_unique<VirtualMachine>(std::move(exe), std::move(reference));
    }
    return machine->run_main(p.args);
  });
  out.reordered = kernels == VMKernels::Halide || (machine && machine->stats().recursive_calls > 0);
  return out;
}

// Whether the outcomes agree. A program the VM documents it does not compile is skipped: a Primitive
// function or an external compiler's used as a value, a Compiler= that names no code generator or
// whose code generator cannot compile the function (the interpreter runs its body), a
// Compiler="grove" on a function grove's recursive compiler cannot compile.
inline Check compare(const Outcome &interp, const Outcome &vm) {
  if (!vm.value && (vm.error.find("the VM cannot compile") != std::string::npos ||
                    vm.error.find("the VM cannot use it as a value") != std::string::npos ||
                    vm.error.find("no code generator of that name") != std::string::npos ||
                    vm.error.find("code generator cannot compile it") != std::string::npos ||
                    vm.error.find("but grove's recursive compiler cannot compile it") != std::string::npos))
    return {Check::Skip, "the VM cannot compile it (documented)"};
  // A recursive function grove compiles checks each leaf's token id against its embedding's rows
  // (docs/RELAY.md); the interpreter's take clips an id out of range. Random trees draw such ids.
  if (interp.value && !vm.value && vm.error.find("is out of range: the vocabulary has") != std::string::npos)
    return {Check::Skip, "a token id past the embedding, which grove's compiled trees refuse (documented)"};
  std::string why;
  bool agree = interp.value && vm.value
                   ? same_value(vm.value, interp.value, &why, vm.reordered ? kReorderedRtol : 0)
                   : !interp.value && !vm.value && interp.error == vm.error;
  if (agree) return {Check::Agree, interp.error};
  if (!interp.value && !vm.value && without_location(interp.error) == without_location(vm.error))
    return {Check::Agree, interp.error + "\n  VM: " + vm.error, true};
  return {Check::Differ, "interpreter: " + describe(interp) + "\n  VM:          " + describe(vm) +
                             (why.empty() ? "" : "\n  first difference: " + why)};
}

// Runs @entry of the typed module `m` on both executors with arguments drawn from `seed`.
inline Check check_on_both(const Module &m, const std::string &entry, uint64_t seed, VMKernels kernels,
                           const std::map<std::string, NDArray> &given = {}) {
  std::string skip;
  std::optional<Prepared> p = prepare(m, entry, seed, &skip, given);
  if (!p) return {Check::Skip, skip};
  Outcome interp = run_on_interpreter(*p);
  return compare(interp, run_on_vm(*p, kernels));
}

// The interpreter's evaluate(m, e) for a closed, typed `e` — its value, or the UserError it threw —
// and whether the VM agrees, running `e` as the body of a parameterless @main of a copy of `m`.
struct BothEvaluated {
  Value value;
  std::exception_ptr error;
  Check vm;
};

inline BothEvaluated evaluate_on_both(const Module &m, const Expr &e) {
  BothEvaluated out;
  Outcome interp;
  try {
    interp.value = out.value = evaluate(m, e);
  } catch (const UserError &error) {
    interp.error = first_line(error.what());
    out.error = std::current_exception();
  }
  Prepared p{m, {}};
  p.module.add_function("main", Function::make({}, e));
  infer_types(p.module);
  out.vm = compare(interp, run_on_vm(p, VMKernels::Interpreter));
  return out;
}

}  // namespace grove::relay::testing
