// grove's recursive compiler as an external code generator. It claims whole global functions — the
// recursive forms of backends/relay/recursive/Recognition.h — rather than dataflow regions:
// annotate_target marks such a function Compiler="grove", and the VM compiler's claim pass
// (recursive/ClaimRecursive.h) outlines every call of one from outside, and every `@map` of one over
// a list, as an external function with Compiler="grove". This file prepares those for the VM
// (prepare_function): the VM calls one with InvokeExternal, and it runs as one batched call of the
// model grove compiles from the recursive function (compiled on first use, again whenever the
// weights differ). A fold over a sequence that grove does not take (SequenceFunctions.h) is declined,
// and the VM runs the claimed function's body. Its values are trees and lists, not tensors, so it
// has no KernelCompiler.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "backends/relay/byoc/Codegen.h"
#include "backends/relay/recursive/ClaimRecursive.h"
#include "backends/relay/recursive/Recognition.h"
#include "backends/relay/recursive/RecursiveFunctions.h"
#include "backends/relay/recursive/SequenceFunctions.h"
#include "frontend/relay/Interpreter.h"
#include "support/Error.h"

namespace grove::relay {

namespace {

namespace msg {
inline constexpr char kNotAClaim[] =
    "its body is neither a call of a recursive function on its parameters nor @map of such calls over "
    "its first parameter";
inline constexpr char kNotAList[] = "the list of trees holds {}, not a List";
}  // namespace msg

ExternalTarget grove_target() {
  ExternalTarget t;
  t.name = kGroveCompiler;
  t.claims_function = [](const Module &module, const std::string &global) {
    return recognize_recursive(module, global).qualifies();
  };
  return t;
}

// Whether `a` and `b` hold the same tensors: the same storage (tensors are never written in place
// once a register holds them outside the memory plan), else equal bits.
bool same_weights(const std::vector<Value> &a, const std::vector<Value> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto *x = a[i] ? a[i]->as<TensorValue>() : nullptr;
    const auto *y = b[i] ? b[i]->as<TensorValue>() : nullptr;
    if (x == nullptr || y == nullptr) return false;
    if (x->data.dtype() != y->data.dtype() || x->data.shape() != y->data.shape()) return false;
    if (x->data.raw() != y->data.raw() && !x->data.bitwise_equal(y->data)) return false;
  }
  return true;
}

Value projected(Value v, const std::vector<int> &path) {
  for (int i : path) {
    const auto *tuple = v->as<TupleValue>();
    GROVE_CHECK(tuple != nullptr && i < static_cast<int>(tuple->fields.size()), "field {} of {}", i,
                describe_value(v));
    v = tuple->fields[i];
  }
  return v;
}

// One recursive function a claimed function calls, with what it was compiled for.
struct Encoder {
  ClaimedEncoder call;
  RecursiveForm form;
  std::vector<Value> weights;  // held, so their storage cannot be reused while cached
  std::shared_ptr<CompiledRecursiveFunction> tree;
  std::shared_ptr<CompiledSequenceFunction> sequence;
};

class GroveFunction : public ExternalFunction {
 public:
  GroveFunction(Module m, ClaimedFunction claimed, std::vector<RecursiveForm> forms,
                const ExternalFunctionOptions &options)
      : m_(std::move(m)), over_list_(claimed.over_list) {
    if (options.threads > 0) options_.schedule = fmt::format("threads={}", options.threads);
    for (size_t i = 0; i < forms.size(); ++i)
      encoders_.push_back(Encoder{claimed.encoders[i], forms[i], {}, {}, {}});
    if (over_list_) {
      // The module's own nodes, so the List built equals the one the interpreter builds.
      cons_ = *m_.find_constructor(claimed.cons);
      nil_ = *m_.find_constructor(claimed.nil);
    }
  }

  std::optional<Value> run(const std::vector<Value> &args) override {
    if (!over_list_) return run_direct(encoders_[0], args);
    std::optional<std::vector<Value>> elements = list_elements(args[0], cons_.as<Constructor>()->tag);
    if (!elements) user_error(msg::kNotAList, args[0] ? value_to_string(args[0]) : "nothing");
    // @map over an empty list calls the function on no tree: as in the interpreter, nothing is
    // compiled and the weights are not looked at.
    if (elements->empty()) return args[0];
    std::vector<std::vector<Value>> results;
    for (Encoder &enc : encoders_) {
      std::vector<Value> items;
      for (const Value &e : *elements) items.push_back(projected(e, enc.call.path));
      std::optional<std::vector<Value>> r = run_over(enc, args, items);
      if (!r) return std::nullopt;
      results.push_back(std::move(*r));
    }
    if (results.size() == 1) return list_of(cons_, nil_, std::move(results[0]));
    std::vector<Value> tuples;
    for (size_t i = 0; i < elements->size(); ++i) {
      std::vector<Value> fields;
      for (const std::vector<Value> &r : results) fields.push_back(r[i]);
      tuples.push_back(tuple_value(std::move(fields)));
    }
    return list_of(cons_, nil_, std::move(tuples));
  }

 private:
  // The arguments the encoder's call passes through: every one but the tree (or list) and a fold's
  // state, in parameter order.
  std::vector<Value> weights_of(const Encoder &enc, const std::vector<Value> &args) const {
    std::vector<Value> weights;
    for (size_t i = 0; i < enc.call.args.size(); ++i)
      if (static_cast<int>(i) != enc.form.tree_param && static_cast<int>(i) != enc.form.state_param)
        weights.push_back(args[enc.call.args[i]]);
    return weights;
  }

  const CompiledRecursiveFunction &tree_function(Encoder &enc, std::vector<Value> weights) {
    if (enc.tree == nullptr || !same_weights(enc.weights, weights)) {
      enc.tree = std::make_shared<CompiledRecursiveFunction>(
          CompiledRecursiveFunction::compile(m_, enc.call.function, enc.form, weights, options_));
      enc.weights = std::move(weights);
      ++compiles_;
    }
    return *enc.tree;
  }

  // Compiled again when the weights, the step length or the room for the rows changed (the room
  // doubles, so that growing lists recompile rarely).
  const CompiledSequenceFunction &sequence_function(Encoder &enc, std::vector<Value> weights,
                                                    const std::vector<SequenceCall> &calls) {
    const bool same = enc.sequence != nullptr && same_weights(enc.weights, weights);
    if (!same || !enc.sequence->fits(calls)) {
      int64_t rows = 0;
      for (const SequenceCall &call : calls) rows += call.rows * static_cast<int64_t>(call.steps.size());
      const int64_t length = calls.front().length;
      if (same && length == enc.sequence->length()) rows = std::max(rows, 2 * enc.sequence->capacity());
      enc.sequence =
          CompiledSequenceFunction::compile(m_, enc.call.function, enc.form, weights, length, rows, options_);
      enc.weights = std::move(weights);
      ++compiles_;
    }
    return *enc.sequence;
  }

  // A direct call: its arguments are the claimed function's parameters (ClaimRecursive.h).
  std::optional<Value> run_direct(Encoder &enc, const std::vector<Value> &args) {
    const Value &tree = args[enc.call.args[enc.form.tree_param]];
    if (!enc.form.sequence()) {
      std::vector<Value> out = tree_function(enc, weights_of(enc, args)).run({tree});
      ++runs_;
      return out[0];
    }
    std::optional<SequenceCall> call =
        sequence_call(tree, args[enc.call.args[enc.form.state_param]], enc.form.list_cons_tag);
    if (!call) return std::nullopt;
    std::vector<SequenceCall> calls{std::move(*call)};
    std::optional<std::vector<Value>> result =
        sequence_function(enc, weights_of(enc, args), calls).run(calls);
    if (!result) return std::nullopt;
    ++runs_;
    return std::move(result->front());
  }

  // The encoder over the list's elements (`items`, projected): one batched run. A fold's calls each
  // start from the same state (SequenceFunctions.h: all zero) with steps of one length; nullopt where
  // any does not.
  std::optional<std::vector<Value>> run_over(Encoder &enc, const std::vector<Value> &args,
                                             const std::vector<Value> &items) {
    if (!enc.form.sequence()) {
      std::vector<Value> out = tree_function(enc, weights_of(enc, args)).run(items);
      ++runs_;
      return out;
    }
    const Value &state = args[enc.call.args[enc.form.state_param]];
    std::vector<SequenceCall> calls;
    for (const Value &sequence : items) {
      std::optional<SequenceCall> call = sequence_call(sequence, state, enc.form.list_cons_tag);
      if (!call || (!calls.empty() && call->length != calls.front().length)) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    std::optional<std::vector<Value>> states =
        sequence_function(enc, weights_of(enc, args), calls).run(calls);
    if (!states) return std::nullopt;
    ++runs_;
    return states;
  }

  Module m_;
  bool over_list_;
  Expr cons_, nil_;
  cpu::CompileOptions options_;
  std::vector<Encoder> encoders_;
};

// 1. Read what the claimed function runs (ClaimRecursive.h). 2. Each recursive function it calls is
// a recursive form. 3. The description, and how to make it for one VM.
PreparedFunction prepare_grove_function(const Module &typed, const std::string &global) {
  const auto *fn = typed.find_function(global)->as<Function>();
  std::optional<ClaimedFunction> claimed = read_claimed(typed, global);
  if (!claimed) grove_cannot_compile(fn->span, global, msg::kNotAClaim);
  std::vector<RecursiveForm> forms;
  std::string names;
  bool fold = false;
  for (const ClaimedEncoder &enc : claimed->encoders) {
    Recognition r = recognize_recursive(typed, enc.function);
    if (!r.qualifies()) grove_cannot_compile(fn->span, global, r.rejection.reason);
    fold = fold || r.form->sequence();
    forms.push_back(std::move(*r.form));
    names += fmt::format("{}@{}", names.empty() ? "" : ", ", enc.function);
  }
  PreparedFunction out;
  out.description =
      fmt::format("{}{} (grove recursive compiler{})", names, claimed->over_list ? " over a List" : "",
                  fold ? fmt::format("; a fold over a sequence, else @{}'s body", global) : "");
  out.make = [typed, claimed = *claimed, forms](const ExternalFunctionOptions &options) {
    return std::unique_ptr<ExternalFunction>(new GroveFunction(typed, claimed, forms, options));
  };
  return out;
}

}  // namespace

Codegen grove_codegen() {
  Codegen c{kGroveCompiler,
            "grove's recursive compiler: recursive functions over trees, one batched call per list",
            grove_target, nullptr};
  c.prepare_function = prepare_grove_function;
  return c;
}

}  // namespace grove::relay
