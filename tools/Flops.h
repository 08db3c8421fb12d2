#pragma once
// FLOP counts of a model, for GFLOP/s figures and the FLOP limit (FLOPs ÷ a measured peak). The
// convention is experiments/peers/flops.py's: 2·M·K per product of an [M, K] matrix with a vector,
// per node; elementwise work (gates, sums of children, the embedding lookup) counts nothing.

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "datasets/Tree.h"
#include "ilir/IR.h"
#include "tools/Inputs.h"

namespace grove::tool {

// FLOPs of one node: a leaf, or an internal node with `children` children.
struct NodeFlops {
  double leaf = 0;
  double internal = 0;            // independent of the number of children
  double internal_per_child = 0;  // ragged reductions over the children (child-sum models)

  double of_node(int32_t children) const {
    return children == 0 ? leaf : internal + internal_per_child * children;
  }
};

// Counts `program`'s FLOPs per node with its size variables bound to `sizes`:
//   1. every Compute contributes (its tensor's element count) × (the FLOPs of one element);
//   2. in one element, `Sum(k, K, body)` with a size extent K costs 2·K plus K times body's cost
//      (a multiply and an add per term: the matrix–vector convention);
//   3. `Sum(k, num_children(n), body)` costs body's cost once per child and nothing of its own
//      (adding up children is elementwise work);
//   4. everything else costs nothing.
// A ragged Sum inside another ragged Sum is an internal error (no model has one).
NodeFlops node_flops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes);

// The FLOPs of running the model over `trees`.
double trees_flops(const NodeFlops &flops, std::span<const Tree> trees);

// The FLOPs of running the model over `inputs`: trees as above; every node of a DAG, grid or
// sequence runs the model's one node case (its leaf and internal cases are the same).
double inputs_flops(const NodeFlops &flops, const Inputs &inputs);

}  // namespace grove::tool
