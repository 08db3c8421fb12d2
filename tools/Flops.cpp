#include "tools/Flops.h"

#include <vector>

#include "backends/runtime/RandomWeights.h"
#include "support/Error.h"

namespace grove::tool {

namespace {

// A cost that may grow with the node's number of children: fixed + per_child · children.
struct Cost {
  double fixed = 0, per_child = 0;
};

// The cost of one evaluation of `e`. Iterative over Sums (the only nodes that cost anything are
// nested through them); other nodes are walked with an explicit stack too, since value
// expressions can be long chains of Binary nodes.
Cost expr_cost(const ilir::Expr &root, const std::map<std::string, int64_t> &sizes) {
  struct Item {
    ilir::Expr e;
    double times;  // evaluations of e per element
    bool ragged;   // inside a Sum over the children: `times` is per child
  };
  Cost cost;
  std::vector<Item> stack{{root, 1.0, false}};
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    const ilir::ExprNode *node = item.e.get();
    if (node == nullptr) continue;
    auto push = [&](const ilir::Expr &e) { stack.push_back({e, item.times, item.ragged}); };
    switch (node->kind) {
      case ilir::ExprKind::FloatImm:
      case ilir::ExprKind::IntImm:
      case ilir::ExprKind::Var:
      case ilir::ExprKind::StructCall:
        break;
      case ilir::ExprKind::Binary: {
        const auto *b = item.e.as<ilir::Binary>();
        push(b->a);
        push(b->b);
        break;
      }
      case ilir::ExprKind::Unary:
        push(item.e.as<ilir::Unary>()->a);
        break;
      case ilir::ExprKind::Select: {
        const auto *s = item.e.as<ilir::Select>();
        push(s->cond);
        push(s->t);
        push(s->f);
        break;
      }
      case ilir::ExprKind::Load:
        for (const ilir::Expr &i : item.e.as<ilir::Load>()->indices) push(i);
        break;
      case ilir::ExprKind::Sum: {
        const auto *s = item.e.as<ilir::Sum>();
        const auto *call = s->extent.as<ilir::StructCall>();
        if (call != nullptr) {
          GROVE_CHECK(call->fn == ilir::StructFn::NumChildren && !item.ragged,
                      "flops: unexpected ragged Sum over {}", s->var);
          stack.push_back({s->body, item.times, true});
          break;
        }
        double extent = double(ilir::eval_size(s->extent, sizes));
        (item.ragged ? cost.per_child : cost.fixed) += 2.0 * extent * item.times;
        stack.push_back({s->body, item.times * extent, item.ragged});
        break;
      }
    }
  }
  return cost;
}

Cost case_cost(const ilir::Program &program, const ilir::Case &c,
               const std::map<std::string, int64_t> &sizes) {
  Cost total;
  for (const ilir::Compute &compute : c.body) {
    double elements = 1;
    for (const ilir::Expr &d : program.get(compute.tensor).shape)
      elements *= double(ilir::eval_size(d, sizes));
    Cost one = expr_cost(compute.value, sizes);
    total.fixed += elements * one.fixed;
    total.per_child += elements * one.per_child;
  }
  return total;
}

}  // namespace

NodeFlops node_flops(const ilir::Program &program, const std::map<std::string, int64_t> &sizes) {
  Cost leaf = case_cost(program, program.leaf, sizes);
  Cost internal = case_cost(program, program.internal, sizes);
  GROVE_CHECK(leaf.per_child == 0, "flops: a leaf of {} reduces over its children", program.name);
  return {.leaf = leaf.fixed, .internal = internal.fixed, .internal_per_child = internal.per_child};
}

double trees_flops(const NodeFlops &flops, std::span<const Tree> trees) {
  double total = 0;
  for (const Tree &tree : trees)
    for (int32_t n = 0; n < tree.size(); ++n) total += flops.of_node(tree.num_children(n));
  return total;
}

double inputs_flops(const NodeFlops &flops, const Inputs &inputs) {
  double nodes = 0;
  for (const Dag &d : inputs.dags) nodes += d.size();
  for (const std::vector<int32_t> &s : inputs.sequences) nodes += double(s.size());
  return trees_flops(flops, inputs.trees) + nodes * flops.leaf;
}

}  // namespace grove::tool
