#pragma once
// Folds over sequences (RecursiveFunctions.h, SequenceToDsl.h) compiled by grove's recursive
// compiler: the VM hands a call `@f(%xs, %state, weights...)` to grove when
//   - the list is not empty and its steps are float32 tensors of one shape, [D] or [R, D], with
//     fewer than 2^31 rows in all (tokens are int32);
//   - the state's tensors have the steps' rank and (rank 2) R rows, and are all zero (grove's
//     sequence models start from zeros; a fold that starts elsewhere runs in the VM);
// and runs it itself otherwise. The R rows of a step are R sequences of one batched run: the row r
// of step t is token t·R + r of a table the compiled model reads its inputs from.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/relay/recursive/Recognition.h"
#include "frontend/dsl/AST.h"
#include "frontend/relay/IR.h"
#include "frontend/relay/Value.h"

namespace grove::relay {

// One call's list, read for grove: the steps in order, their rows and length.
struct SequenceCall {
  std::vector<NDArray> steps;
  int64_t rows = 1;                    // R (1 for [D] steps)
  int64_t length = 0;                  // D
  int rank = 1;                        // of a step: 1 or 2
  std::vector<int64_t> state_lengths;  // the last dimension of each of the state's tensors
};

// The call as grove runs it, or nullopt when the conditions above do not hold (the VM runs it).
// `cons_tag` is the list's Cons tag.
std::optional<SequenceCall> sequence_call(const Value &list, const Value &state, int cons_tag);

// The model (its syntax tree, unchecked) of the fold `name`, recognised as `form`, for the weights'
// shapes and steps of `element_length`.
dsl::ModelAst sequence_function_model(const Module &m, const std::string &name, const RecursiveForm &form,
                                      const std::vector<NDArray> &weights, int64_t element_length);
// The same recognised first, printed as model text (frontend/dsl/Printer.h).
std::string sequence_function_model_text(const Module &m, const std::string &name,
                                         const std::vector<NDArray> &weights, int64_t element_length);

class CompiledSequenceFunction {
 public:
  // Translates and compiles `@name` for these weights (the arguments other than the list and the
  // state, in parameter order), steps of `element_length`, and room for `capacity` rows (steps ×
  // rows) per call. UserError when it does not qualify or the weights do not fit.
  static std::shared_ptr<CompiledSequenceFunction> compile(const Module &m, const std::string &name,
                                                           const std::vector<Value> &weights,
                                                           int64_t element_length, int64_t capacity,
                                                           const cpu::CompileOptions &options = {});
  // The same for a fold already recognised as `form`.
  static std::shared_ptr<CompiledSequenceFunction> compile(const Module &m, const std::string &name,
                                                           const RecursiveForm &form,
                                                           const std::vector<Value> &weights,
                                                           int64_t element_length, int64_t capacity,
                                                           const cpu::CompileOptions &options = {});

  // Whether `call` fits what was compiled (its step length, and its rows within the capacity).
  bool fits(const SequenceCall &call) const;
  // Whether the calls fit as one run: each its step length, their rows (steps × rows) within the capacity.
  bool fits(const std::vector<SequenceCall> &calls) const;
  int64_t capacity() const { return capacity_; }
  int64_t length() const { return length_; }
  // The fold's result for `call` (which fits): the state after the last step, shaped as the state.
  // Nullopt when the state's tensors do not have the lengths the step computes (the VM then runs the
  // call and reports the mismatch as it would).
  std::optional<Value> run(const SequenceCall &call) const;
  // Several calls (which fit) in one batched run — the folds of `@map` over a list of sequences, of
  // any lengths: each call's state after its last step. Nullopt as above, when any call's state does
  // not have the lengths the step computes.
  std::optional<std::vector<Value>> run(const std::vector<SequenceCall> &calls) const;

  // The model it was compiled from, printed (frontend/dsl/Printer.h): for people, never parsed.
  const std::string &model_text() const { return text_; }

 private:
  CompiledSequenceFunction() = default;
  std::string text_;
  int64_t length_ = 0, capacity_ = 0;
  std::vector<int64_t> state_lengths_;
  bool tuple_state_ = false;
  std::unique_ptr<cpu::CompiledModel> model_;
  // The weights and the table the model reads, bound as views: each call refills the table in place.
  Weights weights_;
  mutable Tensor table_;
  mutable std::mutex table_mutex_;  // one call at a time fills the table and runs
};

}  // namespace grove::relay
