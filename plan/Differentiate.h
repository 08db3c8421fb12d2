#pragma once
// Reverse-mode differentiation of a tree model's ILIR: the program a training step runs after the
// forward, derived from the forward's Computes. Each case's body is straight-line, so its adjoint
// is the body differentiated operation by operation in reverse order; the recursion is reversed
// structurally — a top-down program (ilir/IR.h) whose nodes run after their parents and read what
// the parent computed for their child slot.
//
// Two programs come out:
//
//   * `forward` — the model as it runs in training: every value the backward reads kept per node
//     (each temp becomes a state; a state one case does not define is zero there), and every Compute
//     whose weight products sit under a nonlinearity split in two, `t_pre = Σ W x + b` and
//     `t = f(t_pre)`, so that the backward can differentiate f at the saved t_pre.
//   * `backward` — top down; its Saved tensors are the forward's states (same names), and one more,
//     `seed`, d(loss)/d(output) at every node. For each forward Compute `t = V` of a case it computes
//     the adjoint `d_t` (node-indexed) from the adjoints of what reads t: elementwise terms, and for a
//     product Σ_k W[i + c, k] · x(n, k) in V, the level GEMM Σ_r W_T[q, r] · d_t[n, r] with W_T a
//     transposed block of W (`transposed`, filled by the runtime from the weights). A state read by
//     the parent at child(n, k) gets its adjoint's share in `d_t_at<k>` at the parent, which the child
//     reads at parent(n) when child_slot(n) = k. Weight gradients are reductions over every node of a
//     case (`grad_W[i, k] += Σ_n d_t[n, i - c] · x(n, k)`): one GEMM over the batch, not per level.
//     A table read at a leaf's token (the embedding) gets a per-node row gradient (`rows`), which
//     the runtime sums per token.
//   Then both are arranged for the planner, which keeps program order: in the forward, a state that
//   only gathers values (TreeLSTM's s) is read through its definition and computed last, and the
//   weight products move up together (one GEMM group per level); in the backward, a share that only
//   gathers the parent's own values (d_t_at<k> = a slice of the GEMM result) is read through its
//   definition at parent(n), the result kept per node, and the other computes move up before the
//   weight products they are independent of (TreeLSTM: two stages per level either way).
//
// Trees of any arity: hoist_child_terms first moves a ragged sum's per-child products to the child
// (child-sum TreeLSTM's forget gates); what is left of Σ_{k < num_children(n)} B is elementwise, and
// each child takes its share of B's adjoint itself, reading its parent's adjoint at parent(n) (a tree
// child has one parent: nothing is scattered).
//
// What it takes: every model of models/ — trees, DAGs and sequences; Computes over any number of
// indices (MV-RNN's matrices per node); weight products of a param row block and an operand (level
// GEMMs or per-node matrix products with the transposed block); other sums of products of the node's
// tensors term by term (an index no load binds becomes a sum in the adjoint); elementwise +, -, *, /
// and the model language's functions; ragged sums of the children's states. Anything else (a weight
// product under a product, a subtracted one, a sum inside a sum) is a UserError naming the model and
// the Compute.

#include <string>
#include <vector>

#include "ilir/IR.h"

namespace grove::plan {

// A backward param filled with the transpose of rows [row_offset, row_offset + rows) of `param`:
// name[k, r] = param[row_offset + r, k].
struct TransposedWeight {
  std::string name, param;
  ilir::Expr row_offset, rows;  // size expressions
};

// A backward state whose row at node n is d(loss)/d(param[token(n), ·]) for leaf n.
struct RowGradient {
  std::string state, param;
};

struct Derivative {
  ilir::Program forward;
  ilir::Program backward;
  std::string seed;                          // the Saved tensor d(loss)/d(output) per node
  std::vector<std::string> saved;            // the backward's Saved tensors from the forward's states
  std::vector<TransposedWeight> transposed;  // backward params the runtime fills
  std::vector<std::pair<std::string, std::string>> gradients;  // (param, its Gradient tensor)
  std::vector<RowGradient> rows;
};

// Differentiates a verified bottom-up program as the DSL front end lowers it (before the ILIR
// passes). UserError when the model is outside what it takes (see above).
Derivative differentiate(const ilir::Program &program);

}  // namespace grove::plan
