#pragma once
// Whether a function of one list element's value can run once over every element at once: the VM
// compiler's test before it runs the rest of a mapped closure — an encoder's classifier — as one
// batched computation over the stacked results instead of once per element (VMCompiler.cpp).

#include <functional>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay::vm {

// The Primitive function a callee names (a variable bound to a fused kernel outside `body`), or null.
using KernelOf = std::function<const Function *(const Expr &callee)>;

// Whether `body`, an expression of `params` — one element's values, of `param_types`: tensors of
// shape [1, ...], maybe in tuples — computes each element's rows apart from every other's, so that
// evaluating it with each parameter bound to all N elements' values stacked along axis 0 ([N, ...])
// gives, in row i, element i's result.
// It holds when every value that depends on the parameters is typed [1, ...] and comes from lets, tuples,
// projections, and calls of
//   - elementwise and broadcasting operators without shape or axis attributes;
//   - nn.dense of rows by a weight that does not depend on them; nn.bias_add, nn.softmax,
//     nn.layer_norm, split and concatenate (of rows only) along an axis other than 0;
//     sum, mean, max and argmax over axes other than 0;
//   - fused kernels (let-bound in `body`, or named by `kernel_of`) whose bodies hold the same;
// values that do not depend on them (weights, constants, what is computed from them) are free.
bool computes_rows_apart(const std::vector<Expr> &params, const std::vector<Type> &param_types,
                         const Expr &body, const KernelOf &kernel_of);

}  // namespace grove::relay::vm
