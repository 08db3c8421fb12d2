#pragma once
// The Schedule: how a Program is turned into loops. Every field is one of Cortex's optimizations
// or a loop primitive, and can be switched from the model file's `schedule` block, the C++ API and
// the command line (`--schedule 'batch=off,fuse=off'`), so each one's effect can be measured. A
// schedule never changes the numbers a model computes (up to float rounding order).
//
// The fields are target-neutral: `batch`, `specialize`, `fuse`, `gemm`, `hoist` and `persist` name
// what is computed where; a GPU back end maps panels to thread blocks and the level loop to a grid
// barrier instead of a parallel-for.

#include <string>
#include <utility>
#include <vector>

#include "ilir/IR.h"

namespace grove::scheduling {

struct Schedule {
  // Dynamic batching: all nodes of one height level (across the whole batch of trees) are computed
  // together — matrix–vector products become one GEMM per level. Off: one node at a time, in
  // topological order (the naive baseline).
  bool batch = true;
  // Leaf specialization: leaf and internal nodes get separate code; no per-node branch. Off: one
  // loop over all nodes that branches on is_leaf(n).
  bool specialize = true;
  // Kernel fusion: elementwise temporaries (gates) are computed inside their consumers instead of
  // round-tripping through memory; activations run in the GEMM epilogue.
  bool fuse = true;
  // Epilogue fusion: a level GEMM's output read elementwise, each element once (TreeLSTM's gates),
  // is computed inside its readers' GEMMs, so the activations and the cell update run on the
  // accumulators and no gate tensor goes through memory (plan/FuseProducts.h). Off by default:
  // on this machine it measured no faster (experiments/README.md).
  bool epilogue = false;
  // Register-blocked micro-kernels for level GEMMs: weights packed into panels of `panel` rows,
  // `node_block` nodes per block, the panel's rows in vector registers.
  bool gemm = true;
  // Computation hoisting: work independent of the recursion moves out of it — products of a node's
  // own input (an LSTM's W_ih x_t, a DAG-RNN's U x) run as one GEMM over all nodes before the
  // levels; products of a child alone inside a ragged sum over children (child-sum TreeLSTM's
  // U_f h_k) run at the child, as a level GEMM; weight packing happens once at compile time rather
  // than on every call.
  bool hoist = true;
  // Model persistence: each thread owns a fixed slice of every GEMM's weight panels for all levels,
  // so its slice stays in its core's cache across levels. Off: threads split a level's nodes.
  bool persist = true;
  // Multi-threading (Halide's thread pool); off: everything runs on the calling thread.
  bool parallel = true;
  // One parallel region for the whole recursion: a team of threads runs every level; each stage
  // is claimed chunk by chunk (a thread's home chunks first) and finished before the next starts.
  // Off: one parallel dispatch per stage of every level. Needs batch, specialize and parallel, and
  // more than one thread.
  bool region = true;
  // The level GEMMs' arithmetic. bf16: their weights rounded to bfloat16 (to nearest even) once,
  // when packed, and their inputs as they are read; products accumulate in fp32, and biases, the
  // epilogue and every state stay fp32. Only level GEMMs change (per-node matrix products and node
  // loops stay fp32), and only on a target with bf16 kernels (lowering::bf16_support); elsewhere
  // the model runs in fp32 with a note. With bf16 kernels the blocking defaults to panel=64,
  // node_block=6 unless those keys (or vector) are set.
  enum class Precision { Fp32, Bf16 };
  Precision precision = Precision::Fp32;
  int vector = 16;     // lanes of the innermost vectorized loops (16 floats = one AVX-512 register)
  int panel = 32;      // GEMM rows per panel (a multiple of `vector`)
  int node_block = 8;  // GEMM nodes per register block
  int threads = 0;     // 0: as many as the machine has
  // Recursive unrolling (with `region`, trees only): levels run in blocks of `unroll` heights;
  // the inspector gives each thread whole subtrees of a block (a node's children in the block
  // belong to the node's thread), so a thread runs a block on its own nodes — every GEMM over
  // all panels for its nodes — and the team meets once per block instead of after every stage.
  // 1: off.
  int unroll = 1;

  // The number of threads `threads` stands for (the machine's hardware threads for 0).
  int team_size() const;
  // Whether the levels run in one parallel region (`region` and what it needs).
  bool uses_region() const { return batch && specialize && parallel && region && team_size() > 1; }
  // Whether the levels of a `structure` model run unrolled (`unroll` > 1, in a region, on trees).
  bool uses_unroll(ilir::StructureKind structure) const {
    return unroll > 1 && uses_region() && !ilir::has_predecessor_slots(structure);
  }

  // The keys set by apply() (the model's schedule block, --schedule), in the order first set: the
  // options a user asked for, as opposed to defaults.
  std::vector<std::string> requested;
  // Whether `key` is among them.
  bool asked(const std::string &key) const;

  // One sentence for each requested option that cannot take effect with the rest of the schedule
  // on a `structure` model (epilogue=on with batch=off, unroll=4 on a DAG model, ...): what grove
  // prints as a note instead of ignoring the request silently. Empty when everything applies.
  std::vector<std::string> notes(ilir::StructureKind structure) const;

  // "batch=on,fuse=off,node_block=4" applied over this schedule; a UserError names a bad key or value.
  void apply(const std::string &overrides, const std::string &where);
  void apply(const std::vector<std::pair<std::string, std::string>> &overrides, const std::string &where);
  std::string to_string() const;
};

// The schedule grove picks for `program` on a target whose widest vector registers hold
// `vector_bytes` bytes, with no hand tuning (see docs/ARCHITECTURE.md, "Default schedule"), then the
// model file's schedule block applied over it.
Schedule default_schedule(const ilir::Program &program, int vector_bytes = 64);

}  // namespace grove::scheduling
