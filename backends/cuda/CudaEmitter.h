#pragma once
// The CUDA emitter: a level plan (plan/LevelPlan.h) → CUDA C++ source, beside the CPU emitter
// (lowering/). It reads only the plan: its stages, packed weight layouts and ABI; the Computes'
// ILIR expressions are printed as CUDA C for element values.
//
// Two forms of the same plan (CudaOptions::form):
//   * per level: one `__global__` kernel per phase of a case (a stage, or several stages between
//     which no block reads what another wrote), launched once per level by the host: the hoisted
//     phases once over all nodes, then the leaves, then each internal level (on a device, with
//     CudaOptions::graph, those launches are captured into a CUDA graph per call shape and
//     replayed: Driver.h);
//   * persistent: one kernel for the whole call (hoisted work, leaves, every level), with a grid
//     barrier only where a phase reads what another block wrote. It must be launched cooperatively.
//
// The mapping (both forms, so that the two agree): the kernel is written for a fixed grid of
// `blocks` × `threads`. Rows of a level's tensors are cut into units of `slice` rows; block b owns
// the units whose hidden slice ((row mod S) / slice, S = the output state's width) is b modulo the
// grid, in every GEMM (TreeLSTM's i, o, u and f rows for the same hidden units) and in every
// elementwise step of that width, so a step that reads a gate at its own hidden index (plus a
// multiple of S) reads rows its own block computed: a __syncthreads() suffices. Any other read of
// a tensor written in the same level (a GEMM's operand, a per-node matrix product, a row read
// whole) takes a grid barrier. In the persistent form each block keeps its units of the internal
// case's GEMM weights in shared memory across levels when they fit in `shared_limit` bytes.
//
// The kernels' arguments are the plan's ABI arguments (plan.abi.args) in order, then
// `float *grove_scratch` (the temps, CudaSource::scratch_floats_per_node floats per node, node-major
// per temp), `unsigned *grove_barrier` (a zeroed counter, the counter barrier's), and in the
// per-level form `int grove_level` (-1: the hoisted phases over all nodes).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "plan/LevelPlan.h"

namespace grove::cuda {

enum class Form { PerLevel, Persistent };
enum class GridBarrier {
  Counter,            // grove's own: release fetch_add and acquire spin on a device-scope counter
  CooperativeGroups,  // cooperative_groups::this_grid().sync()
};

struct CudaOptions {
  Form form = Form::Persistent;
  GridBarrier barrier = GridBarrier::Counter;
  int blocks = 4;    // the grid the kernels are written for (launched with exactly this many)
  int threads = 32;  // threads per block
  // The most dynamic shared memory the persistent kernel may take for weight panels; beyond it the
  // weights are read from global memory. 48 KB needs no opt-in; an H200 allows 227 KB per block.
  int64_t shared_limit = 48 * 1024;
  // The per-level form on a device (Driver.h): a call's launches captured once per call shape into
  // a CUDA graph and replayed (true), or launched one by one (false). The kernels' source is the
  // same either way; the persistent form is one launch and takes no graph (a note if given).
  bool graph = true;
  bool graph_given = false;  // graph= was in the option text
};

// One kernel of the per-level form and when the host launches it.
struct Phase {
  std::string kernel;
  ilir::CaseKind kind = ilir::CaseKind::Leaf;
};

struct CudaSource {
  std::string text;  // the CUDA C++ source (compiles under NVRTC and, with Simt.h, under g++)
  CudaOptions options;
  std::vector<std::string> kernels;  // every __global__ function, in the source's order
  // The per-level form's launches: `hoisted` once with grove_level = -1; specialized, `leaf` at
  // level 0 and `internal` at each level from 1 on; unspecialized, leaf then internal phases at
  // every level (each node runs its own case's code).
  std::vector<Phase> hoisted, leaf, internal;
  bool specialized = true;
  int64_t scratch_floats_per_node = 0;
  int64_t shared_bytes = 0;         // dynamic shared memory per block (persistent form)
  int grid_barriers_per_level = 0;  // in an internal level, the level's own barrier included
  std::vector<std::string> notes;   // schedule options the GPU mapping does not follow
};

// The plan's kernels in the form `options` asks for. Every size must be bound (UserError otherwise).
CudaSource emit_cuda(const plan::LevelPlan &plan, const CudaOptions &options);

// The ILIR passes and the level plan for the GPU: the default schedule (GEMM panels of 32 rows,
// one warp) with `schedule_overrides` (--schedule syntax) applied.
plan::LevelPlan plan_for_cuda(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                              const std::string &schedule_overrides);

// "per_level" / "persistent", "counter" / "grid_sync": the names `grove dump --stage cuda` takes.
Form parse_form(const std::string &name);
GridBarrier parse_barrier(const std::string &name);
// "form=per_level,barrier=grid_sync,blocks=8,threads=128,shared_limit=65536,graph=off" over the
// defaults (`grove dump|run|bench --cuda`); a UserError names a bad key or value, `where` the option.
// to_string writes graph= for the per-level form only.
CudaOptions parse_cuda_options(const std::string &text, const std::string &where);
std::string to_string(const CudaOptions &options);

}  // namespace grove::cuda
