#pragma once
// Shared by the lowering's loop builders (LowerToLoops.cpp, GemmKernel.cpp); not a public header.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Halide.h"
#include "ilir/IR.h"
#include "lowering/LowerToLoops.h"

namespace grove::lowering::internal {

namespace HI = Halide::Internal;
using HExpr = Halide::Expr;
using HI::Stmt;

HExpr var(const std::string &name);
// Whether `e` mentions a variable named `name`.
bool mentions(const ilir::Expr &e, const std::string &name);
// `e`'s value if it simplifies to a constant.
std::optional<int64_t> constant(const HExpr &e);
HExpr load(Halide::Type t, const std::string &buffer, HExpr index, bool is_argument);
Stmt store(const std::string &buffer, HExpr value, HExpr index, bool is_argument);
HExpr int_load(const char *array, HExpr index);

// The pieces [cuts[i], cuts[i+1]) into which the conditions on `var` in `body` divide the constant
// range [min, min + extent); empty if the range is not constant.
std::vector<int64_t> split_points(const std::string &var, const HExpr &min, const HExpr &extent,
                                  const Stmt &body);

// for var in [min, min + extent): body — as one loop per piece between the split points that the
// body's conditions on `var` imply (concatenations and slices), so that Halide's simplifier,
// knowing each piece's bounds, removes every select on `var`.
Stmt partitioned_for(const std::string &var, HExpr min, HExpr extent, Stmt body, HI::ForType type);

// As partitioned_for, with each piece whose bounds are multiples of `lanes` split into an outer
// serial loop and an inner vectorized loop of `lanes` iterations.
Stmt vectorized_for(const std::string &var, HExpr extent, Stmt body, int lanes);

// One thread of the team that runs a whole recursion in one parallel region (schedule `region`).
//
// A stage (one loop of a level) is cut into chunks; each thread first claims the chunks of its home
// range (the same range at every level: with persistence, the same weight panels stay in its
// cache), then steals what is left of the others', and waits until every chunk of the stage is
// finished before the next stage (names::kStageClaim / kStageFinish / kStageWait). A thread that
// the OS deschedules delays the team only by a chunk it holds, never by work it has not started;
// and a thread that starts late finds its stages done and catches up, so the region needs no
// minimum number of pool threads. Every thread numbers the stages it passes with its own counter
// (`stage_seq`, a stack array of the thread), the same sequence on all threads.
struct Team {
  Team(HExpr thread, int threads) : tid(std::move(thread)), size(threads) {}
  HExpr tid;
  int size = 1;
  // for var in [min, min + extent): body, as one stage of the team: one chunk per iteration, or
  // with `chunks_per_thread` > 0, min(extent, chunks_per_thread × size) chunks of consecutive
  // iterations.
  Stmt share(const std::string &var, const HExpr &min, const HExpr &extent, Stmt body,
             int chunks_per_thread = 0) const;
  // Recursive unrolling's static ownership needs a plain barrier: every thread waits until all have
  // arrived (names::kBarrierWait).
  Stmt barrier() const;
  // The team's state (stack array of the function, zeroed): `state_ints(size)` int32s.
  static constexpr const char *kBarrierState = "barrier_state";
  static int state_ints(int size) { return (size + 2) * 16 + 16; }
  // The per-thread stage counter: declare it around the thread's body.
  static constexpr const char *kStageSeq = "stage_seq";
  Stmt with_stage_counter(Stmt body) const;

 private:
  mutable int stages_ = 0;  // names each stage's lets apart
};

// Where the tensors of one node live while a case runs: states in node-indexed argument buffers;
// temps either per node (a small local buffer) or per level (indexed by n - level_begin).
enum class TempStorage { PerNode, PerLevel };

class TensorAccess {
 public:
  TensorAccess(const ilir::Program &p, const std::map<std::string, int64_t> &sizes, TempStorage temps)
      : p_(p), sizes_(sizes), temps_(temps) {}

  const ilir::Program &program() const { return p_; }
  HExpr size(const ilir::Expr &e) const;  // a size expression; unbound size variables stay symbolic
  HExpr size_var(const std::string &name) const;
  HExpr numel(const ilir::TensorDecl &t) const;
  HExpr offset(const ilir::TensorDecl &t, const std::vector<HExpr> &indices) const;  // row-major
  HExpr address(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices) const;
  HExpr load(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices) const;
  Stmt store(const ilir::TensorDecl &t, const HExpr &node, const std::vector<HExpr> &indices,
             HExpr value) const;
  std::string buffer(const ilir::TensorDecl &t) const;
  bool is_argument(const ilir::TensorDecl &t) const { return t.kind != ilir::TensorKind::Temp; }

 private:
  const ilir::Program &p_;
  const std::map<std::string, int64_t> &sizes_;
  TempStorage temps_;
};

// The Halide value of an ILIR expression. Each Sum becomes an accumulator loop appended to
// `prelude` (its accumulator's name to `accumulators`), and its value a load of the accumulator;
// a Sum found in `replace` becomes the given expression instead.
class ExprLowering {
 public:
  ExprLowering(const TensorAccess &access, std::vector<Stmt> *prelude, std::vector<std::string> *accumulators,
               std::map<const ilir::ExprNode *, HExpr> replace = {})
      : access_(access), prelude_(prelude), accumulators_(accumulators), replace_(std::move(replace)) {}
  HExpr lower(const ilir::Expr &e);

 private:
  friend class ExprLowerer;
  const TensorAccess &access_;
  std::vector<Stmt> *prelude_;
  std::vector<std::string> *accumulators_;
  std::map<const ilir::ExprNode *, HExpr> replace_;
};

// A product Σ_k W[row + row_offset, k] · x with W a param whose columns the Sum runs over, and x
// free of the row variable and of Sums: one weight row per output row, an operand shared by all
// rows. Both the level GEMMs (row = j) and the per-node matmuls (row = i) are made of these.
struct WeightTerm {
  const ilir::Sum *sum;
  std::string param;
  int64_t row_offset = 0, cols = 0;
  ilir::Expr x;  // in n, sum->var and the other free indices
};

// Every outermost Sum of `value` as a WeightTerm in `row`, or nothing if one is not (or, without
// `selects_allowed`, if the value has a select outside its Sums).
std::optional<std::vector<WeightTerm>> match_weight_terms(const TensorAccess &access, const ilir::Expr &value,
                                                          const std::string &row, bool selects_allowed);

// One Compute for the current node `n`: its loop nest over the tensor's indices, the innermost
// vectorized by `lanes` where the extents allow (lanes = 1: scalar).
Stmt lower_compute(const TensorAccess &access, const ilir::Compute &op, int lanes);

}  // namespace grove::lowering::internal
