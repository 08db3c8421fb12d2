// The CUDA emitter (CudaEmitter.h): the plan's cases cut into units and phases, and the kernels of
// both forms written from them.
//
// Steps:
//   1. Cut each case into units: a GEMM group (its GEMMs' rows in units of `slice` rows, each unit
//      owned by one block), a per-node matrix product, or one step of a node loop (its elements
//      over the level's nodes, by hidden slice when it is one row of the output's width, else
//      spread over every thread of the grid).
//   2. Between two units, look at what the second reads of the tensors written since the last grid
//      barrier of the level: nothing, no sync; only rows of its own hidden slice at its own node
//      (i0 + a multiple of S, both units sliced), a __syncthreads(); anything else, a grid barrier,
//      which starts a new phase.
//   3. Write the prologue (the device/host switch, activations, the grid barrier), then per form
//      the kernels: one per phase (per level), or one for the call (persistent, with the internal
//      GEMMs' weight units copied to shared memory once when they fit), then the host launchers
//      the CPU emulation calls (Simt.h).

#include "backends/cuda/CudaEmitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "backends/cuda/CudaEmitter_Internal.h"
#include "backends/cuda/Messages.h"
#include "ilir/Affine.h"
#include "ilir/Verifier.h"
#include "plan/Names.h"
#include "plan/Passes.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;
using namespace internal;

namespace {

const char *case_name(ilir::CaseKind kind) {
  switch (kind) {
    case ilir::CaseKind::Leaf:
      return "leaf";
    case ilir::CaseKind::Internal:
      return "internal";
    case ilir::CaseKind::Hoisted:
      return "hoisted";
  }
  return "?";
}

// How rows map to blocks: unit u of `slice` rows (rows [u·slice, (u+1)·slice)) is owned by block
// ((u·slice mod width) / slice) mod blocks when sliced.
struct Mapping {
  int64_t width = 0;  // S: the output state's width (0: nothing is sliced)
  int64_t slice = 1;  // rows per unit
  int blocks = 1, threads = 1;

  std::string sliced_owner(const std::string &u) const {
    return fmt::format("(({} * {}) % {} / {}) % {}", u, slice, width, slice, blocks);
  }
  int sliced_owner(int64_t u) const { return int((u * slice) % width / slice % blocks); }
};

// Step 1's unit: a GEMM group, or one Compute run elementwise (a node-loop step, a matrix product).
struct Unit {
  int stage = 0, step = 0;                // 1-based, for the comments
  std::vector<const plan::Gemm *> gemms;  // a GEMM group
  int compute = -1;                       // otherwise
  bool matmul = false;
  bool sliced = false;
  bool block_sync_before = false;  // step 2: a __syncthreads() before it
};

using PhaseUnits = std::vector<Unit>;

class Emitter {
 public:
  Emitter(const plan::LevelPlan &plan, const CudaOptions &options)
      : plan_(plan), options_(options), printer_(plan.program, plan.sizes) {
    map_.blocks = options.blocks;
    map_.threads = options.threads;
    if (plan.abi.output_shape.size() == 1) map_.width = plan.abi.output_shape[0];
    if (map_.width > 0) {
      map_.slice = std::gcd(map_.width, int64_t(plan.schedule.panel));
      while (map_.slice % 2 == 0 && map_.width / map_.slice < options.blocks) map_.slice /= 2;
    }
  }

  CudaSource run();

 private:
  // --- Step 1 and 2: units and phases ---------------------------------------------------------
  std::vector<PhaseUnits> phases_of(ilir::CaseKind kind) const;
  bool gemm_sliced(const plan::Gemm &g) const {
    return map_.width > 0 && g.rows % map_.width == 0 && g.panel % map_.slice == 0;
  }
  int64_t gemm_slice(const plan::Gemm &g) const { return std::gcd(map_.slice, g.panel); }
  bool compute_sliced(const ilir::Compute &op) const {
    const ilir::TensorDecl &t = plan_.program.get(op.tensor);
    return map_.width > 0 && t.shape.size() == 1 && printer_.size(t.shape[0]) % map_.width == 0;
  }
  bool reads_locally(const ilir::Load &load, const ilir::Compute &reader) const;

  // --- Step 3: the source ---------------------------------------------------------------------
  void line(const std::string &s) { out_ += std::string(indent_ * 2, ' ') + s + "\n"; }
  void open(const std::string &s) {
    line(s);
    ++indent_;
  }
  void close(const std::string &s = "}") {
    --indent_;
    line(s);
  }
  void prologue();
  std::string parameters(bool per_level) const;
  void temp_pointers();
  void unit_code(ilir::CaseKind kind, const Unit &unit, bool guard);
  void gemm_code(ilir::CaseKind kind, const Unit &unit, const plan::Gemm &gemm, int64_t first_unit,
                 bool guard);
  void open_owned_loop(int64_t rows, int64_t q, bool sliced, int64_t first_unit, const std::string &count);
  void elementwise_code(ilir::CaseKind kind, const Unit &unit, bool guard);
  void store_lines(const ilir::Compute &op, const std::string &value, const std::vector<std::string> &prelude,
                   bool guard, ilir::CaseKind kind);
  void phase_body(ilir::CaseKind kind, const PhaseUnits &units, bool guard);
  void per_level_kernels(CudaSource &src);
  void persistent_kernel(CudaSource &src);
  void shared_weights();
  void host_launchers(const CudaSource &src);
  std::string level_range(const std::string &level) const;

  const plan::LevelPlan &plan_;
  const CudaOptions &options_;
  ExprPrinter printer_;
  Mapping map_;
  std::string out_;
  int indent_ = 0;
  // Temps' offsets into the scratch buffer (floats per node before them).
  std::map<std::string, int64_t> temp_offset_;
  int64_t scratch_per_node_ = 0;
  // Persistent form: shared-memory base (floats) of each internal GEMM term's weight units.
  std::map<std::pair<const plan::Gemm *, int>, int64_t> shared_base_;
  bool weights_shared_ = false;
  int64_t shared_floats_ = 0;
  bool in_persistent_ = false;
};

// A load is local when both units are sliced the same way, it reads the current node, and its row
// is the reader's own row plus a multiple of the width.
bool Emitter::reads_locally(const ilir::Load &load, const ilir::Compute &reader) const {
  if (reader.indices.size() != 1 || load.indices.size() != 1) return false;
  std::optional<int64_t> off = ilir::offset_from(load.indices[0], reader.indices[0], plan_.sizes);
  return off && *off % map_.width == 0;
}

std::vector<PhaseUnits> Emitter::phases_of(ilir::CaseKind kind) const {
  const plan::CasePlan &c = plan_.plan_of(kind);
  std::vector<Unit> units;
  // A node loop that the plan joined to its GEMM group by columns (plan::ColumnSteps, for the CPU
  // team) is a stage of its own here, numbered as it would be apart: the kernels slice it themselves.
  int number = 0;
  auto node_loop = [&](const std::vector<plan::NodeStep> &steps) {
    number++;
    for (size_t k = 0; k < steps.size(); k++) {
      Unit u;
      u.stage = number;
      u.step = int(k + 1);
      u.compute = steps[k].compute;
      u.matmul = steps[k].matmul.has_value();
      u.sliced = !u.matmul && compute_sliced(plan_.compute(kind, u.compute));
      units.push_back(u);
    }
  };
  for (const plan::Stage &stage : c.stages) {
    switch (stage.kind) {
      case plan::StageKind::GemmGroup: {
        Unit u;
        u.stage = ++number;
        u.sliced = true;
        for (const plan::Gemm &g : stage.gemms) {
          u.gemms.push_back(&g);
          u.sliced &= gemm_sliced(g);
        }
        units.push_back(u);
        if (stage.columns) node_loop(stage.columns->steps);
        break;
      }
      case plan::StageKind::Matmuls: {
        GROVE_CHECK(stage.matmul.has_value(), "a Matmuls stage without its matrix product");
        Unit u;
        u.stage = ++number;
        u.compute = stage.matmul->compute;
        u.matmul = true;
        units.push_back(u);
        break;
      }
      case plan::StageKind::NodeLoop:
        node_loop(stage.steps);
        break;
    }
  }
  // Step 2: tensors written since the last grid barrier, and whether by sliced units.
  std::vector<PhaseUnits> phases;
  std::map<std::string, bool> written;
  for (Unit &u : units) {
    std::vector<int> computes;
    for (const plan::Gemm *g : u.gemms) computes.push_back(g->compute);
    if (u.compute >= 0) computes.push_back(u.compute);
    bool depends = false, remote = false;
    for (int ci : computes) {
      const ilir::Compute &op = plan_.compute(kind, ci);
      std::vector<const ilir::Load *> loads;
      collect_loads(op.value, &loads);
      for (const ilir::Load *l : loads) {
        auto it = written.find(l->tensor);
        if (it == written.end()) continue;
        // A read at a child is of an earlier level.
        const auto *node = l->node.as<ilir::Var>();
        if (!node || node->var_kind != ilir::VarKind::Node) continue;
        depends = true;
        if (!(u.sliced && it->second && reads_locally(*l, op))) remote = true;
      }
    }
    if (remote || phases.empty()) {
      phases.emplace_back();
      written.clear();
    } else {
      u.block_sync_before = depends;
    }
    phases.back().push_back(u);
    for (int ci : computes) written[plan_.compute(kind, ci).tensor] = u.sliced;
  }
  return phases;
}

void Emitter::prologue() {
  const bool cg = options_.barrier == GridBarrier::CooperativeGroups;
  line(fmt::format("// grove: CUDA kernels of {} ({}), {} form, {} grid barrier", plan_.program.name,
                   ilir::to_string(plan_.program.structure),
                   options_.form == Form::Persistent ? "persistent" : "per-level",
                   cg ? "grid_sync" : "counter"));
  line(fmt::format(
      "// Written for {} blocks x {} threads; rows in units of {} owned by hidden slice (width {}).",
      options_.blocks, options_.threads, map_.slice, map_.width));
  line("#if defined(__CUDACC__) || defined(__CUDACC_RTC__)");
  line("#include <cuda/atomic>");
  if (cg) line("#include <cooperative_groups.h>");
  line("#define GROVE_DYNAMIC_SHARED(type, name) extern __shared__ type name[]");
  line("#elif !defined(GROVE_SIMT_HOST)");
  line("#error \"a host build of grove's CUDA source needs backends/cuda/Simt.h (-include Simt.h)\"");
  line("#endif");
  line("");
  line("__device__ __forceinline__ float grove_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }");
  line("__device__ __forceinline__ float grove_relu(float x) { return x < 0.0f ? 0.0f : x; }");
  line("__device__ __forceinline__ int grove_imin(int a, int b) { return a < b ? a : b; }");
  line("__device__ __forceinline__ int grove_imax(int a, int b) { return a > b ? a : b; }");
  line("");
  line("// The grid barrier: every block meets here (launch cooperatively: all blocks co-resident).");
  open("struct GroveGrid {");
  line("unsigned *counter;  // zeroed before the launch; only grows within it");
  line("unsigned epoch;");
  open("__device__ void sync() {");
  if (cg) {
    line("cooperative_groups::this_grid().sync();");
  } else {
    line("__syncthreads();");
    line("++epoch;");
    open("if (threadIdx.x == 0) {");
    line("// Release: the block's writes (ordered before by __syncthreads) reach the other blocks.");
    line("__threadfence();");
    line("cuda::atomic_ref<unsigned, cuda::thread_scope_device> c(*counter);");
    line("c.fetch_add(1u, cuda::memory_order_release);");
    line("// Acquire: every block's writes of this round are seen once all have arrived.");
    line("while (c.load(cuda::memory_order_acquire) < epoch * gridDim.x) __nanosleep(32);");
    close();
    line("__syncthreads();");
  }
  close();
  close("};");
  line("");
}

std::string Emitter::parameters(bool per_level) const {
  using Kind = ModelAbi::ArgKind;
  std::vector<std::string> ps;
  for (const ModelAbi::Arg &a : plan_.abi.args) {
    switch (a.kind) {
      case Kind::Param:
      case Kind::Packed:
        ps.push_back("const float *__restrict__ " + a.name);
        break;
      case Kind::State:
        // Written by other blocks between barriers: no read-only cache path (no const restrict).
        ps.push_back("float *" + a.name);
        break;
      case Kind::LevelBegin:
      case Kind::ChildBegin:
      case Kind::Children:
      case Kind::Token:
      case Kind::TeamBegin:
        ps.push_back("const int *__restrict__ " + a.name);
        break;
      case Kind::NumLevels:
        ps.push_back("int " + a.name);
        break;
      case Kind::Saved:
      case Kind::Gradient:
      case Kind::Parent:
      case Kind::ChildSlot:
      case Kind::ParentBegin:
        GROVE_CHECK(false, "the CUDA emitter got a backward program's argument {}", a.name);
    }
  }
  ps.push_back("float *grove_scratch");
  ps.push_back("unsigned *grove_barrier");
  if (per_level) ps.push_back("int grove_level");
  std::string s;
  for (size_t i = 0; i < ps.size(); i++) s += (i ? ", " : "") + ps[i];
  return s;
}

void Emitter::temp_pointers() {
  line(fmt::format("const int num_nodes = {}[{}];", plan::names::kLevelBegin, plan::names::kNumLevels));
  for (const auto &[name, offset] : temp_offset_)
    line(fmt::format("float *{} = grove_scratch + {}LL * num_nodes;", plan::names::temp(name), offset));
}

std::string Emitter::level_range(const std::string &level) const {
  return fmt::format("const int level_base = {0}[{1}], level_size = {0}[{1} + 1] - level_base;",
                     plan::names::kLevelBegin, level);
}

void Emitter::store_lines(const ilir::Compute &op, const std::string &value,
                          const std::vector<std::string> &prelude, bool guard, ilir::CaseKind kind) {
  if (guard)
    line(fmt::format("if (({0}[n + 1] == {0}[n]) != {1}) continue;  // the other case's node",
                     plan::names::kChildBegin, kind == ilir::CaseKind::Leaf ? "true" : "false"));
  for (const std::string &l : prelude) line(l);
  std::vector<std::string> indices(op.indices.begin(), op.indices.end());
  line(fmt::format("{} = {};", printer_.address(plan_.program.get(op.tensor), "n", indices), value));
}

// A GEMM of a group: each owned unit's rows for every node of the level, thread e on node e / slice,
// row e % slice (consecutive threads read consecutive weights of a packed panel).
void Emitter::gemm_code(ilir::CaseKind kind, const Unit &unit, const plan::Gemm &gemm, int64_t first_unit,
                        bool guard) {
  const ilir::Compute &op = plan_.compute(kind, gemm.compute);
  const int64_t q = gemm_slice(gemm);
  const bool shared = in_persistent_ && weights_shared_ && kind == ilir::CaseKind::Internal;
  line(fmt::format("// gemm {}: {} rows, panels of {}, units of {} rows", op.tensor, gemm.rows, gemm.panel,
                   q));
  open("{");
  open_owned_loop(gemm.rows, q, unit.sliced, first_unit, "level_size");
  line(fmt::format("const int {} = u * {} + r;", op.indices[0], q));
  if (gemm.rows % q != 0)
    line(fmt::format("if ({} >= {}) continue;  // past the last row", op.indices[0], gemm.rows));
  if (guard)
    line(fmt::format("if (({0}[n + 1] == {0}[n]) != {1}) continue;  // the other case's node",
                     plan::names::kChildBegin, kind == ilir::CaseKind::Leaf ? "true" : "false"));
  std::map<const ilir::ExprNode *, std::string> replace;
  for (size_t m = 0; m < gemm.terms.size(); m++) {
    const plan::WeightTerm &term = gemm.terms[m];
    const PackedWeight &pw = plan_.abi.packed[term.packed];
    int64_t stride = pw.panel;
    if (shared) {
      // The unit's weights, copied at the start (shared_weights), `slice` rows per column.
      line(fmt::format("const float *w{} = grove_smem + {} + unit * {};", m, shared_base_.at({&gemm, int(m)}),
                       q * term.cols));
      stride = q;
    } else {
      // Row u·q of the packed weight: panel u·q / panel, row u·q % panel (PackedWeight::offset).
      line(fmt::format("const float *w{} = {} + (u * {} / {}) * {} + (u * {}) % {};", m, pw.buffer, q,
                       pw.panel, pw.cols * pw.panel, q, pw.panel));
    }
    replace[term.sum] = fmt::format("acc{}", m);
    std::vector<std::string> xprelude;
    std::string x = printer_.print(term.x, &xprelude);
    line(fmt::format("float acc{} = 0.0f;  // {} rows [{}, {}) times its operand", m, term.param,
                     term.row_offset, term.row_offset + gemm.rows));
    const std::string &k = term.sum->var;
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", k, term.cols));
    for (const std::string &l : xprelude) line(l);
    line(fmt::format("acc{} += w{}[{} * {} + r] * {};", m, m, k, stride, x));
    close();
  }
  std::vector<std::string> prelude;
  std::string value = printer_.print(op.value, &prelude, replace);
  for (const std::string &l : prelude) line(l);
  std::vector<std::string> indices(op.indices.begin(), op.indices.end());
  line(fmt::format("{} = {};", printer_.address(plan_.program.get(op.tensor), "n", indices), value));
  close();
  close();
}

// Opens the flat loop of the block's threads over its own units of a `rows`-row tensor (units of
// `q` rows) x `count` nodes x the unit's rows, consecutive threads on consecutive rows of one
// unit, and defines `unit` (the unit's place among the block's: its shared-memory slot), `u` (its
// number), `n` (from level_base on) and `r`. Sliced, the block owns hidden slices b, b + grid, ...
// of every group of `width` rows (a gate); else units first, first + grid, ... where unit u
// belongs to block (first_unit + u) mod grid.
void Emitter::open_owned_loop(int64_t rows, int64_t q, bool sliced, int64_t first_unit,
                              const std::string &count) {
  const int g = map_.blocks;
  const int64_t per = map_.width / std::max<int64_t>(q, 1);
  if (sliced) {
    line(fmt::format("const int slices = (int)blockIdx.x < {0} ? ({0} - 1 - (int)blockIdx.x) / {1} + 1 : 0;",
                     per, g));
    line(fmt::format("const int owned = slices * {};  // this block's units: its slices of {} gates",
                     rows / map_.width, rows / map_.width));
  } else {
    line(fmt::format("const int first = ((int)blockIdx.x + {}) % {};", (g - first_unit % g) % g, g));
    // A last, partial unit when the rows are no multiple of q (a GEMM of any row count).
    line(
        fmt::format("const int owned = first < {0} ? ({0} - 1 - first) / {1} + 1 : 0;  // this block's units",
                    (rows + q - 1) / q, g));
  }
  open(fmt::format("for (int e = threadIdx.x; e < owned * {} * {}; e += blockDim.x) {{", count, q));
  line(fmt::format("const int unit = e / ({0} * {1}), rest = e % ({0} * {1});", count, q));
  if (sliced)
    line(fmt::format("const int u = unit / slices * {} + (int)blockIdx.x + unit % slices * {};", per, g));
  else
    line(fmt::format("const int u = first + unit * {};", g));
  line(fmt::format("const int n = level_base + rest / {0}, r = rest % {0};", q));
}

void Emitter::elementwise_code(ilir::CaseKind kind, const Unit &unit, bool guard) {
  const ilir::Compute &op = plan_.compute(kind, unit.compute);
  const ilir::TensorDecl &t = plan_.program.get(op.tensor);
  std::vector<std::string> prelude;
  std::string value = printer_.print(op.value, &prelude);
  if (unit.sliced) {
    open("{");
    open_owned_loop(printer_.size(t.shape[0]), map_.slice, true, 0, "level_size");
    line(fmt::format("const int {} = u * {} + r;", op.indices[0], map_.slice));
    store_lines(op, value, prelude, guard, kind);
    close();
    close();
    return;
  }
  // Spread over every thread of the grid, node-major.
  const int64_t numel = printer_.numel(t);
  open(
      fmt::format("for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < level_size * {}; e += gridDim.x * "
                  "blockDim.x) {{",
                  numel));
  line(fmt::format("const int n = level_base + e / {};", numel));
  if (!op.indices.empty()) {
    line(fmt::format("int rest = e % {};", numel));
    for (size_t d = op.indices.size(); d-- > 0;) {
      const int64_t extent = printer_.size(t.shape[d]);
      if (d == 0) {
        line(fmt::format("const int {} = rest;", op.indices[d]));
      } else {
        line(fmt::format("const int {} = rest % {};", op.indices[d], extent));
        line(fmt::format("rest /= {};", extent));
      }
    }
  }
  store_lines(op, value, prelude, guard, kind);
  close();
}

void Emitter::unit_code(ilir::CaseKind kind, const Unit &unit, bool guard) {
  if (unit.block_sync_before) line("__syncthreads();  // reads rows this block wrote above");
  if (!unit.gemms.empty()) {
    std::string names;
    for (const plan::Gemm *g : unit.gemms)
      names += (names.empty() ? "" : ", ") + plan_.compute(kind, g->compute).tensor;
    line(fmt::format("// {} stage {}: GEMM group ({}){}", case_name(kind), unit.stage, names,
                     unit.sliced ? ", by hidden slice" : ""));
    int64_t first = 0;
    for (const plan::Gemm *g : unit.gemms) {
      gemm_code(kind, unit, *g, first, guard);
      first += (g->rows + gemm_slice(*g) - 1) / gemm_slice(*g);
    }
    return;
  }
  const ilir::Compute &op = plan_.compute(kind, unit.compute);
  if (unit.matmul)
    line(fmt::format("// {} stage {}: per-node matrix product {}[n, ...]", case_name(kind), unit.stage,
                     op.tensor));
  else
    line(fmt::format("// {} stage {} step {}: {}[n, ...]{}", case_name(kind), unit.stage, unit.step,
                     op.tensor, unit.sliced ? ", by hidden slice" : ""));
  elementwise_code(kind, unit, guard);
}

void Emitter::phase_body(ilir::CaseKind kind, const PhaseUnits &units, bool guard) {
  for (const Unit &u : units) unit_code(kind, u, guard);
}

void Emitter::per_level_kernels(CudaSource &src) {
  auto kernels = [&](ilir::CaseKind kind, std::vector<Phase> *launches, bool guard) {
    std::vector<PhaseUnits> phases = phases_of(kind);
    for (size_t p = 0; p < phases.size(); p++) {
      std::string name = fmt::format("grove_{}_p{}", case_name(kind), p + 1);
      line(fmt::format("// The {} case, phase {} of {}: launched once per {}.", case_name(kind), p + 1,
                       phases.size(), kind == ilir::CaseKind::Hoisted ? "call (all nodes)" : "level"));
      open(fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{", options_.threads, name,
                       parameters(true)));
      temp_pointers();
      if (kind == ilir::CaseKind::Hoisted)
        line("const int level_base = 0, level_size = num_nodes;");
      else
        line(level_range("grove_level"));
      phase_body(kind, phases[p], guard);
      close();
      line("");
      src.kernels.push_back(name);
      launches->push_back({name, kind});
    }
    return phases.size();
  };
  const bool guard = !plan_.recursion.specialized;
  kernels(ilir::CaseKind::Hoisted, &src.hoisted, false);
  kernels(ilir::CaseKind::Leaf, &src.leaf, guard);
  src.grid_barriers_per_level = int(kernels(ilir::CaseKind::Internal, &src.internal, guard));
}

// Step 3's shared memory: each block's units of every internal GEMM term, at the same base in every
// block (the most any block owns), copied once before the levels.
void Emitter::shared_weights() {
  if (!plan_.schedule.persist) return;
  struct Copy {
    const plan::Gemm *gemm;
    int term;
    bool sliced;
    int64_t first;
  };
  int64_t floats = 0;
  std::vector<Copy> copies;
  for (const plan::Stage &stage : plan_.internal.stages) {
    if (stage.kind != plan::StageKind::GemmGroup) continue;
    bool sliced = true;
    for (const plan::Gemm &g : stage.gemms) sliced &= gemm_sliced(g);
    int64_t first = 0;
    for (const plan::Gemm &g : stage.gemms) {
      const int64_t q = gemm_slice(g), units = (g.rows + q - 1) / q;
      std::vector<int64_t> owned(options_.blocks, 0);
      for (int64_t u = 0; u < units; u++)
        owned[sliced ? map_.sliced_owner(u) : (first + u) % options_.blocks]++;
      const int64_t most = *std::max_element(owned.begin(), owned.end());
      for (size_t m = 0; m < g.terms.size(); m++) {
        shared_base_[{&g, int(m)}] = floats;
        copies.push_back({&g, int(m), sliced, first});
        floats += most * q * g.terms[m].cols;
      }
      first += units;
    }
  }
  if (floats == 0 || floats * 4 > options_.shared_limit) {
    shared_base_.clear();
    return;
  }
  weights_shared_ = true;
  line(fmt::format("// This block's units of the internal GEMMs' weights, kept in shared memory ({} bytes).",
                   floats * 4));
  open("{");
  line("const int level_base = 0;  // the loops' \"nodes\" are the weights' columns");
  for (const Copy &c : copies) {
    const plan::WeightTerm &term = c.gemm->terms[c.term];
    const PackedWeight &pw = plan_.abi.packed[term.packed];
    const int64_t q = gemm_slice(*c.gemm);
    open(fmt::format("{{  // {}'s rows, in the order the GEMM reads them", pw.buffer));
    open_owned_loop(c.gemm->rows, q, c.sliced, c.first, std::to_string(term.cols));
    line(fmt::format("grove_smem[{} + e] = {}[((u * {} / {}) * {} + n) * {} + (u * {}) % {} + r];",
                     shared_base_.at({c.gemm, c.term}), pw.buffer, q, pw.panel, pw.cols, pw.panel, q,
                     pw.panel));
    close();
    close();
  }
  close();
  line("__syncthreads();");
  shared_floats_ = floats;
}

void Emitter::persistent_kernel(CudaSource &src) {
  in_persistent_ = true;
  const bool guard = !plan_.recursion.specialized;
  line("// The whole call: hoisted work, the leaves and every level, grid barriers between phases.");
  open(fmt::format("extern \"C\" __global__ void __launch_bounds__({}) grove_persistent({}) {{",
                   options_.threads, parameters(false)));
  line("GROVE_DYNAMIC_SHARED(float, grove_smem);");
  line("GroveGrid grid{grove_barrier, 0u};");
  temp_pointers();
  // Body of shared_weights() is written here, between the pointers and the levels.
  std::string before = out_;
  out_.clear();
  shared_weights();
  std::string loads = out_;
  out_ = before + loads;
  if (!weights_shared_) line("(void)grove_smem;");

  auto phases_with_syncs = [&](ilir::CaseKind kind, const std::vector<PhaseUnits> &phases) {
    for (size_t p = 0; p < phases.size(); p++) {
      if (p > 0) line("grid.sync();  // the next phase reads rows other blocks wrote");
      phase_body(kind, phases[p], guard);
    }
  };
  std::vector<PhaseUnits> hoisted = phases_of(ilir::CaseKind::Hoisted);
  std::vector<PhaseUnits> leaf = phases_of(ilir::CaseKind::Leaf);
  std::vector<PhaseUnits> internal = phases_of(ilir::CaseKind::Internal);
  if (!hoisted.empty()) {
    open("{  // the hoisted case, over every node of the call");
    line("const int level_base = 0, level_size = num_nodes;");
    phases_with_syncs(ilir::CaseKind::Hoisted, hoisted);
    close();
    line("grid.sync();");
  }
  if (plan_.recursion.specialized) {
    open(fmt::format("if ({} > 0) {{  // the leaves: level 0", plan::names::kNumLevels));
    line(level_range("0"));
    phases_with_syncs(ilir::CaseKind::Leaf, leaf);
    close();
    open(fmt::format("for (int level = 1; level < {}; ++level) {{", plan::names::kNumLevels));
    line("grid.sync();  // the level reads its children, written by any block");
    line(level_range("level"));
    phases_with_syncs(ilir::CaseKind::Internal, internal);
    close();
  } else {
    open(fmt::format("for (int level = 0; level < {}; ++level) {{", plan::names::kNumLevels));
    line("if (level > 0) grid.sync();  // the level reads its children, written by any block");
    line(level_range("level"));
    line("// Each node runs its own case: the leaf case's phases, then the internal case's.");
    phases_with_syncs(ilir::CaseKind::Leaf, leaf);
    phases_with_syncs(ilir::CaseKind::Internal, internal);
    close();
  }
  close();
  line("");
  src.kernels.push_back("grove_persistent");
  src.grid_barriers_per_level = int(std::max<size_t>(internal.size(), 1));
  in_persistent_ = false;
}

void Emitter::host_launchers(const CudaSource &src) {
  using Kind = ModelAbi::ArgKind;
  std::vector<std::string> types;
  for (const ModelAbi::Arg &a : plan_.abi.args) {
    switch (a.kind) {
      case Kind::Param:
      case Kind::Packed:
        types.push_back("const float *");
        break;
      case Kind::State:
        types.push_back("float *");
        break;
      case Kind::NumLevels:
        types.push_back("int");
        break;
      default:
        types.push_back("const int *");
        break;
    }
  }
  types.push_back("float *");
  types.push_back("unsigned *");
  line("#ifdef GROVE_SIMT_HOST");
  line("// The CPU emulation's entry points (Simt.h): args[i] points to argument i, as cuLaunchKernel's.");
  for (const std::string &k : src.kernels) {
    std::vector<std::string> ts = types;
    if (k != "grove_persistent") ts.push_back("int");
    std::string call;
    for (size_t i = 0; i < ts.size(); i++)
      call += fmt::format("{}*static_cast<{}{}*>(args[{}])", i ? ", " : "", ts[i],
                          ts[i].back() == '*' ? "" : " ", i);
    open(fmt::format(
        "extern \"C\" void grove_host_{}(void **args, unsigned blocks, unsigned threads, unsigned long "
        "shared_bytes) {{",
        k));
    line(fmt::format("grove_simt::launch(blocks, threads, shared_bytes, [&] {{ {}({}); }});", k, call));
    close();
  }
  line("#endif");
}

CudaSource Emitter::run() {
  CudaSource src;
  src.options = options_;
  src.specialized = plan_.recursion.specialized;
  for (const ilir::TensorDecl &t : plan_.program.tensors)
    if (t.kind == ilir::TensorKind::Temp) {
      temp_offset_[t.name] = scratch_per_node_;
      scratch_per_node_ += printer_.numel(t);
    }
  src.scratch_floats_per_node = scratch_per_node_;
  prologue();
  if (options_.form == Form::PerLevel)
    per_level_kernels(src);
  else
    persistent_kernel(src);
  host_launchers(src);
  src.text = std::move(out_);
  src.shared_bytes = shared_floats_ * 4;
  return src;
}

}  // namespace

CudaSource emit_cuda(const plan::LevelPlan &plan, const CudaOptions &options) {
  if (!plan.unbound_sizes.empty()) user_error(msg::kUnboundSize, plan.unbound_sizes[0]);
  if (options.blocks < 1 || options.threads < 1) user_error(msg::kBadGrid, options.blocks, options.threads);
  GROVE_CHECK(!plan.abi.bf16_panels(), "a CUDA kernel over bf16 panels");
  CudaSource src = Emitter(plan, options).run();
  if (!plan.schedule.batch) src.notes.push_back(msg::kNoteBatch);
  for (const char *key : {"region", "unroll", "threads", "parallel", "node_block", "vector", "precision"})
    if (plan.schedule.asked(key)) src.notes.push_back(fmt::format(msg::kNoteCpuOnly, key));
  if (options.form == Form::Persistent && options.graph_given)
    src.notes.push_back(fmt::format(msg::kNoteGraphPersistent, options.graph ? "on" : "off"));
  return src;
}

plan::LevelPlan plan_for_cuda(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                              const std::string &schedule_overrides) {
  ilir::verify(program);
  // 64-byte "vectors": panels of 32 rows, a warp's width.
  scheduling::Schedule schedule = scheduling::default_schedule(program, 64);
  schedule.apply(schedule_overrides, "--schedule");
  schedule.precision = scheduling::Schedule::Precision::Fp32;  // the CUDA kernels read fp32 panels
  ilir::Program p = program;
  for (const plan::IlirPass &pass : plan::ilir_passes(schedule, sizes)) p = pass.run(p);
  ilir::verify(p);
  plan::LevelPlan plan = plan::plan_levels(p, sizes, schedule);
  if (!plan.unbound_sizes.empty()) user_error(msg::kUnboundSize, plan.unbound_sizes[0]);
  return plan;
}

Form parse_form(const std::string &name) {
  if (name == "per_level") return Form::PerLevel;
  if (name == "persistent") return Form::Persistent;
  user_error(msg::kBadForm, name);
}

GridBarrier parse_barrier(const std::string &name) {
  if (name == "counter") return GridBarrier::Counter;
  if (name == "grid_sync") return GridBarrier::CooperativeGroups;
  user_error(msg::kBadBarrier, name);
}

CudaOptions parse_cuda_options(const std::string &text, const std::string &where) {
  CudaOptions o;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) user_error(msg::kBadCudaOption, where, item);
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto number = [&](int64_t lo, int64_t hi) {
      size_t used = 0;
      int64_t v = 0;
      try {
        v = std::stoll(value, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != value.size() || v < lo || v > hi)
        user_error(msg::kBadCudaValue, where, key, value, lo, hi);
      return v;
    };
    if (key == "form")
      o.form = parse_form(value);
    else if (key == "barrier")
      o.barrier = parse_barrier(value);
    else if (key == "blocks")
      o.blocks = int(number(1, 65535));
    else if (key == "threads")
      o.threads = int(number(1, 1024));
    else if (key == "shared_limit")
      o.shared_limit = number(0, 1 << 30);
    else if (key == "graph" && (value == "on" || value == "off")) {
      o.graph = value == "on";
      o.graph_given = true;
    } else if (key == "graph")
      user_error(msg::kBadCudaGraph, where, value);
    else
      user_error(msg::kBadCudaOption, where, item);
  }
  return o;
}

std::string to_string(const CudaOptions &o) {
  return fmt::format("form={},barrier={},blocks={},threads={},shared_limit={}{}",
                     o.form == Form::Persistent ? "persistent" : "per_level",
                     o.barrier == GridBarrier::Counter ? "counter" : "grid_sync", o.blocks, o.threads,
                     o.shared_limit,
                     o.form == Form::Persistent ? ""
                     : o.graph                  ? ",graph=on"
                                                : ",graph=off");
}

}  // namespace grove::cuda
