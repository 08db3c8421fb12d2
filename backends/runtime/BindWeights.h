#pragma once
// Checking a weight file against a model and binding the model's size variables (H, D, V, ...).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ilir/IR.h"
#include "support/Tensor.h"

namespace grove {

// Checks `weights` (read from `weights_file`, named in messages) against `program`'s Param tensors
// and returns the value of every size variable. Assumes param shapes are built from IntImm, size
// Vars, +, - and *. Guarantees every param is present with exactly its expected shape, and no
// tensor is extra but training state (is_training_state); otherwise throws a UserError naming the
// tensor, the expected and found shapes.
std::map<std::string, int64_t> bind_weights(const ilir::Program &program, const Weights &weights,
                                            const std::string &weights_file);

// Whether `name` is a training checkpoint's tensor that is no model parameter: the classifier head's
// (`head.*`) or the optimizer's and trainer's state (`optimizer.*`), training/Checkpoint.h. The weight
// checks (here and the Executor's) skip them, so `grove run --weights ckpt.safetensors` takes a
// checkpoint of `grove train` unchanged; model parameters are identifiers, never dotted.
bool is_training_state(std::string_view name);

// A size expression as messages show it: "3H", "2H", "H", "H + 1", "3(H + 1)", "H*D".
std::string size_expr_string(const ilir::Expr &e);

}  // namespace grove
