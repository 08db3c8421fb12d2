#pragma once
// The level plan: what each case of a program computes, stage by stage, recognised once from the
// ILIR and handed to a target's emitter. It says *what* runs — level GEMMs, per-node matrix
// products, node loops — with iteration spaces, operands, packed weight layouts and epilogues, and
// how the recursion is ordered (by node or by height level, one parallel region of a team or not);
// it says nothing about registers, vector instructions or thread blocks. The CPU emitter
// (lowering/cpu/LowerToLoops) maps it to a Halide loop nest; nothing after plan_levels() looks at the
// ILIR to decide what a Compute is.
//
// What the plan guarantees (checked by plan_levels):
//   * every Compute of every case appears in exactly one stage of its case (a GemmGroup's column
//     steps after its GEMMs), in program order relative to every Compute it reads or is read by;
//   * a GemmGroup's GEMMs do not read each other's results, and each GEMM's epilogue cuts ascend
//     from 0 to its rows;
//   * each WeightTerm of a GEMM names a packed weight whose rows are exactly the term's rows;
//   * `abi` lists every argument the entry function takes, in call order, and every packed weight's
//     layout (PackedWeight), the one definition the emitter indexes and the runtime fills.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "abi/ModelAbi.h"
#include "ilir/IR.h"
#include "scheduling/Schedule.h"

namespace grove::plan {

// A product Σ_k param[row + row_offset, k] · x inside a Compute's value, with `row` the Compute's
// row index (i0): one weight row per output row and an operand x shared by all rows. Level GEMMs
// and per-node matrix products are made of these.
struct WeightTerm {
  const ilir::Sum *sum = nullptr;  // the Sum in the Compute's value (alive as long as the plan)
  std::string param;
  int64_t row_offset = 0, cols = 0;
  ilir::Expr x;     // in n, sum->var and the Compute's other indices
  int packed = -1;  // GEMM terms: index into LevelPlan::abi.packed
};

// A Compute t[n, j] over a level's nodes as one matrix–matrix product: rows j in panels of
// `panel`, every outermost Sum of its value a WeightTerm, the rest of the value (biases,
// activations, other loads) the epilogue, applied per output element. The epilogue's conditions
// on j change only at `epilogue_cuts` (0 and rows included, ascending). Any number of rows runs
// here: when rows is not a multiple of the panel, the last panel is partial (its packed weights
// are zero rows past `rows`, PackedWeight; the emitter computes it whole and stores only its valid
// rows), and a cut inside a panel splits that panel's epilogue (the emitter's concern).
struct Gemm {
  int compute = -1;  // index into the case's body
  int64_t rows = 0, panel = 0;
  std::vector<WeightTerm> terms;
  std::vector<int64_t> epilogue_cuts;
  int64_t panels() const { return (rows + panel - 1) / panel; }  // the last one may be partial
  // Whether every panel is whole and runs one branch of the epilogue (each cut a panel boundary).
  bool aligned() const;
};

// A Compute t[n, i, j] = E(Σ_k A[i + c, k] · X(n, k, j)) of one node as a blocked matrix product:
// `row_block` values of i × `col_block` values of j at a time, each X element feeding row_block
// products; when cols is not a multiple of col_block the last block is narrower. No conditions
// outside its Sums.
struct Matmul {
  int compute = -1;
  int64_t rows = 0, cols = 0;  // the extents of i and j
  int row_block = 0, col_block = 0;
  std::vector<WeightTerm> terms;
};

// A Compute of a node loop: a plain loop nest over its indices, or a per-node matrix product.
struct NodeStep {
  int compute = -1;
  std::optional<Matmul> matmul;
};

// One stage of a case, run over the nodes of a level (or of the whole batch, hoisted) before the
// next stage starts.
enum class StageKind {
  GemmGroup,  // independent level GEMMs sharing one loop over all their panels
  Matmuls,    // one per-node matrix product, over (node, row block) pairs
  NodeLoop,   // a loop over the nodes, running each step for a node in order
};

// A node loop run by columns inside the GemmGroup before it (plan/FuseColumns.h): the group's
// work is cut into `blocks` blocks of `width` columns of the steps. Block j computes, of each GEMM
// g of the group, the panels j + o for o in `panel_offsets[g]` (together, every panel of the group
// once; they hold every row that the steps read at columns [j·width, (j+1)·width)), and then the
// steps over the level's nodes at those columns only. A block is one chunk of the stage, so the
// thread that computed a block's rows is the one that reads them: no barrier between the GEMMs and
// the node loop.
struct ColumnSteps {
  int64_t width = 0, blocks = 0;
  std::vector<std::vector<int64_t>> panel_offsets;  // per GEMM of the group, ascending
  std::vector<NodeStep> steps;                      // loops over one index in [0, blocks · width)
};

struct Stage {
  StageKind kind = StageKind::NodeLoop;
  std::vector<Gemm> gemms;             // GemmGroup
  std::optional<Matmul> matmul;        // Matmuls
  std::vector<NodeStep> steps;         // NodeLoop
  std::optional<ColumnSteps> columns;  // GemmGroup: the node loop that followed it, by columns
};

struct CasePlan {
  ilir::CaseKind kind = ilir::CaseKind::Leaf;
  std::vector<Stage> stages;  // empty for an empty case
};

// How the recursion is ordered.
enum class Order {
  NodeByNode,  // batch=off: one node at a time in topological order; each case one NodeLoop stage
  ByLevel,     // batch=on: the nodes of one height level together
};

struct Recursion {
  Order order = Order::ByLevel;
  bool specialized = true;  // leaf and internal nodes in separate code (else one loop that branches)
  bool parallel = true;     // the nodes (panels) of a stage split among threads
  // The most threads any stage runs on: the schedule's `threads` (its team size), the model's own
  // whatever other models in the process ask for. A parallel dispatch is cut into at most this
  // many tasks, a team has this many threads, and with 1 every loop is serial.
  int threads = 1;
  int team = 0;    // > 0: the whole recursion in one parallel region of this many threads
  int unroll = 1;  // > 1: the team meets after every `unroll` levels (nodes owned per thread)
  // A top-down (backward) program: levels from the highest to the leaves (node by node, ids
  // descending), then its reductions; never unrolled.
  bool top_down = false;
};

struct LevelPlan {
  ilir::Program program;  // after the ILIR passes; the plan's stages index its cases
  std::map<std::string, int64_t> sizes;
  scheduling::Schedule schedule;  // the loop sizes the emitter maps to (vector, panel, node_block)
  Recursion recursion;
  CasePlan hoisted, leaf, internal;  // hoisted runs first, over every node of the call
  // The entry function's contract: params, states, packed weights and their layouts, arguments in
  // call order, input checks (vocab_size, children). `function` and `target` are the emitter's.
  ModelAbi abi;
  std::vector<std::string> unbound_sizes;  // scalar arguments after abi.args (dumps only)

  const CasePlan &plan_of(ilir::CaseKind kind) const;
  const ilir::Case &case_of(ilir::CaseKind kind) const;
  const ilir::Compute &compute(ilir::CaseKind kind, int index) const { return case_of(kind).body[index]; }
};

// Whether `op` runs as a level GEMM under `schedule` with `sizes` (all bound for a GEMM), and how.
// Its terms' `packed` are left unset. The epilogue fusion pass (plan/FuseProducts) asks this too.
std::optional<Gemm> match_gemm(const ilir::Program &program, const ilir::Compute &op,
                               const std::map<std::string, int64_t> &sizes,
                               const scheduling::Schedule &schedule);

// Whether `op` runs as a per-node matrix product, and how.
std::optional<Matmul> match_matmul(const ilir::Program &program, const ilir::Compute &op,
                                   const std::map<std::string, int64_t> &sizes,
                                   const scheduling::Schedule &schedule);

// Plans a verified program (after the ILIR passes). Size variables missing from `sizes` stay
// symbolic: no GEMMs or matrix products then, and they are listed in `unbound_sizes`.
LevelPlan plan_levels(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                      const scheduling::Schedule &schedule);

// Whether the planned code reads `param` in place — in a node loop, a per-node matrix product, a
// GEMM's epilogue or operand, a weight term left unpacked, a reduction — rather than only through its
// packed panels (a caller may then leave the param's own buffer unfilled).
bool reads_in_place(const LevelPlan &plan, const std::string &param);

// What `grove dump --stage plan` prints.
std::string to_string(const LevelPlan &plan);

}  // namespace grove::plan
