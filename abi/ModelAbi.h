#pragma once
// The contract between a compiled model's code and the runtime that calls it: which arguments the
// entry function takes, in which order, what each holds and how it is laid out. The compiler
// writes one (backends/cpu/Abi.h) for the JIT and for `grove compile`, which embeds it as JSON in
// the library it writes; the runtime (Executor.h) reads nothing else. Sizes are bound: every
// shape here is concrete.
//
// The entry function is Halide's argv form, `int entry(void **args)`: args[i] points to a
// halide_buffer_t for a buffer argument (1-D, float32 or int32) and to an int32_t for num_levels.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grove {

// The version of this contract; a library written under another version is refused when opened.
inline constexpr int kModelAbiVersion = 1;

// The element type of a packed weight (Schedule::precision).
enum class PackedElement {
  F32,   // float32
  BF16,  // bfloat16, rounded to nearest even from the float32 weight (round_to_bf16)
};

// The kernels a model's level GEMMs were emitted with (the ABI's "gemm_kernel"): what the CPU
// running them must have.
enum class GemmKernel {
  Fma,        // float32 panels, vfmadd231ps (or whatever the target's vectors do)
  Vdpbf16ps,  // bf16 panels, AVX512-BF16's vdpbf16ps
  AmxBf16,    // bf16 panels, AMX tiles (tdpbf16ps): the process must hold the AMX state
};

// The columns a bf16 layout pads to: one AMX tile's depth (16 pairs of 64 bytes a row), so that
// the last tile of a panel's columns reads zeros, not the next panel (libraries written before it
// padded to a pair: PackedWeight::bf16_col_align 2).
inline constexpr int64_t kBf16ColumnAlign = 32;
// The largest bf16_col_align a library may record (grove writes kBf16ColumnAlign or, before the AMX
// kernels, 2): a larger one is a malformed ABI.
inline constexpr int64_t kMaxBf16ColumnAlign = 256;

// A weight's rows packed for a GEMM micro-kernel: rows [row_offset, row_offset + rows) of `param`
// (shape [*, cols]) as panels of `panel` rows, panel-major then column then row, zero past `rows`:
//   F32:  packed[(p * cols + k) * panel + r] = param[row_offset + p * panel + r, k]
//   BF16: the columns in adjacent pairs, each row's pair one 32-bit word, so that one word of a
//         panel's column pair is what a vdpbf16ps lane reads and 16 rows' words of one pair are
//         one row of an AMX B tile (16 pairs of a panel's 16 rows: one tile, stride panel words):
//         packed[((p * kpairs + k / 2) * panel + r) * 2 + k % 2] = bf16(param[...]), with
//         kpairs = padded_cols() / 2 and every column from cols to padded_cols() zero.
// This struct owns the layout: offset() is the one definition of it, which the emitters' kernels
// (with their own integer expressions as T) and pack() below both use.
struct PackedWeight {
  std::string buffer, param;
  int64_t row_offset = 0, rows = 0, cols = 0, panel = 0;
  PackedElement element = PackedElement::F32;
  int64_t bf16_col_align = kBf16ColumnAlign;  // BF16: padded_cols() is a multiple of it (even)
  int64_t panels() const { return (rows + panel - 1) / panel; }
  // The columns the layout holds: cols, rounded up to bf16_col_align for BF16.
  int64_t padded_cols() const {
    return element == PackedElement::BF16 ? (cols + bf16_col_align - 1) / bf16_col_align * bf16_col_align
                                          : cols;
  }
  // The column pairs holding values (BF16): the last pair a kernel's k loop must reach.
  int64_t value_pairs() const { return (cols + 1) / 2; }
  // Elements (floats or bf16 values) of the packed buffer.
  int64_t size() const { return panels() * panel * padded_cols(); }
  // Its storage in 32-bit words (one float, or one pair of bf16).
  int64_t words() const { return element == PackedElement::BF16 ? size() / 2 : size(); }
  // Where row r of panel p, column k lives (in elements).
  template <typename T>
  T offset(const T &p, const T &k, const T &r) const {
    if (element == PackedElement::BF16) {
      const T kpairs = T(int(padded_cols() / 2)), two = T(2);  // int: an Expr of int32 in the kernels
      return ((p * kpairs + k / two) * T(int(panel)) + r) * two + k % two;
    }
    return (p * T(int(cols)) + k) * T(int(panel)) + r;
  }
};

// `x` rounded to the nearest bfloat16, ties to even (a NaN stays a NaN), as its 16 bits.
uint16_t round_to_bf16(float x);
// The ABI's name of a GemmKernel ("fma", "vdpbf16ps", "amx"), and the kernel a name says (nullopt
// for another).
const char *to_string(GemmKernel kernel);
std::optional<GemmKernel> gemm_kernel_named(const std::string &name);
// The float32 value of a bfloat16's bits.
float bf16_to_float(uint16_t bits);

// Fills `out` (w.words() 32-bit words: floats, or pairs of bf16) from `param`, the row-major
// [*, w.cols] weight named w.param.
void pack(const PackedWeight &w, const float *param, void *out);
// The same for a weight that is the transpose of a block of rows of `param` ([*, param_cols],
// row-major): w.param's [k, r] is param's [row0 + r, k]. Equal to pack() of that transpose, without
// writing it out.
void pack_transposed(const PackedWeight &w, const float *param, int64_t param_cols, int64_t row0, void *out);

// How a model's CUDA kernels are launched (the CUDA emitter's CudaSource, backends/cuda/CudaEmitter.h,
// as far as the host needs it): a library written by `grove compile --target cuda` carries it in its
// ABI, and the runtime's device runner (backends/runtime/CudaRunner.h) launches from it alone. The
// kernels take the ABI's arguments in order, then the scratch (scratch_floats_per_node floats per
// node), the barrier's zeroed counter and, per level, the level (-1 for the hoisted phases).
struct CudaLaunch {
  bool persistent = true;  // one cooperative launch per call; else per level: hoisted, leaf, internal
  int blocks = 1, threads = 1;
  int64_t shared_bytes = 0;  // dynamic shared memory per block (the persistent form's weight panels)
  int64_t scratch_floats_per_node = 0;
  bool specialized = true;  // per level: leaves at level 0 only, internal phases from level 1 on
  bool graph = true;        // per level: a call shape's launches captured into a CUDA graph and replayed
  std::vector<std::string> kernels;                  // every kernel the module defines
  std::vector<std::string> hoisted, leaf, internal;  // per level: the phases' kernels in launch order
  // A library's embedded images ("sm_90" a cubin, "compute_90" PTX), with their sizes and FNV-1a
  // 64-bit checksums, which the runtime checks before loading one.
  struct Image {
    std::string arch;
    uint64_t size = 0, checksum = 0;
  };
  std::vector<Image> images;
};

// FNV-1a, 64 bits: the checksum of an embedded CUDA image.
uint64_t fnv1a64(const void *data, size_t size);

struct ModelAbi {
  struct Param {
    std::string name;
    std::vector<int64_t> shape;
  };
  // A node-indexed state: one row of `row_elements` floats per node.
  struct State {
    std::string name;
    int64_t row_elements = 0;
  };
  enum class ArgKind {
    Param,       // params[index], row-major
    Packed,      // packed[index], filled by pack()
    State,       // states[index]: rows × row_elements, rows = nodes (+ 1 zero row for DAGs)
    LevelBegin,  // the inspector's arrays (LinearizedBatch)
    ChildBegin,
    Children,
    Token,
    TeamBegin,  // with recursive unrolling only
    NumLevels,  // int32 scalar
    // Top-down (backward) programs only (plan/Differentiate.h; run by backends/cpu/TrainableModel):
    Saved,      // saved[index]: rows × row_elements, what the forward kept, read only
    Gradient,   // gradients[index], param-shaped, zeroed before the call and written by it
    Parent,     // per node, its parent (the zero node, = nodes, for a root)
    ChildSlot,  // per node, k with child(parent, k) = node (0 for a root)
    // DAGs and sequences: parent and child_slot per successor, node n's from parent_begin[n]
    // (nodes + 1 entries).
    ParentBegin,
  };
  struct Arg {
    ArgKind kind = ArgKind::Param;
    std::string name;  // as the generated code names it (messages, the C header)
    int index = -1;    // into params, packed or states for those kinds
  };

  int version = kModelAbiVersion;
  std::string model;                     // the model's name
  std::string structure;                 // "binary tree", "tree", "dag", "sequence", ... (ilir::to_string)
  std::string function;                  // the entry function's name
  std::string target;                    // the Halide target it was compiled for
  std::string schedule;                  // KEY=VALUE pairs (scheduling::Schedule::to_string)
  std::map<std::string, int64_t> sizes;  // the size variables, bound

  // Input checks for the inspectors. Trees: an internal node has [min_children, max_children]
  // children. DAGs and sequences: predecessor_slots > 0, each node that many slots.
  int32_t min_children = 1, max_children = 2;
  int32_t predecessor_slots = 0;
  int64_t vocab_size = -1;  // tokens must be < vocab_size; -1: unchecked

  std::vector<Param> params;
  std::vector<PackedWeight> packed;
  std::vector<State> states;
  std::vector<State> saved;           // top-down programs: the forward's tensors they read
  std::vector<Param> gradients;       // top-down programs: what their reductions write
  std::vector<Arg> args;              // in call order
  int output = -1;                    // index into states
  std::vector<int64_t> output_shape;  // one node's output, e.g. [H]

  bool hoist = true;    // packed panels are filled once when weights are bound, not per call
  int unroll = 1;       // recursive unrolling: levels per block (TeamPartition.h)
  int unroll_team = 0;  // > 0: levels run unrolled, by a team of this many threads at a barrier
  int threads = 0;      // > 0: the thread pool is set to this many threads
  // Target "cuda": the kernels' launches (in the JSON as "cuda"; absent for the CPU).
  std::optional<CudaLaunch> cuda;

  bool runs_dags() const { return predecessor_slots > 0; }
  // Whether the GEMMs read bf16 panels (precision=bf16 with its kernels; the panels share one element).
  bool bf16_panels() const;
  // Which kernels the GEMMs run (in the JSON as "gemm_kernel"; absent in libraries written before
  // AMX kernels existed: vdpbf16ps over bf16 panels, else fma).
  GemmKernel gemm_kernel = GemmKernel::Fma;
  int64_t output_elements() const;
};

// JSON, as embedded in a compiled library.
std::string to_json(const ModelAbi &abi);
// Throws UserError naming `where` if `json` is not a model ABI of this version.
ModelAbi model_abi_from_json(const std::string &json, const std::string &where);

}  // namespace grove
