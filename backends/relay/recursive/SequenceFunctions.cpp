#include "backends/relay/recursive/SequenceFunctions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "backends/relay/recursive/RecursiveFunctions.h"
#include "backends/relay/recursive/SequenceToDsl.h"
#include "frontend/dsl/Printer.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// The translation of the recognised fold `form` for the weights (their count and types checked
// first) and steps of `element_length`; a Reject is the user's error.
tree_to_dsl::SequenceTranslation translate_or_throw(const Module &m, const std::string &name,
                                                    const RecursiveForm &form,
                                                    const std::vector<NDArray> &weights,
                                                    int64_t element_length) {
  const Function &fn = *m.find_function(name)->as<Function>();
  check_weights_fit(fn, name, form, weights);
  std::vector<Shape> shapes;
  for (const NDArray &w : weights) shapes.push_back(w.shape());
  try {
    return tree_to_dsl::translate_sequence(m, name, form, &shapes, element_length);
  } catch (const tree_to_dsl::Reject &r) {
    cannot_compile_recursively(name, {r.why, r.span.defined() ? r.span : fn.span});
  }
}

// The tensors of a state value (one tensor, or a tuple of them), or nothing when it is another value.
std::optional<std::vector<const NDArray *>> state_tensors(const Value &state) {
  std::vector<const NDArray *> out;
  if (const auto *t = state ? state->as<TensorValue>() : nullptr) {
    out.push_back(&t->data);
    return out;
  }
  const auto *tuple = state ? state->as<TupleValue>() : nullptr;
  if (!tuple) return std::nullopt;
  for (const Value &f : tuple->fields) {
    const auto *t = f ? f->as<TensorValue>() : nullptr;
    if (!t) return std::nullopt;
    out.push_back(&t->data);
  }
  return out;
}

bool all_zero(const NDArray &a) {
  const float *p = a.data<float>();
  return std::all_of(p, p + a.size(), [](float x) { return x == 0.0f; });
}

}  // namespace

// 1. Walk the list: every step a float32 tensor of the first step's shape, rank 1 or 2. 2. The state:
// float32 tensors of that rank, with the steps' rows, all zero.
std::optional<SequenceCall> sequence_call(const Value &list, const Value &state, int cons_tag) {
  SequenceCall call;
  for (Value v = list;;) {
    const auto *adt = v ? v->as<ADTValue>() : nullptr;
    if (!adt) return std::nullopt;
    if (adt->tag != cons_tag) break;
    GROVE_CHECK(adt->fields.size() == 2, "a Cons without two fields");
    const auto *t = adt->fields[0] ? adt->fields[0]->as<TensorValue>() : nullptr;
    if (!t || t->data.dtype() != DType::Float32 || (t->data.ndim() != 1 && t->data.ndim() != 2))
      return std::nullopt;
    if (!call.steps.empty() && t->data.shape() != call.steps[0].shape()) return std::nullopt;
    call.steps.push_back(t->data);
    v = adt->fields[1];
  }
  if (call.steps.empty()) return std::nullopt;
  const Shape &shape = call.steps[0].shape();
  call.rank = static_cast<int>(shape.size());
  call.rows = call.rank == 2 ? shape[0] : 1;
  call.length = shape.back();
  // Tokens are int32 row numbers of the table.
  if (call.rows < 1 || call.length < 1 ||
      call.rows * static_cast<int64_t>(call.steps.size()) > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  auto tensors = state_tensors(state);
  if (!tensors) return std::nullopt;
  for (const NDArray *t : *tensors) {
    if (t->dtype() != DType::Float32 || t->ndim() != call.rank ||
        (call.rank == 2 && t->shape()[0] != call.rows) || !all_zero(*t))
      return std::nullopt;
    call.state_lengths.push_back(t->shape().back());
  }
  return call;
}

dsl::ModelAst sequence_function_model(const Module &m, const std::string &name, const RecursiveForm &form,
                                      const std::vector<NDArray> &weights, int64_t element_length) {
  return std::move(translate_or_throw(m, name, form, weights, element_length).model);
}

std::string sequence_function_model_text(const Module &m, const std::string &name,
                                         const std::vector<NDArray> &weights, int64_t element_length) {
  return dsl::print_model(
      sequence_function_model(m, name, recursive_form_or_throw(m, name), weights, element_length));
}

std::shared_ptr<CompiledSequenceFunction> CompiledSequenceFunction::compile(
    const Module &m, const std::string &name, const std::vector<Value> &weights, int64_t element_length,
    int64_t capacity, const cpu::CompileOptions &options) {
  return compile(m, name, recursive_form_or_throw(m, name), weights, element_length, capacity, options);
}

// 1. Translate for the weights' shapes. 2. Parse the model text with the model language's front
// end. 3. Compile it with the weights and a zero table of `capacity` rows, then bind views of this
// object's own copies, so that each call refills the table in place.
std::shared_ptr<CompiledSequenceFunction> CompiledSequenceFunction::compile(
    const Module &m, const std::string &name, const RecursiveForm &form, const std::vector<Value> &weights,
    int64_t element_length, int64_t capacity, const cpu::CompileOptions &options) {
  std::vector<NDArray> arrays = weight_arrays(name, weights);
  tree_to_dsl::SequenceTranslation t = translate_or_throw(m, name, form, arrays, element_length);
  std::shared_ptr<CompiledSequenceFunction> f(new CompiledSequenceFunction());
  f->text_ = dsl::print_model(t.model);
  ilir::Program program = lower_translated_model(m, name, std::move(t.model));
  f->weights_ = grove_weights(t.weights, arrays);
  f->table_ = Tensor({capacity, element_length});
  Weights all = f->weights_;
  all[t.table] = f->table_;
  f->model_ = std::make_unique<cpu::CompiledModel>(cpu::CompiledModel::compile(program, all, options));
  std::map<std::string, WeightView> views;
  for (const auto &[wname, tensor] : f->weights_) views[wname] = WeightView{tensor.data.data(), tensor.shape};
  views[t.table] = WeightView{f->table_.data.data(), f->table_.shape};
  f->model_->executor().bind(views, options.weights_file);
  f->length_ = element_length;
  f->capacity_ = capacity;
  f->state_lengths_ = std::move(t.state_lengths);
  f->tuple_state_ = t.tuple_state;
  return f;
}

bool CompiledSequenceFunction::fits(const SequenceCall &call) const {
  return call.length == length_ && call.rows * static_cast<int64_t>(call.steps.size()) <= capacity_;
}

bool CompiledSequenceFunction::fits(const std::vector<SequenceCall> &calls) const {
  int64_t rows = 0;
  for (const SequenceCall &call : calls) {
    if (call.length != length_) return false;
    rows += call.rows * static_cast<int64_t>(call.steps.size());
  }
  return rows <= capacity_;
}

std::optional<Value> CompiledSequenceFunction::run(const SequenceCall &call) const {
  std::optional<std::vector<Value>> states = run(std::vector<SequenceCall>{call});
  if (!states) return std::nullopt;
  return std::move(states->front());
}

// 1. Every call's state must have the lengths the step computes. 2. Fill the table, call after call:
// step t's row r of a call starting at row `base` is row base + t·R + r. 3. One batched run of every
// call's R sequences of its T tokens. 4. Cut each sequence's row of concatenated states into its
// call's state tensors, R rows each.
std::optional<std::vector<Value>> CompiledSequenceFunction::run(
    const std::vector<SequenceCall> &calls) const {
  GROVE_CHECK(fits(calls), "calls that do not fit the compiled sequence function");
  for (const SequenceCall &call : calls)
    if (call.state_lengths != state_lengths_) return std::nullopt;

  std::vector<std::vector<int32_t>> sequences;
  Tensor last;
  {
    std::lock_guard<std::mutex> lock(table_mutex_);
    int64_t base = 0;
    for (const SequenceCall &call : calls) {
      const int64_t rows = call.rows, steps = static_cast<int64_t>(call.steps.size());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int32_t> tokens(steps);
        for (int64_t s = 0; s < steps; ++s) tokens[s] = static_cast<int32_t>(base + s * rows + r);
        sequences.push_back(std::move(tokens));
      }
      for (int64_t s = 0; s < steps; ++s)
        std::memcpy(table_.data.data() + (base + s * rows) * length_, call.steps[s].data<float>(),
                    rows * length_ * sizeof(float));
      base += rows * steps;
    }
    last = model_->run_sequences(sequences, {});
  }
  const int64_t width = last.size() / static_cast<int64_t>(sequences.size());
  std::vector<Value> states;
  int64_t first = 0;  // the call's first sequence
  for (const SequenceCall &call : calls) {
    const int64_t rows = call.rows;
    std::vector<Value> fields;
    int64_t offset = 0;
    for (int64_t len : state_lengths_) {
      NDArray a(DType::Float32, call.rank == 2 ? Shape{rows, len} : Shape{len});
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(last.data.data() + (first + r) * width + offset, len, a.data<float>() + r * len);
      offset += len;
      fields.push_back(tensor_value(std::move(a)));
    }
    states.push_back(tuple_state_ ? tuple_value(std::move(fields)) : fields[0]);
    first += rows;
  }
  return states;
}

}  // namespace grove::relay
